"""PPL's run (``run.py``): NeuroBench's model is the whole PPL. Its parts run one by one
(UNet, regressor, memory), so the ledger recorded them and not the PPL's own parameters
(the quick preset: ParameterCount 66,327 against the room's 66,472)."""
from conftest import TOY_GPU

from models import runner

TINY = {"train": 32, "test": 16, "width": 8, "batch_size": 8, "steps": 2, "counted_steps": 1,
        "occluded": 8}


def test_neurobench_counts_the_whole_ppl_model():
    run = runner.run("ppl", profile=TOY_GPU, overrides=TINY)
    assert run.ledger.deployed() == ["PPL"]
    # the room's own count: every parameter of the PPL (prior, regressor, UNet, memory, alpha)
    assert run.neurobench["ParameterCount"] == run.metrics["parameters"]
