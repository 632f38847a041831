"""DISCO's procedural point sets: a background that leaves too few cluster points."""
import pytest

from models.disco import data
from sim.errors import ModelError


@pytest.mark.parametrize("n, noise_frac, left", [(20, 0.97, 1), (1000, 0.9996, 0)])
def test_a_background_leaving_under_two_cluster_points_is_refused(n, noise_frac, left):
    # round(0.97 x 20) = round(19.4) = 19 background points leave 1 cluster point, whose std
    # 0 made the scaling nan and rng.uniform raise OverflowError; round(999.6) = 1000 leaves 0
    with pytest.raises(ModelError, match=rf"noise_frac = {noise_frac} of n = {n} leaves "
                                         rf"{left} cluster point\(s\)"):
        data.make("moons", n, noise_frac, 0)
    # round(0.9 x 20) = 18 leaves 2: a defined data set (2 cluster points, 18 background)
    assert (data.make("moons", 20, 0.9, 0).y == -1).sum() == 18
