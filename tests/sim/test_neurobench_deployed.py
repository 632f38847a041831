"""NeuroBench's static metrics of the deployed model (``Ledger.mark_deployed``,
``TorchDevice.deploy``): a run that copies its model or builds probes and auxiliary networks
reported the sum of all of them (geb: 155 Policy copies, 412,610 parameters for a 2,662-
parameter policy). The mark travels with the ledger through JSON and HDF5; a ledger or run
file without it keeps the older meaning (every recorded model)."""
import json

import h5py
import pytest
import torch
from torch import nn

from sim.errors import LedgerError, ModelError
from sim.ledger import Ledger
from sim.neurobench import deployed_models, metrics
from sim.torch_engine.engine import TorchDevice


def _ledger() -> Ledger:
    """A run's two models: the net (10 weights, 2 of them zero, + 3 biases) and a probe."""
    led = Ledger()
    led.record_model("Net", parameters=13, parameter_bytes=52, buffer_bytes=8,
                     connection_weights=10, connection_zero_weights=2)
    led.record_model("Probe", parameters=101, parameter_bytes=404, buffer_bytes=0,
                     connection_weights=100, connection_zero_weights=0)
    led.add_samples(1, scope="infer")
    return led


def _static(led: Ledger) -> tuple:
    m = metrics(led)
    return m["ParameterCount"], m["Footprint"], m["ConnectionSparsity"]


def test_the_mark_restricts_the_static_metrics_to_the_deployed_model():
    led = _ledger()
    # no mark: both models, 13 + 101 = 114 parameters, 60 + 404 = 464 B, 2 / 110 zero
    assert _static(led) == (114, 464, 2 / 110)
    led.mark_deployed("Net")
    # the net alone: 13 parameters, 52 + 8 = 60 B, 2 / 10 zero
    assert _static(led) == (13, 60, 0.2)
    assert led.deployed() == ["Net"] and list(deployed_models(led)) == ["Net"]
    led.mark_deployed("Probe")    # two deployed models: summed
    assert _static(led) == (114, 464, 2 / 110)


def test_marking_a_model_not_recorded_is_refused_naming_the_recorded_ones():
    with pytest.raises(LedgerError, match="'Policy'.*recorded: Net, Probe"):
        _ledger().mark_deployed("Policy")


def test_forgetting_a_deployed_model_drops_its_mark():
    led = _ledger()
    led.mark_deployed("Net")
    led.forget_model("Net")
    assert led.deployed() == [] and _static(led)[0] == 101


def test_the_mark_survives_json_hdf5_merge_and_copy(tmp_path):
    led = _ledger()
    led.mark_deployed("Net")
    with h5py.File(tmp_path / "run.h5", "w") as f:
        led.to_hdf5(f.create_group("ledger"))
    with h5py.File(tmp_path / "run.h5", "r") as f:
        back = Ledger.from_hdf5(f["ledger"])
    for other in (back, Ledger.from_json(led.to_json()), led.copy(), Ledger().merge(led)):
        assert other == led
        assert other.deployed() == ["Net"] and _static(other) == (13, 60, 0.2)


def test_an_old_run_file_without_the_mark_sums_every_model(tmp_path):
    led = _ledger()
    with h5py.File(tmp_path / "old.h5", "w") as f:
        led.to_hdf5(f.create_group("ledger"))
        # the extras attribute as run files wrote it before the mark: no "deployed" key
        assert "deployed" not in json.loads(f["ledger"].attrs["extras"])
    with h5py.File(tmp_path / "old.h5", "r") as f:
        back = Ledger.from_hdf5(f["ledger"])
    assert back.deployed() == [] and _static(back) == (114, 464, 2 / 110)
    data = led.to_dict()
    assert "deployed" not in data
    assert _static(Ledger.from_dict(data)) == (114, 464, 2 / 110)


def test_a_malformed_mark_is_refused():
    data = _ledger().to_dict()
    data["deployed"] = "Net"
    with pytest.raises(LedgerError, match="expected a list of model names"):
        Ledger.from_dict(data)
    data["deployed"] = ["Policy"]
    with pytest.raises(LedgerError, match="no model of that name"):
        Ledger.from_dict(data)


# -- TorchDevice.deploy -------------------------------------------------------------------------
def _dev():
    return TorchDevice("a100", prefer_cuda=False)


def _x(dev, *shape):
    torch.manual_seed(1)
    return torch.randn(*shape, device=dev.torch_device)


def test_deploy_keeps_the_policy_not_its_copies():
    dev = _dev()
    policy = dev.compile(nn.Linear(8, 4))
    copies = [nn.Linear(8, 4).to(dev.torch_device) for _ in range(3)]   # per-iteration copies
    for m in (policy, *copies):
        dev.run(m, _x(dev, 2, 8))
    # before the mark: 4 models x (8 x 4 + 4 = 36) = 144 parameters
    assert metrics(dev.ledger)["ParameterCount"] == 144
    assert dev.deploy(policy) is policy
    m = metrics(dev.ledger)
    assert (m["ParameterCount"], m["Footprint"]) == (36, 36 * 4)
    assert dev.ledger.deployed() == ["Linear"]
    dev.run(copies[0], _x(dev, 2, 8))           # a later block keeps the mark
    assert metrics(dev.ledger)["ParameterCount"] == 36


def test_a_deployed_model_inside_a_probe_keeps_its_own_entry():
    dev = _dev()
    backbone = nn.Sequential(nn.Linear(16, 8), nn.ReLU()).to(dev.torch_device)
    probe = nn.Sequential(backbone, nn.Linear(8, 3))
    dev.run(probe, _x(dev, 2, 16))    # only the probe ran outermost: it holds the backbone
    dev.deploy(backbone)
    models = dev.ledger.models()
    # backbone: 16 x 8 + 8 = 136; the probe's own head: 8 x 3 + 3 = 27 (shared ones once)
    assert models["Sequential#2"]["parameters"] == 136
    assert models["Sequential"]["parameters"] == 27
    assert metrics(dev.ledger)["ParameterCount"] == 136


def test_deploy_records_a_model_run_only_uncounted_and_waits_for_compiled_others():
    dev = _dev()
    other = dev.compile(nn.Linear(4, 4))        # compiled, never counted: not recorded yet
    net = nn.Linear(4, 2).to(dev.torch_device)
    dev.deploy(net)
    assert list(dev.ledger.models()) == ["Linear"]     # the net only: 4 x 2 + 2 = 10
    assert metrics(dev.ledger)["ParameterCount"] == 10
    dev.run(other, _x(dev, 1, 4))
    assert len(dev.ledger.models()) == 2 and metrics(dev.ledger)["ParameterCount"] == 10


def test_deploy_refuses_what_is_not_a_module():
    with pytest.raises(ModelError, match=r"\[TorchDevice.deploy\].*Tensor"):
        _dev().deploy(torch.zeros(2))
