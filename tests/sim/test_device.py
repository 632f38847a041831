"""The Device contract: sim.device() picks the engine by kind; engines refuse other kinds.

Issue 11: ``models.get('mlp').simulate(profile='loihi')`` ended in ``KeyError: 'offchip'``
deep in TorchDevice.compile; every engine now refuses a kind it cannot model when built.
"""
import importlib

import pytest

import sim
from hw_profiles import load
from hw_profiles.errors import NeuroedgeError, ProfileError
from sim.bitwise import BitwiseDevice
from sim.device import ENGINES, Device, register_engine
from sim.errors import ModelError
from sim.neuromorphic import NeuromorphicDevice
from sim.torch_engine import TorchDevice


@pytest.mark.parametrize("cls,profile,match", [
    (TorchDevice, "loihi", r"^\[TorchDevice\] profile 'loihi' is of kind 'neuromorphic'; "
                           r"TorchDevice models gpu and cpu and bitwise profiles "
                           r"\(sim.device\(profile\) "
                           r"picks the engine for a profile's kind\)$"),
    (NeuromorphicDevice, "a100", r"^\[NeuromorphicDevice\] profile 'a100' is of kind 'gpu'; "
                                 r"NeuromorphicDevice models neuromorphic profiles"),
    (BitwiseDevice, "loihi2", r"^\[BitwiseDevice\] profile 'loihi2' is of kind 'neuromorphic'; "
                              r"BitwiseDevice models bitwise and cpu profiles"),
])
def test_engine_refuses_a_kind_it_cannot_model(cls, profile, match):
    with pytest.raises(ModelError, match=match) as err:
        cls(profile)
    assert "\n" not in str(err.value)


def test_engine_by_name_refuses_a_kind_it_cannot_model():
    with pytest.raises(ModelError, match=r"^\[TorchDevice\] profile 'loihi2' is of kind "
                                         r"'neuromorphic'; TorchDevice models gpu and cpu and "
                                         r"bitwise profiles"):
        sim.device("loihi2", engine="torch")


def test_engine_accepts_its_kinds():
    assert TorchDevice("x86-avx2").profile.kind == "cpu"
    assert TorchDevice("cortex-m4").profile.kind == "bitwise"   # a torch module on an MCU
    assert BitwiseDevice("x86-avx2").word_bits == 64      # a CPU's 64-bit words
    assert NeuromorphicDevice("loihi").profile.name == "loihi"


def test_user_file_is_named_by_its_label(toy_gpu_path):
    with pytest.raises(ModelError, match=r"^\[NeuromorphicDevice\] profile 'toy-gpu \(file: "
                                         r".*toy-gpu.toml\)' is of kind 'gpu'"):
        NeuromorphicDevice(toy_gpu_path)


def test_mlp_on_loihi_is_one_line_error():
    """The runner refuses the kind before anything runs; the engine refuses it on its own."""
    from models import runner
    with pytest.raises(ModelError, match=r"^profile 'loihi' is a 'neuromorphic' profile; model "
                                         r"'mlp' runs on gpu, cpu, bitwise profiles$"):
        runner.run("mlp", profile="loihi")
    with pytest.raises(ModelError, match=r"^\[TorchDevice\] profile 'loihi' is of kind "
                                         r"'neuromorphic'; TorchDevice models gpu and cpu and "
                                         r"bitwise"):
        TorchDevice("loihi")


def test_device_picks_engine_by_kind():
    assert type(sim.device("loihi")) is NeuromorphicDevice
    assert type(sim.device("a100")) is TorchDevice
    assert type(sim.device("cortex-m4")) is BitwiseDevice
    assert type(sim.device("x86-avx2")) is TorchDevice   # cpu -> the torch engine
    prof = load("h100")
    assert sim.device(prof).profile is prof               # the object, not a reload


def test_device_without_engine_for_kind(monkeypatch):
    engines = importlib.import_module("sim.engines")     # where sim.device() picks the engine
    monkeypatch.setattr(engines, "_import_engines", lambda: None)  # engines imported
    monkeypatch.delitem(ENGINES, "gpu")
    with pytest.raises(ProfileError, match=r"^profile 'a100' is of kind 'gpu', which no engine "
                                           r"serves; engines available now serve kinds "
                                           r"bitwise, cpu, neuromorphic$"):
        sim.device("a100")


def test_register_engine_needs_the_kind_in_the_class_kinds():
    class Dummy(Device):
        kinds = ("gpu",)

        def compile(self, model):
            return model

        def run(self, *a, **k):
            return None

    with pytest.raises(NeuroedgeError, match=r"^register_engine: Dummy.kinds = \('gpu',\) does "
                                             r"not include 'bitwise'"):
        register_engine("bitwise", Dummy)
    with pytest.raises(NeuroedgeError, match=r"^register_engine: kind 'gpu' already has engine "
                                             r"TorchDevice; refusing Dummy$"):
        register_engine("gpu", Dummy)
    assert ENGINES["gpu"] is TorchDevice


class _Recorder(Device):
    """The smallest engine: it records one op per ``run`` through the ledger."""
    kinds = ("gpu",)

    def compile(self, model):
        return model

    def run(self, n=1):
        self.ledger.add("int_add", n)


def test_register_engine_twice_for_a_kind_raises(monkeypatch):
    monkeypatch.delitem(ENGINES, "gpu")        # restored after the test
    register_engine("gpu", _Recorder)
    with pytest.raises(NeuroedgeError, match=r"^register_engine: kind 'gpu' already has engine "
                                             r"_Recorder; refusing _Recorder$") as err:
        register_engine("gpu", _Recorder)
    assert "\n" not in str(err.value)
    assert ENGINES["gpu"] is _Recorder


def test_base_count_nests_and_adds_samples_at_the_block_scope():
    dev = _Recorder("a100")
    with dev.ledger.scope("run"), dev.count("train", samples=4):
        dev.run(1)
        with dev.count("a", samples=2):
            dev.run(5)
    assert dev.ledger.ops("run/train") == {"int_add": 1}
    assert dev.ledger.ops("run/train/a") == {"int_add": 5}
    assert dev.ledger.total_ops("run/train") == {"int_add": 6}      # 1 + 5: sub-scopes count
    assert dev.ledger.samples() == {"run/train": 4, "run/train/a": 2}
    with pytest.raises(RuntimeError), dev.count("failed", samples=3):
        raise RuntimeError
    assert "failed" not in dev.ledger.samples()          # a block that raised adds no samples


def test_every_engine_counts_by_the_same_rule():
    """TorchDevice overrides count() (it installs a dispatch mode); the others inherit it."""
    assert BitwiseDevice.count is Device.count
    assert TorchDevice.count is not Device.count


@pytest.mark.parametrize("options", [{"replay": True}, {"replay": "bogus"},
                                     {"prefer_cuda": False}])
def test_neuromorphic_device_refuses_the_torch_engines_options(options):
    # they were silently ignored: sim.device("loihi2", replay=True) counted without replay
    # and said nothing
    with pytest.raises(ModelError, match="takes no options.*torch engine"):
        sim.device("loihi2", **options)
    with pytest.raises(ModelError, match="takes no options"):
        NeuromorphicDevice("loihi2", **options)
