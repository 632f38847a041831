"""C99 export of a user's torch model at int8 (``neuroedge export FILE.py:factory --target
c-int8``): TFLite Micro / CMSIS-NN arithmetic, a static arena, golden vectors, sizes.

:func:`export_int8` quantises the model (:mod:`deploy.c_int8.quantize`), runs the int8
reference of :mod:`sim.bitwise.int8` on a :class:`~sim.bitwise.BitwiseDevice` of the
profile (which counts and prices it), checks the flash and SRAM the export needs against
the profile (:func:`sim.execution.mcu.place_inference`, the check ``estimate`` uses), and
writes, all or nothing (:func:`deploy.outputs.atomic_output`), a directory holding:

- ``model_weights.h``: every layer's int8 weights, int32 biases, multipliers and shifts and
  its parameter struct, ``static const`` (flash);
- ``model.h`` / ``model.c``: ``model_input()``, ``model_invoke()``, ``model_output()`` over
  one ``static int8_t`` arena planned from the tensors' lifetimes by TFLM's greedy planner
  (:mod:`sim.arena`); no malloc, no float;
- ``ne_int8.[ch]``: the kernels (conv / depthwise conv, fully connected, max / avg pool,
  add, mul, concatenation, PReLU, clamp, lookup table), only those the model uses compiled in
  (``ne_config.h``);
- ``golden.h`` + ``main.c``: golden int8 inputs (test-split samples and random ones) and
  the reference's outputs; the harness exits 0 only if every output matches;
- ``Makefile``: ``host``, ``cortex-m`` (QEMU ``mps2-an385`` Cortex-M3 or ``mps2-an386``
  Cortex-M4), ``icount`` and ``icount-layers`` (instructions counted by QEMU, per
  inference and per layer) and ``size`` targets;
- ``report.json``: the sizes, accuracies and predicted cost :func:`export_int8` printed.

Sizes. Flash is the constant data (exact: arrays, each int8 array padded to 4 bytes, and
the parameter structs of a 32-bit target) plus the code (the kernels used, from
:data:`KERNEL_CODE_BYTES`, plus :data:`CALL_CODE_BYTES` per layer in ``model_invoke``);
SRAM is the arena plus the stack of the deepest call chain (:data:`KERNEL_STACK_BYTES`).
The code and stack constants are what ``arm-none-eabi-gcc`` 12.2 ``-O2 -mthumb
-mcpu=cortex-m4`` gives (``make size``); another -mcpu moves the code a few percent
(cortex-m3: 3 % less), another compiler or ``-O`` level more, which is why
:data:`FLASH_MARGIN` states how far the built objects may be from the prediction.
"""
from __future__ import annotations

import json
import re
import shutil
import subprocess
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

from deploy.c_export import TEMPLATES as BEP_TEMPLATES
from deploy.c_export import c_comment_text, c_identifiers
from deploy.errors import ExportError
from deploy.outputs import atomic_output
from sim.bitwise import int8 as q8

TEMPLATES = Path(__file__).parent / "templates"
OWN_FILES = ("ne_int8.h", "ne_int8.c", "main.c", "Makefile")
PLATFORM_FILES = ("ne_platform.h", "ne_platform_host.c", "ne_platform_cm.c", "cm.ld")
"""Shared with the packed-binary export (``deploy/c_export/templates``)."""
DISPOSABLE = ("test_host", "test_*.elf", "icount_*.elf", "*.o", "*.su")
"""What the project's Makefile builds (its ``make clean``): a forced re-export may replace a
directory where it ran."""

KERNELS = {q8.Conv2d: "CONV", q8.Linear: "FC", q8.MaxPool2d: "MAXPOOL",
           q8.AvgPool2d: "AVGPOOL", q8.Add: "ADD", q8.Mul: "MUL", q8.Concat: "CONCAT",
           q8.PReLU: "PRELU", q8.Clamp: "CLAMP", q8.Lut: "LUT"}
KERNEL_CODE_BYTES = {"REQUANTIZE": 212, "CONV": 876, "FC": 128, "MAXPOOL": 264,
                     "AVGPOOL": 260, "ADD": 112, "MUL": 136, "CONCAT": 76, "PRELU": 124,
                     "CLAMP": 60, "LUT": 48}
