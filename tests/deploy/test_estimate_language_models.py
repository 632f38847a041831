"""Models as people bring them from ``transformers`` and language modelling: a forward that
returns a tuple or a dict (a ``ModelOutput``) was refused by ``estimate --train`` ("not one
tensor; give train_step", which the command line cannot give), and a model that takes token
ids could not be estimated from the command line at all (the drawn input is float). Now the
training step's loss is taken on the output's first floating-point tensor (``logits``), and
``--input-dtype int64`` draws token ids below the input embedding's vocabulary."""
import os

import pytest
import torch
from torch import nn

from deploy.cli import main
from deploy.estimate import estimate, token_ids
from sim.errors import ModelError


class TupleNet(nn.Module):
    """(logits, features), as many classifiers return."""

    def __init__(self):
        super().__init__()
        self.body = nn.Linear(6, 8)
        self.head = nn.Linear(8, 4)

    def forward(self, x):
        h = torch.relu(self.body(x))
        return self.head(h), h


class DictNet(TupleNet):
    def forward(self, x):
        logits, h = super().forward(x)
        return {"argmax": logits.argmax(-1), "logits": logits, "features": h}


class TinyLM(nn.Module):
    """Token table first, then a small segment table, as BERT's embeddings."""

    def __init__(self):
        super().__init__()
        self.tokens = nn.Embedding(50, 8)
        self.segments = nn.Embedding(2, 8)
        self.head = nn.Linear(8, 50)

    def forward(self, ids):
        return self.head(self.tokens(ids) + self.segments(torch.zeros_like(ids)))


def _train_note(est) -> str:
    return next(n for n in est.notes if n.startswith("training step"))


@pytest.mark.parametrize("net, where", [(TupleNet(), "output[0]"),
                                        (DictNet(), "output['logits']")])
def test_training_step_takes_the_first_float_output(net, where):
    torch.manual_seed(0)
    est = estimate(net, (3, 6), profiles=["a100"], loss="auto")
    # the same step on a plain module returning the logits alone counts the same MACs:
    # forward 3 x (6 x 8 + 8 x 4) = 240, backward 2 x 3 x 8 x 4 + 3 x 6 x 8 (no input
    # gradient) = 336
    assert est.ledgers["a100"].total_ops("train")["mac_fp32"] == 240 + 336
    assert f"cross_entropy of the {where} on random labels over 4 classes" in _train_note(est)


def test_output_with_no_float_tensor_is_refused_in_one_line():
    class ArgmaxOnly(TupleNet):
        def forward(self, x):
            return (super().forward(x)[0].argmax(-1),)

    with pytest.raises(ModelError, match="returned a tuple with no floating-point tensor to "
                                         "train on; give train_step"):
        estimate(ArgmaxOnly(), (3, 6), profiles=["a100"], loss="auto")


def test_token_ids_index_the_input_embedding():
    ids, note = token_ids(TinyLM(), (4, 12), seed=0)
    assert ids.dtype == torch.int64 and tuple(ids.shape) == (4, 12)
    # uniform over the 50-token table, not the 2-entry segment table: 48 draws, the chance
    # that all fall below 2 is (2 / 50)^48
    assert 2 <= int(ids.max()) < 50 and int(ids.min()) >= 0
    assert "uniform in [0, 50)" in note
    again, _ = token_ids(TinyLM(), (4, 12), seed=0)
    assert torch.equal(ids, again)
    with pytest.raises(ModelError, match="has no nn.Embedding; leave --input-dtype out"):
        token_ids(TupleNet(), (4, 12), seed=0)


def test_cli_language_model_with_token_ids(tmp_path, capsys):
    f = tmp_path / "lm.py"
    f.write_text("import torch\nfrom torch import nn\n\n\n"
                 "class TinyLM(nn.Module):\n"
                 "    def __init__(self):\n"
                 "        super().__init__()\n"
                 "        self.tokens = nn.Embedding(50, 8)\n"
                 "        self.head = nn.Linear(8, 50)\n\n"
                 "    def forward(self, ids):\n"
                 "        return self.head(self.tokens(ids)), ids\n")
    # float input: one line that names the option
    assert main(["estimate", f"{f}:TinyLM", "--input-shape", "2,12", "--profiles",
                 "a100"]) == 2
    assert "--input-dtype int64" in capsys.readouterr().err
    assert main(["estimate", f"{f}:TinyLM", "--input-shape", "2,12", "--input-dtype", "int64",
                 "--profiles", "a100", "--train"]) == 0
    out = capsys.readouterr().out
    assert "token ids of shape (2, 12), uniform in [0, 50)" in out
    # the (2, 12, 50) logits: cross-entropy over dimension 1 would take 12 classes; MSE
    assert "mse of the output[0] against random normal targets" in out


def test_cli_transformers_classifier_trains(tmp_path, capsys):
    os.environ["HF_HUB_OFFLINE"] = "1"
    pytest.importorskip("transformers")
    f = tmp_path / "hf.py"
    f.write_text("import transformers\n\n\ndef bert():\n"
                 "    return transformers.BertForSequenceClassification(transformers.BertConfig("
                 "vocab_size=100, hidden_size=32, num_hidden_layers=1, num_attention_heads=2, "
                 "intermediate_size=64, num_labels=3))\n")
    assert main(["estimate", f"{f}:bert", "--input-shape", "2,16", "--input-dtype", "int64",
                 "--profiles", "a100", "--train", "--strict"]) == 0
    out = capsys.readouterr().out
    assert "cross_entropy of the output['logits'] on random labels over 3 classes" in out


def test_a_dataclass_output_trains_on_its_first_float_field():
    import dataclasses

    @dataclasses.dataclass
    class Out:
        label: torch.Tensor
        scores: torch.Tensor

    class Net(TupleNet):
        def forward(self, x):
            logits, _ = super().forward(x)
            return Out(label=logits.argmax(-1), scores=logits)

    est = estimate(Net(), (3, 6), profiles=["a100"], loss="auto")
    assert "cross_entropy of the output['scores'] on random labels" in _train_note(est)
