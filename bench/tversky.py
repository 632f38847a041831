"""Tversky projection layers against linear ones: XOR, a frozen-encoder head, a character GPT.

Three parts, each printed side by side with its linear anchor (paper: arXiv:2506.11035):

1. XOR with one layer: a Tversky projection (2 prototypes, K bank features, 10 seeds
   per K) against ``nn.Linear(2, 2)``: how many seeds fit all 4 points.
2. Fashion-MNIST, frozen encoder, head only (the paper's NABirds/ResNet-50 setting at
   small scale): Tversky head vs linear head on the same features, for a random fixed conv
   encoder (2 seeds) and an encoder trained once for one epoch (1 seed); 30k training
   images, 8 epochs (the full 60k did not fit the 15-minute budget beside part 3). Accuracy, head
   parameters, learned alpha/beta/theta, data-domain prototype pictures
   (``bench/tversky_prototypes.png``).
3. Character-level GPT on the license texts of ``/usr/share/common-licenses``: the same
   2-layer GPT with linear MLP stacks and tied linear head, against Tversky MLP
   projections and a Tversky head tied to the embeddings (one shared bank). Validation
   perplexity, exact parameter counts, inference MACs per character from the ledger.

The heads run through the runner (``runner.run("tversky", ...)``).

    OMP_NUM_THREADS=1 .venv/bin/python bench/tversky.py [--quick] [--parts xor,heads,gpt]
        [--gpt-variants none,all,head]

Last line: ``RESULT {json}``.
"""
from __future__ import annotations

import argparse
import json
import platform
import statistics
import sys
import time
from pathlib import Path

# run from a checkout without installing: this checkout, not an installed copy, is imported
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import torch  # noqa: E402

import sim  # noqa: E402
from models import runner  # noqa: E402
from models.tversky.experiment import fit_xor, linear_xor  # noqa: E402
from models.tversky.gpt import CharGPT, CharGPTConfig, encode, license_corpus, train_lm  # noqa: E402
from models.tversky.layer import TverskyProjection  # noqa: E402
from models.tversky.model import FASHION_CLASSES  # noqa: E402
from models.tversky.vision import plot_prototypes  # noqa: E402


def xor_part(seeds=10):
    print(f"== 1. XOR, one layer, full-batch Adam 1e-2, 1000 steps, {seeds} seeds ==")
    out = {}
    for k in (1, 2, 4, 8, 16):
        accs = [fit_xor(TverskyProjection(2, 2, k, seed=s))[0] for s in range(seeds)]
        solved = [s for s, a in enumerate(accs) if a == 1.0]
        out[f"tversky_K{k}_solved"] = len(solved)
        print(f"  Tversky K={k:2d}: {len(solved)}/{seeds} seeds fit 4/4 (seeds {solved})")
    lin = [linear_xor(s)[0] for s in range(seeds)]
    out["linear_best_accuracy"] = max(lin)
    print(f"  Linear(2,2): best accuracy over {seeds} seeds {max(lin):.2f} (never 4/4: XOR is "
          "not linearly separable)")
    return out


def head_part(train, test, epochs, seeds):
    print(f"== 2. Fashion-MNIST frozen encoder, heads only ({train} train / {test} test, "
          f"{epochs} epochs, Adam 3e-3, batch 256) ==")
    rows, out = [], {}
    for encoder, enc_seeds in (("random", seeds), ("trained", seeds[:1])):
        for seed in enc_seeds:
            t0 = time.perf_counter()
            run = runner.run("tversky", profile="a100", seed=seed, overrides={
                "encoder": encoder, "train": train, "test": test, "epochs": epochs,
                "visualise": encoder == "random" and seed == 0})
            m = run.metrics
            rows.append((encoder, seed, m["tversky_test_accuracy"], m["linear_test_accuracy"],
                         m["alpha"], m["beta"], m["theta"]))
            print(f"  {encoder:7s} seed {seed}: Tversky {m['tversky_test_accuracy']:.4f} "
                  f"({m['tversky_head_parameters']:.0f} params) | linear "
                  f"{m['linear_test_accuracy']:.4f} ({m['linear_head_parameters']:.0f} params) "
                  f"| alpha {rows[-1][4]:.3f} beta {rows[-1][5]:.3f} "
                  f"theta {rows[-1][6]:.3f} | {time.perf_counter() - t0:.0f} s", flush=True)
            if "tversky_prototypes" in run.traces:
                pictures = {k: run.traces[f"{k}_prototypes"].data for k in ("tversky", "linear")}
                fig = plot_prototypes(pictures, FASHION_CLASSES,
                                      "data-domain prototypes: change from their start "
                                      "(mean training image), random frozen encoder")
                path = Path(__file__).with_name("tversky_prototypes.png")
                fig.savefig(path, dpi=110)
                out["data_domain_accuracy"] = {k: m[f"{k}_data_domain_test_accuracy"]
                                               for k in ("tversky", "linear")}
                print("  data-domain prototypes: Tversky "
                      f"{m['tversky_data_domain_test_accuracy']:.4f}, linear "
                      f"{m['linear_data_domain_test_accuracy']:.4f}; picture: {path}")
        sel = [r for r in rows if r[0] == encoder]
        tv_m, li_m = statistics.mean(r[2] for r in sel), statistics.mean(r[3] for r in sel)
        out[encoder] = {"tversky_accuracy": tv_m, "linear_accuracy": li_m,
                        "relative_gain": (tv_m - li_m) / li_m, "seeds": len(sel),
                        "tversky_head_parameters": m["tversky_head_parameters"],
                        "linear_head_parameters": m["linear_head_parameters"]}
        print(f"  {encoder}: mean Tversky {tv_m:.4f} vs linear {li_m:.4f} -> relative "
              f"{100 * (tv_m - li_m) / li_m:+.1f}% (paper, NABirds/ResNet-50: +24.7%)")
    return out