"""``.text`` bytes of each kernel in ``ne_int8.o``: ``arm-none-eabi-size`` of the object
built with only that kernel enabled, less the object with none (212 B: ne_requantize,
always there); arm-none-eabi-gcc 12.2.1 ``-O2 -mthumb -mcpu=cortex-m4`` (all ten: 2,296 B
with ne_requantize; cortex-m3 2,244 B, cortex-m7 2,328 B; the lookup table kernel 48 B, mul
136 B, concatenation 76 B on each, PReLU 124 B on cortex-m3/m4)."""
KERNEL_STACK_BYTES = {"REQUANTIZE": 8, "CONV": 192, "FC": 40, "MAXPOOL": 56, "AVGPOOL": 48,
                      "ADD": 32, "MUL": 48, "CONCAT": 32, "PRELU": 48, "CLAMP": 12,
                      "LUT": 8}
"""Frame of each kernel (``-fstack-usage``, same compiler and flags)."""
CALL_CODE_BYTES = 14
MODEL_CODE_BYTES = 32
"""``model.o``: bytes per layer call in ``model_invoke`` (two arena addresses and the
parameter struct into registers, BL: 12-16 B), and the fixed part (push, pop, literal pool
of ``model_invoke``; ``model_input`` and ``model_output``, 8 B each)."""
INVOKE_STACK_BYTES = 40
"""The largest frame ``model_invoke`` can have: it holds no locals, only the callee-saved
registers the compiler keeps arena addresses in across calls, at most r4-r11 and lr with r3
for 8-byte alignment (AAPCS): 10 x 4 B. Seen: 8-40 B (24 B with r3-r7 and lr; 32-40 B when
more addresses are reused, e.g. push {r3-r9, lr} in a gated MLP). The stack is this + the
deepest used kernel's frame + ne_requantize's, an upper bound."""
FLASH_MARGIN = 0.10
"""|predicted flash - built objects' text + data| <= this fraction of the built size."""
STRUCT_BYTES = {q8.Conv2d: 4 * 4 + 19 * 4, q8.Linear: 4 * 4 + 6 * 4, q8.MaxPool2d: 13 * 4,
                q8.AvgPool2d: 13 * 4, q8.Add: 12 * 4, q8.Mul: 11 * 4, q8.Concat: 5 * 4,
                q8.PReLU: 4 + 8 * 4, q8.Clamp: 3 * 4, q8.Lut: 2 * 4}
"""sizeof the parameter struct of each kernel on a 32-bit target (ne_int8.h: 4-byte
pointers and int32 fields); a concatenation has one per input."""
GOLDEN_RANDOM = 4
"""Random int8 golden inputs beside the test-split samples."""


# -- sizes ---------------------------------------------------------------------------------
@dataclass(frozen=True)
class Sizes:
    """What one exported model needs on the target, in bytes."""

    weights: int        # constant arrays + parameter structs (flash)
    code: int           # kernels + model_invoke (flash), estimated
    arena: int          # activations (SRAM), planned
    stack: int          # deepest call chain (SRAM), estimated

    @property
    def flash(self) -> int:
        return self.weights + self.code

    @property
    def sram(self) -> int:
        return self.arena + self.stack

    def to_dict(self) -> dict:
        return {**asdict(self), "flash": self.flash, "sram": self.sram}


