"""The decoupled-prototypes run (``run.py``): batching of one variant's training."""
import numpy as np
import pytest
import torch

from models.decoupled_prototypes.card import DecoupledPrototypesConfig
from models.decoupled_prototypes.model import Student
from models.decoupled_prototypes.run import run_both, train_variant

TINY = {"prototypes": 16, "bottleneck": 8, "width": 4, "batch_size": 32}


@pytest.fixture(scope="module")
def dev():
    from conftest import TOY_GPU

    import sim
    from hw_profiles import load
    return sim.device(load(TOY_GPU))


def _on(dev, *tensors):
    """Tensors drawn on the CPU (the same numbers everywhere), on ``dev``'s torch device,
    where ``run_both`` puts the data (``dev.tensor``) before ``train_variant``."""
    return [t.to(dev.torch_device) for t in tensors]


@pytest.mark.parametrize("variant", ["joint", "decoupled"])
def test_a_last_batch_of_one_image_joins_the_batch_before(dev, variant):
    # 33 images at batch_size 32: batches of 32 and 1, and the head's BatchNorm1d refuses a
    # training batch of 1 ("Expected more than 1 value per channel"); now one batch of 33,
    # so one step per epoch and 2 steps over 2 epochs
    g = torch.Generator().manual_seed(3)
    xt, xs = torch.rand(33, 1, 28, 28, generator=g), torch.rand(5, 1, 28, 28, generator=g)
    yt, ys = torch.randint(0, 10, (33,), generator=g), torch.randint(0, 10, (5,), generator=g)
    xt, yt, xs, ys = _on(dev, xt, yt, xs, ys)
    cfg = DecoupledPrototypesConfig(**{**TINY, "epochs": 2, "measure_every": 1})
    r = train_variant(variant, cfg, dev, xt, yt, xs, ys)
    assert r["trainer"].steps == 2 and r["trainer"].steps_per_epoch == 1
    assert len(r["losses"]) == 2 and all(np.isfinite(r["losses"]))


def test_training_is_priced_as_training():
    """Each variant's training records under train/<variant> with its images per epoch, so
    the report's energy per training sample (sim.phases: the depth-1 ``train`` scope) exists."""
    from conftest import TOY_GPU

    import sim
    from hw_profiles import load
    from sim import phases
    dev = sim.device(load(TOY_GPU))
    g = torch.Generator().manual_seed(4)
    xt, xs = torch.rand(20, 1, 28, 28, generator=g), torch.rand(5, 1, 28, 28, generator=g)
    yt, ys = torch.randint(0, 10, (20,), generator=g), torch.randint(0, 10, (5,), generator=g)
    xt, yt, xs, ys = _on(dev, xt, yt, xs, ys)
    cfg = DecoupledPrototypesConfig(**{**TINY, "epochs": 2, "batch_size": 10})
    for variant in ("joint", "decoupled"):
        train_variant(variant, cfg, dev, xt, yt, xs, ys)
    samples = dev.ledger.samples()
    assert phases.train_scope(samples) == "train"
    # 2 variants x 2 epochs x 20 images = 80 training samples; k-NN: 2 x 2 epochs x 5
    assert phases.scope_samples(samples, "train") == 80
    assert samples["train/joint"] == samples["train/decoupled"] == 40
    rep = dev.ledger.price(dev.profile)
    assert rep.energy_within("train") > 0


def test_neurobench_counts_the_decoupled_teacher_not_all_four_students():
    """The ledger records both variants' students and teachers (quick preset: 4 models,
    404,960 parameters); NeuroBench's model is the decoupled teacher (k-NN features)."""
    from types import SimpleNamespace

    from conftest import TOY_GPU

    import sim
    from hw_profiles import load
    from sim.neurobench import metrics
    from sim.torch_engine.activity import model_facts
    dev = sim.device(load(TOY_GPU))      # a fresh one: the fixture's has other tests' models
    g = np.random.default_rng(5)
    data = SimpleNamespace(x_train=g.random((20, 784), dtype=np.float32),
                           y_train=np.arange(20) % 10, x_test=g.random((5, 784), dtype=np.float32),
                           y_test=np.arange(5) % 10, source="random images")
    cfg = DecoupledPrototypesConfig(**{**TINY, "epochs": 1, "batch_size": 10, "knn_k": 3})
    run_both(cfg, dev, data)
    assert len(dev.ledger.models()) == 4
    # the teacher is a copy of a decoupled Student (no prototype parameter): its own facts
    own = model_facts(Student(cfg, joint=False))
    m = metrics(dev.ledger)
    assert m["ParameterCount"] == own["parameters"]
    assert m["Footprint"] == own["parameter_bytes"] + own["buffer_bytes"]
    # the joint student carries K x D = 16 x 8 = 128 prototype parameters more
    assert dev.ledger.models()["Student"]["parameters"] == own["parameters"] + 16 * 8
