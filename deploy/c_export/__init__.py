"""C99 export of packed-binary feed-forward networks, with golden vectors and a test harness.

``write_c_project(layers, golden_inputs, golden_outputs, out_dir, word_bits)`` writes a
self-contained directory:

- ``model_weights.h``: every layer's packed weights (``ne_word_t``, the target's word width,
  LSB-first as :mod:`sim.bitwise.packing`) and int32 thresholds / biases, ``static const``
  (Flash on a microcontroller);
- ``model.h`` / ``model.c``: ``model_predict(x, scores) -> label`` (scores layer last) or
  ``model_forward(x, y)`` (packed bits out), chaining the kernels over static buffers;
- ``ne_kernels.[ch]``: the generic kernels (XOR-popcount dot product, sign layer, scores
  layer, argmax): C99 + ``<stdint.h>``, no malloc, no float;
- ``golden.h`` + ``main.c``: golden inputs and the outputs neuroedge's BitwiseDevice gave;
  the harness prints every output and exits 0 only if all match;
- ``Makefile``: ``make host`` (system compiler) and ``make cortex-m`` (``arm-none-eabi-gcc``,
  bare metal, run on QEMU's ``mps2-an385`` Cortex-M3 board, or ``MCPU=cortex-m4
  MACHINE=mps2-an386``, printing over Arm semihosting).

Layer ``i`` named ``name`` owns the arrays ``NE_L{i}_<name>_W`` (``_THR``, ...), the name
passed through :func:`c_identifier`, the one sanitiser of generated names; in comments a
name goes through :func:`c_comment_text`, so any name gives C that compiles.

The layer kinds are those of :mod:`sim.bitwise.network` (sign layers, a scores layer, and
the Tsetlin machine's clause layer: include masks in words, AND + compare, votes); each
has one emitter in ``EMITTERS`` that declares its arrays and writes its call. A new kind
adds a layer class there, a kernel in ``templates/ne_kernels.c`` and an emitter here;
arrays, golden vectors, Makefile and harness stay as they are.
"""
from __future__ import annotations

import os
import re
import shutil
import subprocess
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from deploy.errors import ExportError
from deploy.outputs import atomic_output
from hw_profiles.errors import NeuroedgeError
from sim.bitwise.network import (
    FINAL_KINDS,
    ClauseLayer,
    NetworkOutput,
    ScoresLayer,
    SignLayer,
    check_network,
)
from sim.bitwise.packing import n_words

TEMPLATES = Path(__file__).parent / "templates"
STATIC_FILES = ("ne_kernels.h", "ne_kernels.c", "ne_platform.h", "ne_platform_host.c",
                "ne_platform_cm.c", "cm.ld", "main.c", "Makefile")
CORTEX_M_BOARDS = {"cortex-m3": "mps2-an385", "cortex-m4": "mps2-an386"}
"""-mcpu -> the QEMU board that emulates it"""


# -- names in generated C --------------------------------------------------------------
C_IDENTIFIER_MAX = 63
"""C99 5.2.4.1: 63 significant initial characters in an internal identifier (every array
here is ``static``); longer names could clash on a conforming compiler."""
_C_SUFFIX_MAX = len("_WEIGHT")          # the longest array suffix an emitter appends
_COMMENT_SAFE = re.compile(r"[A-Za-z0-9_.-]")


def c_identifier(text: str, max_len: int = C_IDENTIFIER_MAX) -> str:
    """The one sanitiser of generated C names: ``text`` as a valid C identifier.

    Every character outside ``[A-Za-z0-9_]`` becomes ``_``, runs of ``_`` shrink to one and
    none is left at the end (a suffix ``_W`` then joins cleanly), a text that does not start
    with a letter gets the prefix ``ne_`` (a leading digit is invalid; a leading ``_`` with a
    capital or a second ``_`` is reserved, C99 7.1.3), and the result is cut to ``max_len``
    characters.
    """
    ident = re.sub(r"_+", "_", re.sub(r"[^A-Za-z0-9_]", "_", text)).strip("_")
    if not ident[:1].isalpha():
        ident = "ne_" + ident
    return ident[:max_len].rstrip("_")


def c_identifiers(texts: Sequence[str], max_len: int = C_IDENTIFIER_MAX) -> list[str]:
    """:func:`c_identifier` of each text; two texts giving one identifier are an error."""
    seen: dict[str, str] = {}
    out = []
    for text in texts:
        ident = c_identifier(text, max_len)
        if ident in seen:
            raise ExportError(f"C export: names {seen[ident]!r} and {text!r} both map to C "
                              f"identifier {ident!r}; rename one")
        seen[ident] = text
        out.append(ident)
    return out


