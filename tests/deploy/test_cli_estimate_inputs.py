"""``neuroedge estimate`` of a model that takes several inputs (CLIP's token ids and image):
``--input-shape`` once per input in forward's order, ``--input-dtype`` once for every input
or once per shape. Only one input could be given on the command line before."""
import json

from deploy.cli import main

MODEL = '''
import torch
import torch.nn as nn


class TwoInputs(nn.Module):
    """Token ids and an image feature vector, joined: CLIP's shape in small."""

    def __init__(self):
        super().__init__()
        self.tokens = nn.Embedding(50, 8)
        self.image = nn.Linear(12, 8)
        self.head = nn.Linear(8, 3)

    def forward(self, ids, features):
        return self.head(self.tokens(ids).mean(1) + self.image(features))


def make():
    torch.manual_seed(0)
    return TwoInputs()
'''


def _run(tmp_path, capsys, *flags):
    path = tmp_path / "two.py"
    path.write_text(MODEL)
    code = main(["estimate", f"{path}:make", "--profiles", "a100", "--json", "-", *flags])
    out = capsys.readouterr()
    return code, out


def test_two_inputs_each_with_its_shape_and_dtype(tmp_path, capsys):
    code, out = _run(tmp_path, capsys, "--input-shape", "4,6", "--input-dtype", "int64",
                     "--input-shape", "4,12", "--input-dtype", "float32", "--train")
    assert code == 0, out.err
    doc = json.loads(out.out)
    # per sample: image 12 x 8 + head 8 x 3 = 120 MACs (the embedding is a lookup); 4
    # samples: 480
    assert doc["layer_table"][0]["infer_macs"] == 480
    assert doc["inference_samples"] == 4
    assert any(n.startswith("input 0: token ids of shape (4, 6)") for n in doc["notes"])
    assert doc["uncounted"] == {}


def test_batch_replaces_every_inputs_first_dimension(tmp_path, capsys):
    code, out = _run(tmp_path, capsys, "--input-shape", "1,6", "--input-dtype", "int64",
                     "--input-shape", "1,12", "--input-dtype", "float32", "--batch", "5")
    assert code == 0, out.err
    assert json.loads(out.out)["inference_samples"] == 5


def test_a_dtype_count_that_matches_neither_rule_is_refused(tmp_path, capsys):
    code, out = _run(tmp_path, capsys, "--input-shape", "4,6", "--input-shape", "4,12",
                     "--input-dtype", "int64", "--input-dtype", "float32",
                     "--input-dtype", "int64")
    assert code == 2
    assert "--input-dtype is given 3 times for 2 --input-shape" in out.err


def test_one_dtype_applies_to_every_input(tmp_path, capsys):
    # int64 for both: the features input is then token ids too, which the Linear refuses
    # (an integer input to a float layer): the forward's error, in one line
    code, out = _run(tmp_path, capsys, "--input-shape", "4,6", "--input-shape", "4,12",
                     "--input-dtype", "int64")
    assert code == 2
    assert "forward failed" in out.err and len(out.err.strip().splitlines()) == 1


def test_measure_times_a_model_of_two_inputs(tmp_path, capsys, monkeypatch):
    """measure takes the same inputs: both drawn, counted and timed (a second
    --input-shape replaced the first before, and the forward failed on one input)."""
    monkeypatch.setattr("deploy.measure.RAPL_ENERGY", tmp_path / "no_rapl")
    path = tmp_path / "two.py"
    path.write_text(MODEL)
    assert main(["measure", f"{path}:make", "--input-shape", "3,6", "--input-dtype", "int64",
                 "--input-shape", "3,12", "--input-dtype", "float32", "--profile",
                 "x86-avx2", "--device", "cpu", "--repeats", "3", "--warmup", "1"]) == 0
    out = capsys.readouterr().out
    assert "measured on cpu (one call = a batch of 3" in out and "predicted" in out
