"""`neuroedge estimate FILE.py:factory`: one energy table across devices, equal to the API's."""
import json
import re

import pytest

from deploy.cli import build_parser, main
from deploy.estimate import estimate
from deploy.estimate_cli import load_model
from sim.errors import ModelError

CNN = '''
import torch.nn as nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(1, 4, 3)
        self.relu = nn.ReLU()
        self.pool = nn.MaxPool2d(2)
        self.fc = nn.Linear(4 * 13 * 13, 10)

    def forward(self, x):
        return self.fc(self.pool(self.relu(self.conv(x))).flatten(1))


def make_net():
    return Net()


net = Net()
big = nn.Linear(2000, 2000)
number = 3


def broken():
    raise ValueError("no weights here")
'''
PROFILES = "jetson-orin,cortex-m7,a100"
RAISE_LINE = CNN.splitlines().index('    raise ValueError("no weights here")') + 1   # 27


@pytest.fixture
def user_file(tmp_path):
    path = tmp_path / "user_net.py"
    path.write_text(CNN)
    return path


def _json(capsys, argv):
    assert main(argv + ["--json", "-"]) == 0
    out = capsys.readouterr()
    assert out.err == ""
    return json.loads(out.out)   # stdout holds the JSON alone


def test_one_command_one_table_for_jetson_cortex_m7_and_a100(user_file, capsys):
    assert main(["estimate", f"{user_file}:make_net", "--input-shape", "1,1,28,28",
                 "--profiles", PROFILES]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("Net (torch): 1 inference sample")
    assert lines[1].split() == ["profile", "kind", "per", "inference", "latency", "total", "vs",
                                "first", "figures"]
    assert [ln.split()[:2] for ln in lines[2:5]] == [["jetson-orin", "gpu"],
                                                    ["cortex-m7", "bitwise"], ["a100", "gpu"]]
    assert lines[2].split()[-2:] == ["1x", "estimate"]   # the first profile against itself
    # each kind's execution model and exclusions are named once
    est = estimate(load_model(f"{user_file}:make_net"), (1, 1, 28, 28), profiles=PROFILES)
    for kind, name in (("gpu", "a100"), ("bitwise", "cortex-m7")):
        rep = est.reports[name]
        assert lines.count(f"execution model ({kind}): {rep.execution_model}") == 1
        assert lines.count(f"excludes ({kind}): {'; '.join(rep.excluded)}") == 1


def test_json_equals_the_api_on_the_same_module_and_seed(user_file, capsys):
    doc = _json(capsys, ["estimate", f"{user_file}:make_net", "--input-shape", "1,1,28,28",
                         "--profiles", PROFILES, "--train", "--seed", "5"])
    api = estimate(load_model(f"{user_file}:make_net", seed=5), (1, 1, 28, 28),
                   profiles=PROFILES, loss="auto", seed=5)
    assert doc["rows"] == api.rows()   # every figure equal, nothing NaN with --train
    assert [r["profile"] for r in doc["rows"]] == PROFILES.split(",")
    assert doc["inference_samples"] == doc["train_samples"] == 1 and doc["skipped"] == {}
    assert any("cross_entropy on random labels over 10 classes" in n for n in doc["notes"])


def test_macs_of_the_users_cnn_and_mcu_memories(user_file):
    net = load_model(f"{user_file}:make_net")
    est = estimate(net, (1, 1, 28, 28), profiles=["cortex-m7", "a100"])
    ledger = est.ledgers["a100"]
    assert ledger.ops("infer/conv/forward")["mac_fp32"] == 26 * 26 * 4 * 9   # 24,336
    assert ledger.ops("infer/fc/forward")["mac_fp32"] == 676 * 10            # 6,760
    assert not any(k.startswith("offchip") for k in est.reports["cortex-m7"].bytes_moved())
    assert est.reports["a100"].bytes_moved()["offchip:read"] > 0


def test_batch_replaces_the_first_dimension(user_file, capsys):
    doc = _json(capsys, ["estimate", f"{user_file}:net", "--input-shape", "1,1,28,28",
                         "--batch", "4", "--profiles", "a100"])
    assert doc["inference_samples"] == 4 and doc["model"] == "Net"
    assert doc["rows"][0]["per_train_sample_j"] is None   # no --train: NaN written as null


def test_too_large_for_cortex_m7_is_skipped_with_the_reason(user_file, capsys):
    assert main(["estimate", f"{user_file}:big", "--input-shape", "1,2000",
                 "--profiles", "cortex-m7,a100"]) == 0
    out = capsys.readouterr().out
    assert "skipped:\n  cortex-m7: [TorchDevice.compile] Linear parameters + buffers = " \
           "16008000 B exceeds cortex-m7" in out
    assert "\na100 " in out


def test_quiet_prints_nothing_and_json_path_is_written_once(user_file, tmp_path, capsys):
    out = tmp_path / "res" / "est.json"
    argv = ["estimate", f"{user_file}:make_net", "--input-shape", "1,1,28,28",
            "--profiles", "a100", "--json", str(out), "--quiet"]
    assert main(argv) == 0
    assert capsys.readouterr().out == ""
    assert json.loads(out.read_text())["rows"][0]["profile"] == "a100"
    assert main(argv) == 2   # exists: refused without --force
    assert "--force" in capsys.readouterr().err
    assert main(argv + ["--force"]) == 0


def _exit_code(argv) -> int:
    try:
        return main(argv)
    except SystemExit as exc:   # argparse's errors (deploy.cli._Parser) exit this way
        return exc.code


@pytest.mark.parametrize("argv, match", [
    (["{f}:make_net", "--profiles", "a100"], "--input-shape is required"),
    (["{f}:make_net", "--input-shape", "1,a", "--profiles", "a100"], "--input-shape '1,a'"),
    (["{f}:make_net", "--input-shape", "1,3,28,28", "--profiles", "a100"],
     r"Net forward failed on example_input of shape \(1, 3, 28, 28\)"),
    (["{f}:nothing", "--input-shape", "1,1,28,28", "--profiles", "a100"],
     "has no 'nothing'; it defines Net, broken, make_net, net"),
    (["{f}:number", "--input-shape", "1,1,28,28", "--profiles", "a100"], "is of type int"),
    (["{f}:broken", "--input-shape", "1,1,28,28", "--profiles", "a100"],
     rf"broken\(\) failed \(ValueError: no weights here, line {RAISE_LINE}\)"),
    (["{f}", "--input-shape", "1,1,28,28", "--profiles", "a100"], "expected FILE.py:NAME"),
    (["missing.py:net", "--input-shape", "1,1,28,28", "--profiles", "a100"], "does not exist"),
    (["{f}:make_net", "--input-shape", "1,1,28,28", "--profiles", "nope"],
     "unknown hardware profile 'nope'"),
    (["{f}:make_net", "--input-shape", "1,1,28,28", "--profiles", "loihi"],
     "no profile in 'loihi' can run Net"),
    (["{f}:make_net", "--input-shape", "1,1,28,28", "--profiles", "a100", "--steps", "9"],
     "plain torch module"),
    (["net.nir", "--train", "--profiles", "loihi"], "--train applies to FILE.py models"),
    (["{f}:make_net", "--input-shape", "1,1,28,28", "--profiles", "a100", "--batch", "0"],
     "must be >= 1"),
])
def test_bad_arguments_are_one_error_line_exit_2(user_file, capsys, argv, match):
    import re
    argv = [a.replace("{f}", str(user_file)) for a in argv]
    assert _exit_code(["estimate"] + argv) == 2
    err = capsys.readouterr().err
    assert err.startswith("neuroedge: error: ") and err.count("\n") == 1, err
    assert re.search(match, err), err


def test_a_syntax_error_in_the_users_file_names_the_line(tmp_path, capsys):
    path = tmp_path / "bad.py"
    path.write_text("import torch\ndef make(:\n    pass\n")
    assert main(["estimate", f"{path}:make", "--input-shape", "1,2", "--profiles", "a100"]) == 2
    err = capsys.readouterr().err
    assert "importing" in err and "SyntaxError" in err and "line 2" in err


def test_every_flag_has_help():
    sub = next(a for a in build_parser()._actions if a.dest == "command")
    est = sub.choices["estimate"]
    for action in est._actions:
        assert action.help, action.option_strings or action.dest


def test_json_and_table_carry_neurobench_metrics_and_layers(user_file, capsys):
    doc = _json(capsys, ["estimate", f"{user_file}:make_net", "--input-shape", "1,1,28,28",
                         "--profiles", PROFILES])
    nb = doc["neurobench"]
    # Dense: conv 26*26 outputs x 4 channels x 9 taps = 24,336 + fc 676 x 10 = 6,760
    assert nb["SynapticOperations"]["Dense"] == 24_336 + 6_760
    # parameters: conv 4*9 + 4 = 40, fc 6,760 + 10 = 6,770; float32 bytes
    assert nb["ParameterCount"] == 6_810 and nb["Footprint"] == 4 * 6_810
    assert doc["layers_profile"] == "jetson-orin"
    layers = {r["name"]: r for r in doc["layers"]}
    assert layers["conv"]["work"] == 24_336 and layers["conv"]["output_shape"] == [1, 4, 26, 26]
    assert layers["fc"]["type"] == "Linear" and layers["fc"]["parameters"] == 6_770
    assert main(["estimate", f"{user_file}:make_net", "--input-shape", "1,1,28,28",
                 "--profiles", "a100"]) == 0
    out = capsys.readouterr().out
    assert "NeuroBench metrics (workload per sample of infer)" in out
    assert "Layers on a100 (batch of 1; depth 3; act. = output bytes)" in out
    # conv's row: output [1, 4, 26, 26], 40 params, 24,336 MACs; 2,704 outputs x 4 B
    assert re.search(r"conv \(Conv2d\)\s+\[1, 4, 26, 26\]\s+40\s+24,336\s+\S+ \S?J"
                     r"\s+10.8 kB", out)


def _hand_nir(tmp_path):
    """A hand-built graph written to ``hand.nir``: Input(2) -> Linear -> LIF(2) -> Output, no
    reset stated anywhere."""
    import nir
    import numpy as np
    graph = nir.NIRGraph(
        nodes={"in": nir.Input({"input": np.array([2])}),
               "w": nir.Linear(weight=np.eye(2) * 2.0),
               "lif": nir.LIF(tau=np.full(2, 0.01), r=np.ones(2), v_leak=np.zeros(2),
                              v_threshold=np.ones(2), v_reset=np.zeros(2)),
               "out": nir.Output({"output": np.array([2])})},
        edges=[("in", "w"), ("w", "lif"), ("lif", "out")])
    path = tmp_path / "hand.nir"
    nir.write(path, graph)
    return path


def test_nir_file_reset_warning_is_one_line_and_reset_flag_silences_it(tmp_path, capsys):
    path = _hand_nir(tmp_path)
    argv = ["estimate", str(path), "--stimulus", "poisson:rate=100", "--steps", "20",
            "--dt", "1e-3", "--profiles", "loihi"]
    assert main(argv) == 0
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 1 and err[0].startswith("neuroedge: warning: NIR import:")
    assert "assuming NIR's reset to v_reset" in err[0] and "--reset" in err[0]
    assert main(argv + ["--reset", "value"]) == 0
    assert capsys.readouterr().err == ""


def test_simulate_of_a_users_file_points_at_estimate(capsys):
    for name in ("net.nir", "my_net.py:make_net"):
        assert main(["simulate", name]) == 2
        err = capsys.readouterr().err
        assert f"unknown model '{name}'" in err and f"`neuroedge estimate {name}`" in err


def test_nir_steps_come_from_a_spike_array_and_are_bounded(tmp_path, capsys):
    import numpy as np

    from deploy.nir_estimate import MAX_STEPS
    path = _hand_nir(tmp_path)
    spikes = np.zeros((30, 2), np.int8)
    spikes[::3] = 1
    np.save(tmp_path / "s.npy", spikes)
    base = ["estimate", str(path), "--dt", "1e-3", "--reset", "value", "--profiles", "loihi"]
    # no --steps: the stimulus' 30 rows are the run; the same figures as --steps 30
    assert main(base + ["--stimulus", str(tmp_path / "s.npy"),
                        "--json", str(tmp_path / "a.json")]) == 0
    assert main(base + ["--stimulus", str(tmp_path / "s.npy"), "--steps", "30",
                        "--json", str(tmp_path / "b.json")]) == 0
    assert (tmp_path / "a.json").read_text() == (tmp_path / "b.json").read_text()
    capsys.readouterr()
    # a Poisson stimulus fills any length: the steps must be given
    assert main(base + ["--stimulus", "poisson:rate=100"]) == 2
    assert "steps is missing; give steps= (--steps" in capsys.readouterr().err
    assert main(base + ["--stimulus", "poisson:rate=100", "--steps", str(MAX_STEPS + 1)]) == 2
    err = capsys.readouterr().err
    assert "steps = 10,000,001 is more than 10,000,000" in err and len(err.splitlines()) == 1


def test_no_file_the_command_reads_is_written_over_by_json(user_file, tmp_path, capsys):
    # the profile TOML and the spike-array stimulus are inputs, as the model file is: even
    # with --force the JSON may not replace them
    from pathlib import Path

    import numpy as np
    toml = tmp_path / "mine.toml"
    toml.write_text((Path(__file__).parents[1] / "data" / "toy-gpu.toml").read_text())
    before = toml.read_text()
    argv = ["estimate", f"{user_file}:make_net", "--input-shape", "1,1,28,28",
            "--profiles", f"a100,{toml}", "--json", str(toml), "--force"]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert f"--json '{toml}' is the same file as the input '{toml}' of this command" in err
    assert err.count("\n") == 1 and toml.read_text() == before
    spikes = tmp_path / "s.npy"
    np.save(spikes, np.ones((3, 2), np.int8))
    before = spikes.read_bytes()
    assert main(["estimate", str(_hand_nir(tmp_path)), "--stimulus", str(spikes), "--dt",
                 "1e-3", "--reset", "value", "--profiles", "loihi", "--json", str(spikes),
                 "--force"]) == 2
    assert f"is the same file as the input '{spikes}'" in capsys.readouterr().err
    assert spikes.read_bytes() == before


def test_json_to_stdout_is_json_alone_when_the_model_prints(tmp_path, capsys):
    # prints at import and in forward go to stderr while the user's code runs: stdout is
    # the JSON document and nothing else
    path = tmp_path / "noisy.py"
    path.write_text("import torch.nn as nn\n"
                    "print('loading my model')\n"
                    "class Net(nn.Module):\n"
                    "    def __init__(self):\n"
                    "        super().__init__()\n"
                    "        print('building')\n"
                    "        self.fc = nn.Linear(4, 2)\n"
                    "    def forward(self, x):\n"
                    "        print('forward shape', tuple(x.shape))\n"
                    "        return self.fc(x)\n")
    assert main(["estimate", f"{path}:Net", "--input-shape", "1,4", "--profiles", "a100",
                 "--json", "-"]) == 0
    out = capsys.readouterr()
    assert json.loads(out.out)["model"] == "Net"
    # one forward counted; without a memory check on a100 (its memory is far from full)
    # none is traced
    assert out.err == "loading my model\nbuilding\nforward shape (1, 4)\n"


DATACLASS_NET = '''
from __future__ import annotations

from dataclasses import dataclass

import torch.nn as nn


@dataclass
class Config:
    d_in: int = 16
    n_out: int = {n_out}


def make():
    cfg = Config()
    return nn.Linear(cfg.d_in, cfg.n_out)
'''


def test_a_file_with_postponed_annotations_and_a_dataclass_imports(tmp_path):
    # dataclass looks its module up in sys.modules while the file runs: the file is
    # registered there, under a name of its own (two net.py in two directories are two
    # modules), and a failed import leaves nothing registered
    import sys
    for sub, n_out in (("a", 3), ("b", 5)):
        (tmp_path / sub).mkdir()
        (tmp_path / sub / "net.py").write_text(DATACLASS_NET.replace("{n_out}", str(n_out)))
    a = load_model(f"{tmp_path / 'a' / 'net.py'}:make")
    b = load_model(f"{tmp_path / 'b' / 'net.py'}:make")
    assert (a.out_features, b.out_features) == (3, 5)
    assert load_model(f"{tmp_path / 'a' / 'net.py'}:make").out_features == 3
    registered = set(sys.modules)
    bad = tmp_path / "bad.py"
    bad.write_text("import dataclasses\nraise RuntimeError('half done')\n")
    with pytest.raises(ModelError, match="half done"):
        load_model(f"{bad}:make")
    assert set(sys.modules) == registered
