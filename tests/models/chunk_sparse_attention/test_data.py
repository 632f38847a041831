"""The needle task (data.py): vocabulary layout, minimum length, sequence layout, errors."""
import numpy as np
import pytest

from models.chunk_sparse_attention.data import NeedleTask
from sim.errors import ModelError


def test_vocabulary_layout():
    task = NeedleTask()
    # filler 0..15, needles 16 + k * 4 + v (16 of them: 16..31), keys 32..35, values 36..39,
    # the query marker 40: 41 tokens
    assert (task.key_base, task.value_base, task.query_token, task.vocab) == (32, 36, 40, 41)
    # 3 tokens per query (Q key value) x 4 = 12, plus one chunk of 16 for the needles and
    # one more so the queries start after a complete chunk: 12 + 16 * 2 = 44
    assert task.min_length(16) == 44
    # 5 needles in chunks of 4: 15 query tokens + 4 * (1 + 2) = 27
    assert NeedleTask(n_keys=5, n_pairs=5).min_length(4) == 27


def test_task_layout():
    task = NeedleTask()
    tok, q, ans, needle = task.batch(np.random.default_rng(0), 5, 200, 16)
    rows = np.arange(5)[:, None]
    assert tok.shape == (5, 200) and q.shape == ans.shape == needle.shape == (5, 4)
    # the queries fill the last 12 positions: Q at 188, 191, 194, 197, the keys after them
    assert (q == [189, 192, 195, 198]).all()
    assert (tok[rows, q - 1] == task.query_token).all()
    assert (tok[rows, q + 1] == ans).all()
    # the needle asked for holds the queried key and the answer value
    key = tok[rows, q] - task.key_base
    val = ans - task.value_base
    assert (tok[rows, needle] == task.n_filler + key * task.n_values + val).all()
    assert (needle < ((200 - 12) // 16) * 16).all()              # complete chunks before Q
    # every key is asked exactly once per sequence (4 keys, 4 pairs)
    assert (np.sort(key, axis=1) == np.arange(4)).all()
    # the haystack before the queries holds exactly the 4 needles, the rest is filler
    hay = tok[:, :188]
    assert ((hay >= task.n_filler) & (hay < task.key_base)).sum(axis=1).tolist() == [4] * 5


def test_same_seed_same_batch():
    a = NeedleTask().batch(np.random.default_rng(3), 2, 64, 16)
    b = NeedleTask().batch(np.random.default_rng(3), 2, 64, 16)
    for x, y in zip(a, b, strict=True):
        assert np.array_equal(x, y)


def test_bad_inputs():
    with pytest.raises(ModelError, match="n_pairs = 5 > n_keys = 4"):
        NeedleTask(n_pairs=5)
    with pytest.raises(ModelError, match="n_values = 0: must be >= 1"):
        NeedleTask(n_values=0)
    with pytest.raises(ModelError, match="length = 40 is too short .* need >= 44"):
        NeedleTask().batch(np.random.default_rng(0), 1, 40, 16)


def test_several_keys_per_chunk():
    """keys_per_chunk = 2: the 4 needles fill exactly 2 chunks, 2 in each, at distinct slots."""
    task = NeedleTask(keys_per_chunk=2)
    tok, q, ans, needle = task.batch(np.random.default_rng(1), 50, 256, 16)
    hay = (tok >= task.n_filler) & (tok < task.key_base)
    assert hay.sum(axis=1).tolist() == [4] * 50                # 4 needles, none overwritten
    per_chunk = hay[:, :240].reshape(50, 15, 16).sum(axis=2)   # 256 - 12 -> 15 whole chunks
    assert (np.sort(per_chunk, axis=1)[:, -2:] == 2).all() and (per_chunk.sum(1) == 4).all()
    # the asked needle still holds the queried key and the answer
    rows = np.arange(50)[:, None]
    key, val = tok[rows, q] - task.key_base, ans - task.value_base
    assert (tok[rows, needle] == task.n_filler + key * task.n_values + val).all()
    # 12 query tokens + 16 * (1 + 4 / 2) = 60
    assert task.min_length(16) == 60
    with pytest.raises(ModelError, match="keys_per_chunk = 3: must divide n_pairs = 4"):
        NeedleTask(keys_per_chunk=3)
