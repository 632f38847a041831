"""The bitwise engine: packed +/-1 words, XOR/AND/popcount kernels, BitwiseDevice."""
from sim.bitwise.device import BitwiseDevice
from sim.bitwise.network import ClauseLayer, NetworkOutput, ScoresLayer, SignLayer
from sim.bitwise.packing import (
                                 pack_bits,
                                 pack_signs,
                                 transpose_packed,
                                 unpack_bits,
                                 unpack_signs,
                                 word_dtype,
)

__all__ = ["BitwiseDevice", "SignLayer", "ScoresLayer", "ClauseLayer", "NetworkOutput",
           "pack_signs", "unpack_signs", "pack_bits", "unpack_bits", "transpose_packed",
           "word_dtype"]