def c_comment_text(text: str) -> str:
    """``text`` safe inside a ``/* */`` comment: characters outside ``[A-Za-z0-9_.-]`` as
    ``\\xHH`` / ``\\uHHHH`` escapes, so no ``*/`` ends the comment, no ``/*`` nests one
    (``-Wcomment`` under ``-Werror``), no ``??/`` trigraph or newline splices a line."""
    out = []
    for ch in text:
        if _COMMENT_SAFE.fullmatch(ch):
            out.append(ch)
        elif ord(ch) < 0x100:
            out.append(f"\\x{ord(ch):02x}")
        elif ord(ch) < 0x10000:
            out.append(f"\\u{ord(ch):04x}")
        else:
            out.append(f"\\U{ord(ch):08x}")
    return "".join(out)


def _layer_prefixes(layers: Sequence) -> list[str]:
    # The index keeps layers apart (default names repeat: every SignLayer is "sign"), the
    # name makes the C readable; the ledger scope of the same layer is L{i}_{name}.
    return c_identifiers([f"NE_L{i}_{layer.name}" for i, layer in enumerate(layers)],
                         C_IDENTIFIER_MAX - _C_SUFFIX_MAX)


# -- emitting C arrays -----------------------------------------------------------------
def _c_words(words: np.ndarray, word_bits: int) -> str:
    digits = word_bits // 4
    suffix = "UINT64_C" if word_bits == 64 else "UINT32_C"
    items = [f"{suffix}(0x{int(v):0{digits}x})" for v in np.asarray(words).reshape(-1)]
    return _wrap(items)


def _c_int32(values) -> str:
    # INT32_MIN has no literal in C: -2147483648 is the negation of an out-of-range int
    items = ["(-INT32_C(2147483647) - 1)" if int(v) == -2**31 else f"INT32_C({int(v)})"
             for v in np.asarray(values).reshape(-1)]
    return _wrap(items)


def _wrap(items: list[str], per_line: int = 6) -> str:
    lines = [", ".join(items[i:i + per_line]) for i in range(0, len(items), per_line)]
    return "{\n    " + ",\n    ".join(lines) + "\n}"


def _array(ctype: str, name: str, body: str, n: int) -> str:
    return f"static const {ctype} {name}[{n}] = {body};\n"


# -- one emitter per layer kind -----------------------------------------------------------
@dataclass
class Emitted:
    """What a layer contributes: constant arrays (model_weights.h) and its call (model.c)."""

    arrays: str
    call: str


def _emit_sign(i: int, p: str, layer: SignLayer, src: str, dst: str, word_bits: int) -> Emitted:
    arrays = (f"/* layer {i} '{c_comment_text(layer.name)}': SignLayer, k = {layer.k} -> "
              f"m = {layer.n_out} */\n"
              + _array("ne_word_t", f"{p}_W", _c_words(layer.weights, word_bits),
                       layer.weights.size)
              + _array("int32_t", f"{p}_THR", _c_int32(layer.thresholds), layer.n_out))
    call = (f"    ne_sign_layer({src}, {p}_W, {p}_THR, {layer.k}, {layer.n_out}, {dst});\n")
    return Emitted(arrays, call)


def _emit_scores(i: int, p: str, layer: ScoresLayer, src: str, dst: str, word_bits: int) -> Emitted:
    arrays = (f"/* layer {i} '{c_comment_text(layer.name)}': ScoresLayer, k = {layer.k} -> "
              f"{layer.n_out} scores */\n"
              + _array("ne_word_t", f"{p}_W", _c_words(layer.weights, word_bits),
                       layer.weights.size)
              + _array("int32_t", f"{p}_BIAS", _c_int32(layer.bias), layer.n_out))
    call = (f"    ne_scores_layer({src}, {p}_W, {p}_BIAS, {layer.k}, {layer.n_out}, {dst});\n")
    return Emitted(arrays, call)


