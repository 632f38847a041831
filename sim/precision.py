"""Deployed precision: a ledger counted in fp32 re-expressed at int8 (or fp16).

Torch on a CPU host runs a network in fp32; a network deployed quantised (TFLite Micro,
CMSIS-NN, X-CUBE-AI, TensorRT) runs the same graph at int8. The one re-typing used by
``neuroedge validate`` (measured int8 networks) and ``estimate(..., dtype="int8")``
(``neuroedge estimate --dtype int8``) is :func:`retyped_int8`, under these conventions
(those of TFLite's int8 scheme):

- weights int8, symmetric, one scale per output channel; activations int8, one scale and
  zero point per tensor; products accumulated in int32 (the int32 biases and the per-channel
  scales are a few bytes per channel and are left out of the byte counts);
- each fp32 MAC becomes an int8 MAC (``mac_int8``), each other fp32 flop (adds, activations,
  pooling, the requantisation of the accumulator) an integer op (``int_add``); so do the
  MACs and flops of every other float precision (fp16, bf16, fp64: a forward that runs part
  of itself under ``torch.autocast`` or casts), since the deployed int8 model runs those
  layers at int8 too; other counts are kept;
- every byte moved and every resident byte is divided by 4 (rounded up): 4-byte floats
  become 1-byte integers (a byte counted on a 2-byte float is divided by 4 as well: the
  ledger does not tell bytes apart by type).
"""
from __future__ import annotations

from sim.ledger import Ledger

INT8_CONVENTIONS = ("int8: per-channel symmetric int8 weights, per-tensor int8 activations, "
                    "int32 accumulators (TFLite's scheme); each fp32 MAC priced as an int8 "
                    "MAC, each other fp32 flop as an integer op, every byte moved / 4 (the "
                    "per-channel scales left out)")
_FLOATS = ("fp64", "fp32", "fp16", "bf16")
_INT8_OPS = {**{f"mac_{f}": "mac_int8" for f in _FLOATS},
             **{f"flop_{f}": "int_add" for f in _FLOATS}}
_FP16_OPS = {"mac_fp32": "mac_fp16", "flop_fp32": "flop_fp16"}
DTYPES = ("fp32", "int8")
"""The precisions a torch model can be priced at (``dtype=``, ``--dtype``)."""


def _retyped(ledger: Ledger, op_map: dict[str, str], bytes_divisor: int,
             footprints: bool = True) -> Ledger:
    """``ledger`` with each op renamed by ``op_map`` (counts of ops mapped to one name
    summed, others kept) and every byte moved or resident divided by ``bytes_divisor``
    (rounded up); per-step timing records dropped (spiking engines, which do not run fp32
    tensors); ``footprints=False`` drops the resident footprints instead."""
    def smaller(n) -> int:
        return -(-int(n) // bytes_divisor)

    data = ledger.to_dict()
    if not footprints:
        data.pop("footprint", None)
    for entry in data["scopes"]:
        ops: dict[str, int] = {}
        for op, n in entry["ops"].items():
            key = op_map.get(op, op)
            ops[key] = ops.get(key, 0) + int(n)
        entry["ops"] = ops
        entry["bytes"] = {k: smaller(n) for k, n in entry["bytes"].items()}
        entry.pop("timing", None)
    for fp in data.get("footprint", {}).values():
        for key in ("writable", "read_only", "streamed", "streamed_read"):
            if key in fp:
                fp[key] = smaller(fp[key])
    return Ledger.from_dict(data)


def retyped_int8(ledger: Ledger, footprints: bool = True) -> Ledger:
    """``ledger`` re-expressed at int8 under the module's conventions: float MAC (fp32,
    and fp16 / bf16 / fp64 alike) -> int8 MAC, float non-MAC op -> integer op, bytes and
    resident footprints / 4 (rounded up).
    Samples, uncounted ops, layer and model records are kept; per-step timing records
    (spiking engines, which do not run fp32 tensors) are dropped.

    ``footprints=False`` drops the resident footprints instead (a microcontroller then
    prices every byte at SRAM): ``neuroedge validate``'s published figures were measured
    that way, before estimate placed int8 weights in flash."""
    return _retyped(ledger, _INT8_OPS, 4, footprints)


def retyped_fp16(ledger: Ledger) -> Ledger:
    """``ledger`` re-expressed at fp16, for a device that runs the same graph in half
    precision (the Movidius NCSDK compiles every network to fp16): each fp32 MAC becomes an
    fp16 MAC, each other fp32 flop an fp16 flop, and every byte moved or resident is halved
    (rounded up). Other counts are kept; per-step timing records are dropped."""
    return _retyped(ledger, _FP16_OPS, 2)
