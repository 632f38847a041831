"""Screener's pictures (``models/screener/pictures.py``): the heat panel and the grid."""
import numpy as np

from models.screener.data import make_volumes
from models.screener.pictures import heat_panel, pictures


def test_heat_panel_draws_the_outline_and_the_heat():
    img = np.full((4, 4), 0.5)
    les = np.zeros((4, 4), bool)
    les[1:3, 1:3] = True                       # a 2x2 lesion -> 4x4 zoomed at zoom 2
    plain = heat_panel(img, None, les, zoom=2)
    assert plain.shape == (8, 8, 3)
    # the zoomed lesion is rows/cols 2..5; its boundary is the 12 pixels of its rim
    cyan = (plain == (0.0, 1.0, 1.0)).all(-1)
    assert cyan.sum() == 12 and cyan[2, 2] and not cyan[3, 3]
    np.testing.assert_array_equal(plain[0, 0], (0.5, 0.5, 0.5))    # no heat: plain grey
    hot = heat_panel(img, np.ones((4, 4)), les, zoom=2)
    # heat 1: alpha 0.85 of inferno's top colour over grey 0.5, so not grey any more
    assert not np.allclose(hot[0, 0], 0.5) and (hot >= 0).all() and (hot <= 1).all()


def test_pictures_grid_holds_every_panel():
    vols = make_volumes(2, (8, 12, 12), contamination=1.0, seed=0)
    maps = {"a": np.random.default_rng(0).random(vols.x.shape), "b": vols.lesion * 1.0}
    pic = pictures(vols, maps, zoom=2, cols=2)
    # 3 panels in 2 columns -> 2 rows of (12*2 + 2) px, 2 columns of (12*2 + 2) px
    assert pic.shape == (2, 52, 52, 3)
    assert (pic[:, 26:, 26:] == 1.0).all()     # the fourth slot is empty (white)