def _emit_clauses(i: int, p: str, layer: ClauseLayer, src: str, dst: str,
                  word_bits: int) -> Emitted:
    n_c = layer.pos.shape[0]
    arrays = (f"/* layer {i} '{c_comment_text(layer.name)}': ClauseLayer, {n_c} clauses over "
              f"k = {layer.k} bits -> {layer.n_classes} class votes */\n"
              + _array("ne_word_t", f"{p}_POS", _c_words(layer.pos, word_bits), layer.pos.size)
              + _array("ne_word_t", f"{p}_NEG", _c_words(layer.neg, word_bits), layer.neg.size)
              + _array("int32_t", f"{p}_CLASS", _c_int32(layer.clause_class), n_c)
              + _array("int32_t", f"{p}_WEIGHT", _c_int32(layer.weights), n_c))
    call = (f"    ne_clause_layer({src}, {p}_POS, {p}_NEG, {p}_CLASS, {p}_WEIGHT, {layer.k}, "
            f"{n_c}, {layer.n_classes}, {dst});\n")
    return Emitted(arrays, call)


EMITTERS: dict[type, Callable[..., Emitted]] = {SignLayer: _emit_sign, ScoresLayer: _emit_scores,
                                                ClauseLayer: _emit_clauses}
"""layer class -> emitter(index, identifier prefix, layer, src buffer, dst buffer, word_bits)
-> Emitted; the prefix comes from :func:`_layer_prefixes`, names in comments go through
:func:`c_comment_text`"""


# -- the project ------------------------------------------------------------------------
def _check_golden(layers, golden_inputs, golden_outputs: NetworkOutput, word_bits: int):
    x = np.asarray(golden_inputs)
    w_in = n_words(layers[0].k, word_bits)
    if x.dtype.kind != "u" or x.dtype.itemsize * 8 != word_bits or x.ndim != 2 \
            or x.shape[1] != w_in or x.shape[0] < 1:
        raise ExportError(f"write_c_project: golden_inputs must be packed uint{word_bits} "
                          f"[N >= 1, {w_in}] (k = {layers[0].k} bits), got {x.dtype} {x.shape}")
    if not isinstance(golden_outputs, NetworkOutput):
        raise ExportError(f"write_c_project: golden_outputs must be the NetworkOutput of "
                          f"BitwiseDevice.run, got {type(golden_outputs).__name__}")
    last = layers[-1]
    n = x.shape[0]
    if isinstance(last, FINAL_KINDS):
        s, lab = golden_outputs.scores, golden_outputs.labels
        if s is None or np.shape(s) != (n, last.n_out) or np.shape(lab) != (n,):
            raise ExportError(f"write_c_project: golden_outputs need scores [{n}, "
                              f"{last.n_out}] and labels [{n}] for a {type(last).__name__} network")
    else:
        y = golden_outputs.bits
        if y is None or np.shape(y) != (n, n_words(last.n_out, word_bits)):
            raise ExportError(f"write_c_project: golden_outputs need packed bits [{n}, "
                              f"{n_words(last.n_out, word_bits)}] for a SignLayer-last network")
    return x