def _pad4(n: int) -> int:
    return -(-n // 4) * 4


def predict_sizes(graph: q8.Int8Graph) -> Sizes:
    """Flash and SRAM of ``graph``'s export (see the module docstring)."""
    weights = 0
    kinds = {"REQUANTIZE"}
    calls = 0
    for node in graph.nodes:
        if isinstance(node, q8.Reshape):
            continue
        kinds.add(KERNELS[type(node)])
        parts = len(node.inputs) if isinstance(node, q8.Concat) else 1   # a call per input
        calls += parts
        weights += STRUCT_BYTES[type(node)] * parts
        if isinstance(node, (q8.Conv2d, q8.Linear)):
            weights += _pad4(node.weight.size) + 12 * node.weight.shape[0]
        elif isinstance(node, q8.Lut):
            weights += _pad4(node.table.size)
        elif isinstance(node, q8.PReLU):
            weights += _pad4(node.alpha.size)
    code = sum(KERNEL_CODE_BYTES[k] for k in kinds) + MODEL_CODE_BYTES + CALL_CODE_BYTES * calls
    arena, _ = graph.arena()
    stack = (INVOKE_STACK_BYTES + KERNEL_STACK_BYTES["REQUANTIZE"]
             + max(KERNEL_STACK_BYTES[k] for k in kinds - {"REQUANTIZE"}))
    return Sizes(weights, code, arena, stack)


# -- emitting C -------------------------------------------------------------------------------
def _wrap(items: list[str], per_line: int = 12) -> str:
    lines = [", ".join(items[i:i + per_line]) for i in range(0, len(items), per_line)]
    return "{\n    " + ",\n    ".join(lines) + "\n}"


def _int8s(values) -> str:
    return _wrap([str(int(v)) for v in np.asarray(values).reshape(-1)], 16)


def _int32s(values) -> str:
    return _wrap(["(-INT32_C(2147483647) - 1)" if int(v) == -2**31 else f"INT32_C({int(v)})"
                  for v in np.asarray(values).reshape(-1)], 6)


def _arrays(p: str, node) -> str:
    w = node.weight
    return (f"static const int8_t {p}_W[{w.size}] = {_int8s(w)};\n"
            f"static const int32_t {p}_BIAS[{w.shape[0]}] = {_int32s(node.bias)};\n"
            f"static const int32_t {p}_MULT[{w.shape[0]}] = {_int32s(node.multiplier)};\n"
            f"static const int32_t {p}_SHIFT[{w.shape[0]}] = {_int32s(node.shift)};\n")


def _emit(p: str, node, ts: list[q8.QTensor]) -> str:
    """The constant data of one node: its arrays and its parameter struct ``p``."""
    tin, tout = ts[node.inputs[0]], ts[node.output]
    if isinstance(node, q8.Conv2d):
        cout, _, kh, kw = node.weight.shape
        fields = [tin.shape[0], tin.shape[1], tin.shape[2], cout, tout.shape[1], tout.shape[2],
                  kh, kw, *node.stride, *node.padding, *node.dilation, node.groups,
                  -tin.zero_point, tout.zero_point, node.act_min, node.act_max]
        return (_arrays(p, node) + f"static const ne_conv_t {p} = {{{p}_W, {p}_BIAS, "
                f"{p}_MULT, {p}_SHIFT, {', '.join(map(str, fields))}}};\n")
    if isinstance(node, q8.Linear):
        o, k = node.weight.shape
        fields = [k, o, -tin.zero_point, tout.zero_point, node.act_min, node.act_max]
        return (_arrays(p, node) + f"static const ne_fc_t {p} = {{{p}_W, {p}_BIAS, "
                f"{p}_MULT, {p}_SHIFT, {', '.join(map(str, fields))}}};\n")
    if isinstance(node, (q8.MaxPool2d, q8.AvgPool2d)):
        fields = [tin.shape[0], tin.shape[1], tin.shape[2], tout.shape[1], tout.shape[2],
                  *node.kernel, *node.stride, *node.padding, node.act_min, node.act_max]
        return f"static const ne_pool_t {p} = {{{', '.join(map(str, fields))}}};\n"
    if isinstance(node, q8.Add):
        tb = ts[node.inputs[1]]
        fields = [tout.size, -tin.zero_point, -tb.zero_point, tout.zero_point,
                  node.multiplier1, node.shift1, node.multiplier2, node.shift2,
                  node.out_multiplier, node.out_shift, node.act_min, node.act_max]
        return (f"static const ne_add_t {p} = {{"
                f"{', '.join(_int32s([f]).strip('{} ').strip() for f in fields)}}};\n")
    if isinstance(node, q8.Mul):
        tb = ts[node.inputs[1]]
        per_channel = tb.size != tout.size   # (C, 1, ..., 1) against (C, ...)
        outer = tout.shape[0] if per_channel else 1
        fields = [outer, tout.size // outer, 1 if per_channel else 0, 0 if per_channel else 1,
                  -tin.zero_point, -tb.zero_point, tout.zero_point, node.multiplier,
                  node.shift, node.act_min, node.act_max]
        return f"static const ne_mul_t {p} = {{{', '.join(map(str, fields))}}};\n"
    if isinstance(node, q8.Concat):
        return "".join(
            f"static const ne_concat_t {p}_{k} = {{{ts[t].size}, {-ts[t].zero_point}, "
            f"{tout.zero_point}, {m}, {s}}};\n"
            for k, (t, m, s) in enumerate(zip(node.inputs, node.multipliers, node.shifts,
                                              strict=True)))
    if isinstance(node, q8.PReLU):
        c = node.alpha.size
        fields = [c, tout.size // c, -tin.zero_point, tout.zero_point, node.multiplier1,
                  node.shift1, node.multiplier2, node.shift2]
        return (f"static const int8_t {p}_ALPHA[{c}] = {_int8s(node.alpha)};\n"
                f"static const ne_prelu_t {p} = {{{p}_ALPHA, {', '.join(map(str, fields))}}};\n")
    if isinstance(node, q8.Clamp):
        return (f"static const ne_clamp_t {p} = {{{tout.size}, {node.act_min}, "
                f"{node.act_max}}};\n")
    if isinstance(node, q8.Lut):
        return (f"static const int8_t {p}_TABLE[256] = {_int8s(node.table)};\n"
                f"static const ne_lut_t {p} = {{{p}_TABLE, {tout.size}}};\n")
    raise ExportError(f"c-int8 export: no C emitter for {type(node).__name__}")


_CALLS = {q8.Conv2d: "ne_conv2d", q8.Linear: "ne_fully_connected", q8.MaxPool2d: "ne_max_pool",
          q8.AvgPool2d: "ne_avg_pool", q8.Add: "ne_add", q8.Mul: "ne_mul", q8.PReLU: "ne_prelu",
          q8.Clamp: "ne_clamp", q8.Lut: "ne_lut"}


def _describe(node, ts) -> str:
    tin, tout = ts[node.inputs[0]], ts[node.output]
    return (f"{type(node).__name__} {c_comment_text(node.name)}: "
            f"{'x'.join(map(str, tin.shape))} -> {'x'.join(map(str, tout.shape))}, "
            f"out scale {tout.scale:.6g} zero point {tout.zero_point}")


def c_sources(graph: q8.Int8Graph, golden_x: np.ndarray, golden_y: np.ndarray,
              sizes: Sizes) -> dict[str, str]:
    """The generated files of the project (the templates are copied apart)."""
    ts = graph.tensors
    arena, offsets = graph.arena()
    live = [n for n in graph.nodes if not isinstance(n, q8.Reshape)]
    prefixes = c_identifiers([f"NE_L{i}_{n.name}" for i, n in enumerate(live)], 56)
    used = {KERNELS[type(n)] for n in live}
    config = ("/* written by neuroedge deploy.c_int8: the kernels this model uses */\n"
              "#ifndef NE_CONFIG_H\n#define NE_CONFIG_H\n"
              + "".join(f"#define NE_USE_{k} {int(k in used)}\n"
                        for k in ("CONV", "FC", "MAXPOOL", "AVGPOOL", "ADD", "MUL", "CONCAT",
                                  "PRELU", "CLAMP", "LUT"))
              + "#endif\n")
    data, calls = [], []
    for p, node in zip(prefixes, live, strict=True):
        text = _emit(p, node, ts)
        data.append(f"/* {_describe(node, ts)} */\n{text}")
        if isinstance(node, q8.Concat):   # each input into its block of the output
            at = offsets[node.output]
            call = ""
            for k, t in enumerate(node.inputs):
                call += f"    ne_concat(&{p}_{k}, ne_arena + {offsets[t]}, ne_arena + {at});\n"
                at += ts[t].size
        else:
            args = ", ".join(f"ne_arena + {offsets[t]}" for t in node.inputs)
            call = f"    {_CALLS[type(node)]}(&{p}, {args}, ne_arena + {offsets[node.output]});\n"
        calls.append(f"{call}    NE_LAYER_DONE({len(calls)});\n")
    tin, tout = ts[graph.input], ts[graph.output]
    weights_h = ("/* int8 weights, int32 biases, multipliers and shifts, layer parameters: "
                 "static const (flash) */\n#ifndef NE_MODEL_WEIGHTS_H\n"
                 "#define NE_MODEL_WEIGHTS_H\n\n#include \"ne_int8.h\"\n\n"
                 + "\n".join(data) + "\n#endif\n")
    model_h = ("/* neuroedge int8 model: copy the int8 input into model_input(), call "
               "model_invoke(),\n * read the int8 output at model_output(). "
               "real = scale * (q - zero_point). */\n"
               "#ifndef NE_MODEL_H\n#define NE_MODEL_H\n\n#include <stdint.h>\n\n"
               f"#define NE_MODEL_IN_SIZE {tin.size}     /* {'x'.join(map(str, tin.shape))} "
               "(C, H, W), channel first */\n"
               f"#define NE_MODEL_OUT_SIZE {tout.size}\n"
               f"#define NE_MODEL_IN_ZERO_POINT {tin.zero_point}\n"
               f"#define NE_MODEL_OUT_ZERO_POINT {tout.zero_point}\n"
               f"/* input scale {tin.scale!r}, output scale {tout.scale!r} */\n"
               f"#define NE_MODEL_ARENA_BYTES {arena}\n"
               f"#define NE_MODEL_FLASH_BYTES_PREDICTED {sizes.flash}\n"
               f"#define NE_MODEL_SRAM_BYTES_PREDICTED {sizes.sram}\n\n"
               "int8_t *model_input(void);\nconst int8_t *model_output(void);\n"
               "void model_invoke(void);\n\n"
               f"#define NE_MODEL_N_LAYERS {len(live)}\n"
               "#ifdef NE_LAYER_TICKS   /* make icount-layers: the harness times each layer */\n"
               "void harness_layer_done(int32_t layer);\n"
               "#define NE_LAYER_DONE(i) harness_layer_done(i)\n#else\n"
               "#define NE_LAYER_DONE(i)\n#endif\n\n#endif\n")
    model_c = ("/* written by neuroedge deploy.c_int8: one static arena, no malloc, no float */\n"
               "#include \"model.h\"\n#include \"model_weights.h\"\n\n"
               f"static int8_t ne_arena[{max(arena, 1)}];\n\n"
               f"int8_t *model_input(void)\n{{\n    return ne_arena + "
               f"{offsets[graph.input]};\n}}\n\n"
               f"const int8_t *model_output(void)\n{{\n    return ne_arena + "
               f"{offsets[graph.output]};\n}}\n\n"
               "void model_invoke(void)\n{\n" + "".join(calls) + "}\n")
    n = golden_x.shape[0]
    golden = ("/* golden vectors: int8 inputs and the outputs of neuroedge's int8 reference "
              "(sim/bitwise/int8.py) */\n#ifndef NE_GOLDEN_H\n#define NE_GOLDEN_H\n\n"
              "#include \"model.h\"\n\n"
              f"#define NE_GOLDEN_N {n}\n"
              f"static const int8_t NE_GOLDEN_X[{golden_x.size}] = {_int8s(golden_x)};\n"
              f"static const int8_t NE_GOLDEN_Y[{golden_y.size}] = {_int8s(golden_y)};\n"
              "\n#endif\n")
    return {"ne_config.h": config, "model_weights.h": weights_h, "model.h": model_h,
            "model.c": model_c, "golden.h": golden}


def write_int8_project(graph: q8.Int8Graph, golden_x, golden_y, out_dir, *, report: dict,
                       force: bool = False) -> Path:
    """Write the C project of ``graph`` into ``out_dir`` (built beside it, then renamed;
    ``out_dir`` new, empty, or with ``force`` an earlier export of neuroedge's)."""
    golden_x = q8.check_input(graph, golden_x)
    golden_y = np.asarray(golden_y)
    want = (golden_x.shape[0], graph.tensors[graph.output].size)
    if golden_y.dtype != np.int8 or golden_y.reshape(golden_y.shape[0], -1).shape != want:
        raise ExportError(f"write_int8_project: golden outputs must be int8 {want}, got "
                          f"{golden_y.dtype} {golden_y.shape}")
    sizes = predict_sizes(graph)
    files = c_sources(graph, golden_x, golden_y, sizes)
    files["report.json"] = json.dumps(report, indent=2) + "\n"
    with atomic_output(out_dir, directory=True, force=force, disposable=DISPOSABLE) as tmp:
        for name in OWN_FILES:
            shutil.copyfile(TEMPLATES / name, tmp / name)
        for name in PLATFORM_FILES:
            shutil.copyfile(BEP_TEMPLATES / name, tmp / name)
        for name, text in files.items():
            (tmp / name).write_text(text)
    return Path(out_dir)


# -- building, measuring -------------------------------------------------------------------------
def _make(out_dir, args: list[str], timeout_s: float) -> str:
    try:
        proc = subprocess.run(["make", "-s", *args], cwd=out_dir, capture_output=True,
                              text=True, timeout=timeout_s, check=False)
    except subprocess.TimeoutExpired:
        raise ExportError(f"{out_dir}: make {' '.join(args)} did not finish in "
                          f"{timeout_s} s") from None
    text = proc.stdout + proc.stderr
    if proc.returncode != 0:
        raise ExportError(f"{out_dir}: make {' '.join(args)} exited {proc.returncode}\n"
                          f"{text[-3000:]}")
    return text


def _board_args(mcpu: str) -> list[str]:
    from deploy.c_export import CORTEX_M_BOARDS
    if mcpu not in CORTEX_M_BOARDS:
        raise ExportError(f"unknown Cortex-M {mcpu!r}: one of {', '.join(CORTEX_M_BOARDS)}")
    return [f"MCPU={mcpu}", f"MACHINE={CORTEX_M_BOARDS[mcpu]}"]


@dataclass(frozen=True)
class BuiltSize:
    """``arm-none-eabi-size`` of the model's objects (no harness) and their stack frames."""

    text: int
    data: int
    bss: int
    stack: int

    @property
    def flash(self) -> int:
        return self.text + self.data


def measure_size(out_dir, mcpu: str = "cortex-m4", timeout_s: float = 120.0) -> BuiltSize:
    """``make size``: text/data/bss of model.o + ne_int8.o, and the stack of the deepest
    chain model_invoke -> kernel -> ne_requantize from their ``.su`` files."""
    text = _make(out_dir, ["size", *_board_args(mcpu)], timeout_s)
    rows = re.findall(r"^\s*(\d+)\s+(\d+)\s+(\d+)\s+\d+\s+[0-9a-f]+\s+(\S+\.o)$", text, re.M)
    if len(rows) != 2:
        raise ExportError(f"{out_dir}: make size printed no size table\n{text[-2000:]}")
    frames = {m.group(1): int(m.group(2))
              for m in re.finditer(r":(\w+)\t(\d+)\t\w+", text)}
    kernels = [v for k, v in frames.items() if k.startswith("ne_") and k != "ne_requantize"]
    stack = (frames.get("model_invoke", 0) + max(kernels, default=0)
             + frames.get("ne_requantize", 0))
    return BuiltSize(sum(int(r[0]) for r in rows), sum(int(r[1]) for r in rows),
                     sum(int(r[2]) for r in rows), stack)


def measure_instructions(out_dir, mcpu: str = "cortex-m4", timeout_s: float = 300.0,
                         layers: bool = False) -> dict:
    """Executed instructions per inference on QEMU (``make icount``): QEMU's ``-icount
    shift=0`` advances virtual time by 1 ns per guest instruction, SysTick counts that
    time at the board's core clock, so instructions = (ticks - the counter's own ticks)
    x instructions per tick, the ratio measured on the harness's calibration loop of a
    known length (2 x 500,000 instructions). Resolution: one tick (40 instructions on the
    MPS2 boards' 25 MHz clock). Returns {"per_inference": [...], "instructions_per_tick",
    "calibration_ticks", "empty_ticks"}.

    ``layers``: ``make icount-layers`` instead, whose model calls the harness after each
    layer (a few instructions more per layer, so its totals are not those of the
    deployed code); adds "per_layer": the mean instructions of each layer (C order:
    every node but the reshapes)."""
    target = "icount-layers" if layers else "icount"
    text = _make(out_dir, [target, *_board_args(mcpu)], timeout_s)
    cal = re.search(r"calibration instructions (\d+) ticks (-?\d+) empty (-?\d+)", text)
    ticks = [int(t) for t in re.findall(r"^ticks \d+ (-?\d+)$", text, re.M)]
    if cal is None or not ticks or min(ticks) < 0 or int(cal.group(3)) < 0 \
            or int(cal.group(2)) <= int(cal.group(3)):
        raise ExportError(f"{out_dir}: make {target} gave no usable SysTick counts\n"
                          f"{text[-2000:]}")
    empty = int(cal.group(3))
    per_tick = int(cal.group(1)) / (int(cal.group(2)) - empty)
    out = {"per_inference": [(t - empty) * per_tick for t in ticks],
           "instructions_per_tick": per_tick, "calibration_ticks": int(cal.group(2)),
           "empty_ticks": empty}
    if layers:
        rows = [[int(v) for v in m.split()]
                for m in re.findall(r"^layer ticks ((?:-?\d+ ?)+)$", text, re.M)]
        if not rows or min(min(r) for r in rows) < 0:
            raise ExportError(f"{out_dir}: make {target} printed no layer ticks\n"
                              f"{text[-2000:]}")
        out["per_layer"] = (np.mean(rows, axis=0) * per_tick).tolist()
    return out


MODEL_CODE = re.compile(r"^([0-9a-f]+) ([0-9a-f]+) [Tt] (model_invoke|ne_\w+)$", re.M)
NOT_MODEL = ("ne_puts", "ne_exit")


def trace_instructions(out_dir, mcpu: str = "cortex-m4", timeout_s: float = 600.0) -> dict:
    """Executed instructions per inference counted a second way, instruction by instruction:
    QEMU ``-singlestep -d exec,nochain`` logs one line per executed instruction, and
    ``-dfilter`` keeps those inside the model's functions (``model_invoke`` and the
    ``ne_*`` kernels, from ``arm-none-eabi-nm`` of the ``make icount`` image); the lines
    over all golden inferences / their number. Slow (a log line per instruction): for
    checking :func:`measure_instructions` on small models."""
    _make(out_dir, [f"icount_{mcpu}.elf", *_board_args(mcpu)], timeout_s)
    elf = Path(out_dir) / f"icount_{mcpu}.elf"
    nm = subprocess.run(["arm-none-eabi-nm", "-S", str(elf)], capture_output=True, text=True,
                        check=True).stdout
    ranges = [f"0x{int(a, 16):x}+0x{int(n, 16):x}" for a, n, name in MODEL_CODE.findall(nm)
              if name not in NOT_MODEL]
    golden = re.search(r"#define NE_GOLDEN_N (\d+)", (Path(out_dir) / "golden.h").read_text())
    from deploy.c_export import CORTEX_M_BOARDS
    cmd = ["qemu-system-arm", "-M", CORTEX_M_BOARDS[mcpu], "-nographic", "-monitor", "none",
           "-semihosting-config", "enable=on,target=native", "-singlestep",
           "-d", "exec,nochain", "-dfilter", ",".join(ranges), "-D", "/dev/stdout",
           "-kernel", str(elf)]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    lines = sum(1 for line in proc.stdout if line.startswith(b"Trace "))
    if proc.wait(timeout=timeout_s) != 0 or not ranges or golden is None:
        raise ExportError(f"{out_dir}: the QEMU instruction trace failed")
    return {"per_inference": lines / int(golden.group(1)), "functions": len(ranges)}


def check_project(out_dir, expected: np.ndarray, target: str = "host"):
    """Build and run the golden test on ``target`` ('host' or a Cortex-M -mcpu) and require
    every printed output to equal ``expected`` (int8 [N, out])."""
    from deploy.c_export import run_c_project
    run = run_c_project(out_dir, target)
    exp = np.asarray(expected).reshape(expected.shape[0], -1).astype(np.int32)
    if not (run.all_match and run.scores is not None and np.array_equal(run.scores, exp)):
        raise ExportError(f"int8 C export in {out_dir} ({target}) disagrees with the numpy "
                          f"reference; harness output:\n{run.stdout[-3000:]}")
    return run


def tools_missing(target: str) -> str | None:
    from deploy.c_export import missing_tools
    return missing_tools(target)