def inference_macs_per_char(model, ids):
    dev = sim.device("a100")      # the GPT is no registered method: priced on its own engine
    model = dev.compile(model)
    x = ids[:4 * model.cfg.block].reshape(4, model.cfg.block)
    dev.run(model, x)
    return dev.ledger.total_ops("infer")["mac_fp32"] / x.numel()


def gpt_part(steps, variants=("none", "all")):
    text = license_corpus()
    ids, chars = encode(text)
    split = int(0.9 * len(ids))
    print(f"== 3. char GPT on /usr/share/common-licenses ({len(text)} chars, vocab {len(chars)},"
          f" last 10% held out), 2 layers, d 64, 4 heads, context 64, {steps} AdamW steps ==")
    out = {}
    for variant in variants:
        cfg = CharGPTConfig(vocab=len(chars), tversky=variant)
        model = CharGPT(cfg, seed=0)
        t0 = time.perf_counter()
        ppl, curve, _ = train_lm(model, ids[:split], ids[split:], steps=steps, seed=0)
        macs = inference_macs_per_char(model, ids[split:])
        name = {"none": "linear", "all": "tversky", "head": "tversky_head_only"}[variant]
        out[name] = {"val_ppl": ppl, "parameters": model.n_parameters,
                     "final_train_loss": sum(curve[-50:]) / 50, "infer_macs_per_char": macs}
        print(f"  {name:7s}: val PPL {ppl:.3f} | parameters {model.n_parameters:,} | "
              f"train loss (last 50) {out[name]['final_train_loss']:.3f} | "
              f"{macs:,.0f} MACs/char | {time.perf_counter() - t0:.0f} s", flush=True)
    if "linear" not in out or "tversky" not in out:
        return out
    lin, tv = out["linear"], out["tversky"]
    print(f"  Tversky/linear: PPL x{tv['val_ppl'] / lin['val_ppl']:.3f} (paper GPT-2/PTB: "
          f"x0.922), parameters x{tv['parameters'] / lin['parameters']:.3f} (paper x0.652)")
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="smaller sizes (a smoke run)")
    ap.add_argument("--parts", default="xor,heads,gpt", help="comma list of xor, heads, gpt")
    ap.add_argument("--gpt-variants", default="none,all",
                    help="GPT variants: none (linear), all (Tversky MLPs + head), head")
    args = ap.parse_args()
    torch.set_num_threads(1)
    t0 = time.perf_counter()
    quick = args.quick
    result = {"machine": f"{platform.machine()} {platform.processor() or ''}".strip(),
              "torch": torch.__version__}
    parts = args.parts.split(",")
    if "xor" in parts:
        result["xor"] = xor_part(seeds=3 if quick else 10)
    if "heads" in parts:
        result["fashion_heads"] = head_part(train=3000 if quick else 30000,
                                            test=1000 if quick else 10000,
                                            epochs=2 if quick else 8,
                                            seeds=[0] if quick else [0, 1])
    if "gpt" in parts:
        result["char_gpt"] = gpt_part(steps=60 if quick else 1200,
                                      variants=args.gpt_variants.split(","))
    result["wall_s"] = time.perf_counter() - t0
    print(f"total {result['wall_s']:.0f} s")
    print("RESULT " + json.dumps(result))


if __name__ == "__main__":
    main()
