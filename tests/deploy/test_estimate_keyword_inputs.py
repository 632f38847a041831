"""Keyword example inputs, the ``transformers`` convention (``model(**tokenizer(...))``): a
dict example input was refused ("example_input is a dict; give tensors"), so a model whose
forward takes keyword inputs only, or in another order than the dict's, could not be
estimated. Now a dict is passed as keyword arguments to the forward, the training step,
the arena trace and the device-memory check."""
import pytest
import torch
from torch import nn

from deploy.estimate import estimate
from sim.errors import ModelError


class KeywordNet(nn.Module):
    """A forward whose inputs must be named: a mask first, then the features."""

    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(6, 3)

    def forward(self, *, mask, features):
        return self.fc(features * mask)


def _inputs():
    torch.manual_seed(0)
    return {"features": torch.randn(4, 6), "mask": torch.ones(4, 6)}


def test_a_dict_example_input_is_passed_by_keyword():
    est = estimate(KeywordNet(), _inputs(), profiles=["a100", "stm32h7a3"])
    # 4 samples x 6 x 3 = 72 MACs
    assert est.ledgers["a100"].total_ops("infer")["mac_fp32"] == 72
    assert est.inference_samples == 4
    # the microcontroller's arena was traced on the keyword call: the two inputs (96 B
    # each) and the product and output buffers, none of them zero
    assert est.memory["stm32h7a3"]["arena_bytes"] >= 2 * 96


def test_a_dict_example_input_trains():
    est = estimate(KeywordNet(), _inputs(), profiles=["a100"], loss="mse")
    # forward 72 + weight gradient 72 (the inputs need no gradient) = 144 MACs
    assert est.ledgers["a100"].total_ops("train")["mac_fp32"] == 144


def test_a_train_step_gets_the_dict():
    seen = []

    def step(net, inputs):
        seen.append(sorted(inputs))
        return net(**inputs).pow(2).mean()
    estimate(KeywordNet(), _inputs(), profiles=["a100"], train_step=step)
    assert seen == [["features", "mask"]]


def test_a_transformers_model_counts_the_same_by_keyword_and_by_position():
    transformers = pytest.importorskip("transformers")
    cfg = transformers.BertConfig(vocab_size=100, hidden_size=32, num_hidden_layers=1,
                                  num_attention_heads=2, intermediate_size=64)
    torch.manual_seed(0)
    model = transformers.BertModel(cfg)
    ids = torch.randint(0, 100, (2, 8))
    mask = torch.ones(2, 8, dtype=torch.long)
    by_name = estimate(model, {"attention_mask": mask, "input_ids": ids}, profiles=["a100"])
    by_position = estimate(model, (ids, mask), profiles=["a100"])
    assert by_name.ledgers["a100"].total_ops() == by_position.ledgers["a100"].total_ops()
    assert by_name.uncounted == {}


@pytest.mark.parametrize("bad, message", [
    ({}, r"example_input is a dict with no keys"),
    ({1: torch.zeros(2, 6)}, r"example_input is a dict with key 1;"),
    ({"features": torch.zeros(2, 6), "mask": "all"},
     r"example_input\['mask'\] is a str; give tensors"),
    ({"features": torch.full((2, 6), float("nan")), "mask": torch.ones(2, 6)},
     r"example_input\['features'\] of shape \(2, 6\) has 12 NaN"),
])
def test_a_bad_dict_is_refused_naming_the_key(bad, message):
    with pytest.raises(ModelError, match=message):
        estimate(KeywordNet(), bad, profiles=["a100"])
