"""``export_int8``: a user's torch model -> quantised, checked against the profile, priced,
and written as an int8 C99 project (see :mod:`deploy.c_int8`).

Everything that can fail is checked before anything is written: the output path, the
profile, the calibration data, every layer (quantisation refuses what it does not
support), and the flash and SRAM the export needs (one line naming the bytes needed and
available); the project is then written all or nothing.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from deploy.c_int8 import GOLDEN_RANDOM, Sizes, predict_sizes, write_int8_project
from deploy.c_int8.quantize import load_calibration, quantize
from deploy.errors import ExportError
from deploy.outputs import check_output
from sim.bitwise import int8 as q8

GOLDEN_SAMPLES = 4
"""Test-split (or calibration) samples among the golden inputs."""
CONVENTIONS = ("int8 post-training quantisation, TFLite Micro / CMSIS-NN arithmetic: "
               "per-channel symmetric int8 weights, per-tensor asymmetric int8 activations "
               "from the calibration min/max, int32 biases and accumulators, Q31 multiplier + "
               "shift requantisation with rounding, saturation; ReLU/ReLU6 fused into the clamp")


@dataclass(frozen=True)
class Int8Export:
    """What :func:`export_int8` wrote and measured."""

    path: Path
    graph: q8.Int8Graph
    sizes: Sizes
    golden_x: np.ndarray
    golden_y: np.ndarray
    report: dict


def _accuracy(model, graph, x_test, y_test) -> dict:
    """fp32 (torch) and int8 (the reference) top-1 accuracy on the test split, and how often
    the two predict the same class."""
    import torch
    with torch.no_grad():
        fp32 = np.concatenate([model(torch.from_numpy(np.ascontiguousarray(x_test[i:i + 512])))
                               .reshape(min(512, len(x_test) - i), -1).numpy()
                               for i in range(0, len(x_test), 512)])
    int8 = q8.run_int8(graph, q8.quantize_input(graph, x_test))
    p32, p8 = fp32.argmax(axis=1), int8.reshape(len(x_test), -1).argmax(axis=1)
    return {"samples": len(y_test), "fp32": float((p32 == y_test).mean()),
            "int8": float((p8 == y_test).mean()), "agreement": float((p32 == p8).mean())}


def predicted_cost(graph: q8.Int8Graph, profile, sample: np.ndarray) -> dict:
    """The int8 reference on one sample, counted on a BitwiseDevice of ``profile`` and
    priced by its execution model: ops, energy, latency and cycles per inference."""
    from sim.bitwise import BitwiseDevice
    dev = BitwiseDevice(profile)
    q8.run_int8(graph, sample[:1], device=dev)
    rep = dev.report()
    clock = dev.profile.limit("clock_hz")
    layers = []
    for i, node in enumerate(graph.nodes):   # the C's layers: every node but reshapes
        if isinstance(node, q8.Reshape):
            continue
        scope = f"infer/L{i}_{type(node).__name__}"
        layers.append({"layer": node.name, "kind": type(node).__name__,
                       "macs": dev.ledger.ops(scope).get("mac_int8", 0),
                       "cycles": rep.latency_s.get(scope, 0.0) * clock})
    return {"profile": dev.profile.label, "energy_j": rep.total_j,
            "latency_s": rep.total_latency_s, "cycles": rep.total_latency_s * clock,
            "ops": dev.ledger.total_ops(), "stack": rep.stack, "layers": layers}


def export_int8(model, input_shape, calibration, out, *, profile="cortex-m4",
                force: bool = False, seed: int = 0, option: str | None = "--out") -> Int8Export:
    """Quantise ``model`` on ``calibration`` (a data set name or ``.npy`` path for
    :func:`~deploy.c_int8.quantize.load_calibration`, or a tuple ``(x_cal, x_test,
    y_test)`` of arrays), check it fits ``profile``, price it there, and write the C
    project at ``out``. Returns an :class:`Int8Export`.

    Raises
    ------
    ExportError, OutputError, HardwareLimitError, ProfileError
        One line each; nothing has been written.
    """
    from hw_profiles import load
    from sim.execution.mcu import place_inference
    check_output(out, force=force, directory=True, option=option)
    prof = load(profile)
    if prof.kind != "bitwise":
        raise ExportError(f"c-int8 export: profile {prof.label!r} is a {prof.kind!r} profile; "
                          "the int8 C export targets a microcontroller (a bitwise profile: "
                          "cortex-m4, cortex-m7)")
    shape = tuple(int(d) for d in input_shape)
    if isinstance(calibration, tuple):
        x_cal, x_test, y_test = calibration
    else:
        x_cal, x_test, y_test = load_calibration(str(calibration), shape)
    if tuple(x_cal.shape[1:]) != shape[1:]:
        raise ExportError(f"c-int8 export: calibration inputs are {x_cal.shape[1:]} per sample, "
                          f"the input shape is {shape[1:]}")
    model = model.cpu().eval()
    graph = quantize(model, np.asarray(x_cal, dtype=np.float32))
    sizes = predict_sizes(graph)
    # the project declares its weights and parameters static const: the linker puts them,
    # with the code, in flash only (not in SRAM the arena leaves over)
    place_inference(prof, sizes.sram, sizes.flash, who="export c-int8", weights_in_flash=True)
    source = x_test if x_test is not None else x_cal
    rng = np.random.default_rng(seed)
    golden_x = np.concatenate([
        q8.quantize_input(graph, source[:GOLDEN_SAMPLES]),
        rng.integers(q8.INT8_MIN, q8.INT8_MAX + 1, (GOLDEN_RANDOM, *shape[1:]), dtype=np.int8)])
    golden_y = q8.run_int8(graph, golden_x).reshape(golden_x.shape[0], -1)
    accuracy = (_accuracy(model, graph, np.asarray(x_test, np.float32), np.asarray(y_test))
                if y_test is not None else None)
    cost = predicted_cost(graph, prof, golden_x)
    tin, tout = graph.tensors[graph.input], graph.tensors[graph.output]
    report = {
        "input_shape": list(shape), "profile": prof.label, "conventions": CONVENTIONS,
        "input": {"scale": tin.scale, "zero_point": tin.zero_point},
        "output": {"scale": tout.scale, "zero_point": tout.zero_point, "size": tout.size},
        "layers": [f"{type(n).__name__} {n.name}" for n in graph.nodes
                   if not (isinstance(n, q8.Reshape) and n.view)],
        "sizes": sizes.to_dict(), "accuracy": accuracy, "predicted_per_inference": cost,
        "golden": {"samples": GOLDEN_SAMPLES, "random": GOLDEN_RANDOM, "seed": seed},
    }
    path = write_int8_project(graph, golden_x, golden_y, out, report=report, force=force)
    return Int8Export(path, graph, sizes, golden_x, golden_y, report)


def summary_lines(result: Int8Export) -> list[str]:
    """The export's report as text lines (the CLI prints them)."""
    r = result.report
    s = result.sizes
    c = r["predicted_per_inference"]
    lines = [f"layers: {', '.join(r['layers'])}",
             f"flash: {s.flash:,} B (weights and parameters {s.weights:,} B + code {s.code:,} B, "
             "estimated)",
             f"SRAM: {s.sram:,} B (arena {s.arena:,} B + stack {s.stack:,} B, estimated)",
             f"predicted per inference on {c['profile']}: {c['cycles']:,.0f} cycles, "
             f"{c['latency_s'] * 1e3:.3g} ms, {c['energy_j'] * 1e6:.3g} uJ "
             f"({c['stack']} cycle counts)"]
    a = r["accuracy"]
    if a is not None:
        lines.append(f"accuracy on {a['samples']} test samples: fp32 {a['fp32']:.2%}, int8 "
                     f"{a['int8']:.2%} (same class {a['agreement']:.2%})")
    return lines