def write_c_project(layers: Sequence, golden_inputs, golden_outputs: NetworkOutput,
                    out_dir: str | os.PathLike, word_bits: int, force: bool = False) -> Path:
    """Write the C99 project for ``layers`` into ``out_dir`` (built beside it, then renamed).

    ``out_dir`` must be new or empty; with ``force`` it may also be an earlier export of
    neuroedge's, untouched but for ``make`` products (the rules of :mod:`deploy.outputs`).

    Parameters
    ----------
    layers : SignLayer ... [ScoresLayer | ClauseLayer] of :mod:`sim.bitwise.network`, packed in
        ``word_bits`` words
    golden_inputs : packed inputs [N, W0]
    golden_outputs : NetworkOutput that BitwiseDevice.run gave on ``golden_inputs``
    word_bits : 32 (Cortex-M) or 64

    Returns the path of the directory.
    """
    try:
        layers = check_network(layers, word_bits)
    except NeuroedgeError as exc:
        raise ExportError(f"write_c_project: {exc}") from None
    for i, layer in enumerate(layers):
        if type(layer) not in EMITTERS:
            raise ExportError(f"write_c_project: layer {i} kind {type(layer).__name__} has no "
                              f"C emitter (known: {', '.join(c.__name__ for c in EMITTERS)})")
    x = _check_golden(layers, golden_inputs, golden_outputs, word_bits)
    has_scores = isinstance(layers[-1], FINAL_KINDS)
    w_in = x.shape[1]

    # buffers: layer i reads buf(i) and writes buf(i + 1); the input is the caller's x
    bufs, decls = ["x"], []
    for i, layer in enumerate(layers):
        if i == len(layers) - 1:
            bufs.append("scores" if has_scores else "y")
        else:
            decls.append(f"static ne_word_t ne_act{i}[NE_WORDS({layer.n_out})];\n")
            bufs.append(f"ne_act{i}")
    prefixes = _layer_prefixes(layers)
    emitted = [EMITTERS[type(layer)](i, prefixes[i], layer, bufs[i], bufs[i + 1], word_bits)
               for i, layer in enumerate(layers)]
    n_out = layers[-1].n_out
    sizes = " -> ".join([str(layers[0].k)] + [str(layer.n_out) for layer in layers])

    config_h = (f"/* written by neuroedge deploy.c_export */\n#ifndef NE_CONFIG_H\n"
                f"#define NE_CONFIG_H\n#define NE_WORD_BITS {word_bits}\n#endif\n")
    proto = ("int32_t model_predict(const ne_word_t *x, int32_t *scores);"
             if has_scores else "void model_forward(const ne_word_t *x, ne_word_t *y);")
    out_doc = ("scores: NE_MODEL_N_OUT int32, returns the argmax" if has_scores
               else "y: NE_WORDS(NE_MODEL_N_OUT) packed output words")
    model_h = (f"/* neuroedge packed-binary network {sizes}, {word_bits}-bit words */\n"
               "#ifndef NE_MODEL_H\n#define NE_MODEL_H\n\n#include \"ne_kernels.h\"\n\n"
               f"#define NE_MODEL_IN_BITS {layers[0].k}\n#define NE_MODEL_IN_WORDS {w_in}\n"
               f"#define NE_MODEL_N_OUT {n_out}\n#define NE_MODEL_HAS_SCORES {int(has_scores)}\n"
               f"#define NE_MODEL_N_LAYERS {len(layers)}\n\n"
               f"/* x: NE_MODEL_IN_WORDS packed input words; "
               f"{out_doc} */\n"
               f"{proto}\n\n#endif\n")
    weights_h = ("/* packed weights and integer thresholds/biases: static const "
                 "(Flash on an MCU) */\n"
                 "#ifndef NE_MODEL_WEIGHTS_H\n#define NE_MODEL_WEIGHTS_H\n\n"
                 "#include \"ne_kernels.h\"\n\n" + "\n".join(e.arrays for e in emitted)
                 + "\n#endif\n")
    body = "".join(e.call for e in emitted)
    if has_scores:
        fn = (f"int32_t model_predict(const ne_word_t *x, int32_t *scores)\n{{\n{body}"
              f"    return ne_argmax(scores, {n_out});\n}}\n")
    else:
        fn = f"void model_forward(const ne_word_t *x, ne_word_t *y)\n{{\n{body}}}\n"
    model_c = ("/* written by neuroedge deploy.c_export: static buffers, no malloc, no float */\n"
               "#include \"model.h\"\n#include \"model_weights.h\"\n\n" + "".join(decls)
               + "\n" + fn)
    n = x.shape[0]
    golden = (f"/* golden vectors: inputs and the outputs of neuroedge's BitwiseDevice */\n"
              f"#ifndef NE_GOLDEN_H\n#define NE_GOLDEN_H\n\n#include \"model.h\"\n\n"
              f"#define NE_GOLDEN_N {n}\n"
              + _array("ne_word_t", "NE_GOLDEN_X", _c_words(x, word_bits), x.size))
    if has_scores:
        golden += (_array("int32_t", "NE_GOLDEN_SCORES", _c_int32(golden_outputs.scores),
                          n * n_out)
                   + _array("int32_t", "NE_GOLDEN_LABELS", _c_int32(golden_outputs.labels), n))
    else:
        y = np.asarray(golden_outputs.bits)
        golden += _array("ne_word_t", "NE_GOLDEN_Y", _c_words(y, word_bits), y.size)
    golden += "\n#endif\n"

    generated = {"ne_config.h": config_h, "model.h": model_h, "model_weights.h": weights_h,
                 "model.c": model_c, "golden.h": golden}
    # test_host / test_*.elf: what the project's own Makefile builds (its `make clean`
    # list), so a forced re-export may replace a directory after `make host` ran there
    with atomic_output(out_dir, directory=True, force=force,
                       disposable=("test_host", "test_*.elf")) as tmp:
        for name in STATIC_FILES:
            shutil.copyfile(TEMPLATES / name, tmp / name)
        for name, text in generated.items():
            (tmp / name).write_text(text)
    return Path(out_dir)


