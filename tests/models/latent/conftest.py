"""One torch thread for the room's tests, as ``simulate`` runs: on the shared 2-core machine
two intra-op threads on these tiny tensors wait on each other (a 60-step warm-up took 128 s
with two threads at load ~10, a few seconds with one)."""
import pytest
import torch


@pytest.fixture(autouse=True)
def one_torch_thread():
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)
