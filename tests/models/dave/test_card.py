"""DAVE's config refuses what the pipeline cannot run, with one-line errors."""
import pytest

from models.dave.card import PRESETS, DaveConfig
from sim.errors import ModelError


@pytest.mark.parametrize("bad, match", [
    ({"decoders": 1}, r"^DaveConfig.decoders = 1: must be 2..3 \(merging needs two copies\)$"),
    ({"patch": 7}, r"^DaveConfig.patch = 7: must divide side = 64$"),
    ({"heads": 3}, r"^DaveConfig.heads = 3: must divide width = 64$"),
    ({"dec_width": 12}, r"^DaveConfig.dec_width = 12: must be a multiple of 8"),
    ({"mask_ratio": 1.0}, r"^DaveConfig.mask_ratio = 1.0: must lie strictly between 0 and 1$"),
    ({"merge_lr": 0.0}, r"^DaveConfig.merge_lr = 0.0: must be > 0$"),
    # 64 patches: round(64 x (1 - 0.0078125)) = round(63.5) = 64 visible (half to even),
    # none masked and the MAE loss 0/0; 1/64 masks exactly one
    ({"mask_ratio": 0.0078125},
     r"^DaveConfig.mask_ratio = 0.0078125: masks none of the 64 patches; give >= 1/64"),
    ({"patch": 4, "mask_ratio": 0.001}, r"masks none of the 256 patches; give >= 1/256"),
])
def test_config_refuses(bad, match):
    with pytest.raises(ModelError, match=match):
        DaveConfig(**bad)


def test_the_smallest_ratio_asked_for_masks_one_patch():
    from models.dave.card import visible_patches
    assert visible_patches(64, 1 / 64) == 63 and visible_patches(256, 1 / 256) == 255
    DaveConfig(mask_ratio=1 / 64)


def test_full_preset_is_a_valid_config():
    cfg = DaveConfig(**PRESETS["full"]["fashion-mnist"])
    assert cfg.decoders == 3 and cfg.mae_steps == 2000


def test_full_preset_has_the_plans_widths():
    """The digest's plan: encoder 128 x 4, MAE decoder 64 x 2, decoder B 128 wide, C 64,
    the held-out D 96."""
    from models.dave.model import DECODERS, MAE, new_vit
    cfg = DaveConfig(**PRESETS["full"]["fashion-mnist"])
    assert (cfg.width, cfg.depth) == (128, 4)
    mae = MAE(new_vit(cfg), cfg.mae_dec_width, cfg.mae_dec_depth)
    assert mae.out.in_features == 64 and len(mae.blocks.layers) == 2
    widths = {n: DECODERS[n][0](2 * cfg.width, cfg.dec_width).out.in_features
              for n in ("tf2", "tf1_class", "heldout")}
    assert widths == {"tf2": 128, "tf1_class": 64, "heldout": 96}
