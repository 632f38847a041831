"""One torch thread for this room's tests: on the shared 2-core machine two threads contend
with the other processes and a 0.3 s kNN takes 6 s; restored after each module."""
import pytest
import torch


@pytest.fixture(autouse=True, scope="module")
def one_thread():
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)