def export_c(layers: Sequence, inputs, out_dir: str | os.PathLike,
             profile="cortex-m4", force: bool = False) -> Path:
    """Run ``layers`` on ``inputs`` on a BitwiseDevice of ``profile`` and write the C project
    with those outputs as golden vectors (word width = the profile's)."""
    from sim.bitwise import BitwiseDevice
    dev = BitwiseDevice(profile)
    out = dev.run(layers, inputs, scope="golden")
    return write_c_project(layers, inputs, out, out_dir, dev.word_bits, force=force)


# -- building and running ------------------------------------------------------------------
@dataclass(frozen=True)
class CRun:
    """Outputs the compiled harness printed, parsed: labels + scores, or output bits."""

    target: str
    labels: np.ndarray | None
    scores: np.ndarray | None
    bits: np.ndarray | None
    all_match: bool
    stdout: str


def missing_tools(target: str) -> str | None:
    """Why ``target`` ('host' or a -mcpu such as 'cortex-m3') cannot be built here, or None."""
    tools = ["make", os.environ.get("CC", "cc")] if target == "host" else \
        ["make", "arm-none-eabi-gcc", "qemu-system-arm"]
    absent = [t for t in tools if shutil.which(t) is None]
    return f"not installed: {', '.join(absent)}" if absent else None


_LINE = re.compile(r"^y (\d+) (?:label (-?\d+) scores((?: -?\d+)+)|bits ([01]+)) (ok|MISMATCH)$")


def run_c_project(out_dir: str | os.PathLike, target: str = "host",
                  timeout_s: float = 120.0) -> CRun:
    """Build and run the golden test of an exported project: ``target`` is ``"host"`` or a
    Cortex-M ``-mcpu`` in ``CORTEX_M_BOARDS`` (run on its QEMU board). Raises ExportError
    with the build/run output when it fails to build or run."""
    out_dir = Path(out_dir)
    reason = missing_tools(target)
    if reason:
        raise ExportError(f"cannot build the C export for {target!r}: {reason}")
    if target == "host":
        cmd = ["make", "-s", "host"]
    elif target in CORTEX_M_BOARDS:
        cmd = ["make", "-s", "cortex-m", f"MCPU={target}", f"MACHINE={CORTEX_M_BOARDS[target]}"]
    else:
        raise ExportError(f"unknown C target {target!r}: 'host' or one of "
                          f"{', '.join(CORTEX_M_BOARDS)}")
    try:
        proc = subprocess.run(cmd, check=False, cwd=out_dir, capture_output=True, text=True,
                              timeout=timeout_s)
    except subprocess.TimeoutExpired:
        raise ExportError(f"{out_dir}: '{' '.join(cmd)}' did not finish in {timeout_s} s") from None
    text = proc.stdout + proc.stderr  # QEMU prints semihosting SYS_WRITE0 on stderr
    rows = [m for m in map(_LINE.match, text.splitlines()) if m]
    summary = re.search(r"neuroedge-c: (\d+)/(\d+) golden outputs match", text)
    if summary is None or not rows:
        raise ExportError(f"{out_dir}: '{' '.join(cmd)}' exited {proc.returncode} without the "
                          f"harness summary\n--- output\n{text[-3000:]}")
    if rows[0].group(2) is not None:
        labels = np.array([int(m.group(2)) for m in rows], dtype=np.int64)
        scores = np.array([[int(v) for v in m.group(3).split()] for m in rows], dtype=np.int32)
        bits = None
    else:
        labels = scores = None
        bits = np.array([[int(c) for c in m.group(4)] for m in rows], dtype=np.uint8)
    ok = summary.group(1) == summary.group(2) and proc.returncode == 0
    return CRun(target, labels, scores, bits, ok, text)


def check_c_project(out_dir: str | os.PathLike, expected: NetworkOutput, n_bits: int = 0,
                    target: str = "host") -> CRun:
    """Run the project on ``target`` and require its outputs to equal ``expected`` exactly."""
    from sim.bitwise.packing import unpack_bits
    run = run_c_project(out_dir, target)
    if expected.scores is not None:
        same = (run.scores is not None and np.array_equal(run.scores, expected.scores)
                and np.array_equal(run.labels, expected.labels))
    else:
        same = run.bits is not None and np.array_equal(
            run.bits, unpack_bits(expected.bits, expected.n_bits))
    if not (same and run.all_match):
        raise ExportError(f"C export in {out_dir} ({target}) disagrees with BitwiseDevice; "
                          f"harness output:\n{run.stdout[-3000:]}")
    return run
