"""The KLAS pipeline at a tiny size: everything counted, seeded, summarised, the stitch kept."""
import numpy as np
import pytest
import torch
from conftest import TOY_GPU

import sim
from models.klas import model as km
from models.klas.card import KLASConfig, load_data
from sim.errors import ModelError

TINY = dict(widths=(8, 12, 16), heads=(2, 2, 2), depth=2, n_train=256, n_val=64, n_test=128,
            ls_samples=32, anchor_epochs=1, probe_epochs=1, stitch_steps=3, supernet_steps=6,
            n_buckets=2, batch_size=32)


def tiny(seed=0):
    torch.set_num_threads(1)
    cfg = KLASConfig.quick(**TINY, seed=seed)
    return km.run(cfg, sim.device(TOY_GPU), load_data("fashion-mnist", cfg))


@pytest.fixture(scope="module")
def tiny_run(fashion_mnist):
    return tiny()


def test_tiny_pipeline_runs_end_to_end_and_counts_everything(tiny_run):
    cfg, res = tiny_run["config"], tiny_run
    assert len(res["stitches"]) == 3 * 2 * 1                      # 3 pairs x i in 1..2 x j = 1
    led = res["device"].ledger
    assert led.uncounted() == {}
    samples = led.samples()
    # anchors: 1 epoch of 256 images in batches of 32 = 8 steps of 32 random images
    assert samples["train/anchor0"] == 8 * 32 and samples["infer/anchor2"] == 128
    # fine-tunes and supernets draw batches of 32 // 2 = 16: 3 and 6 steps
    assert samples["train/finetune/s01-1-1"] == 3 * 16
    assert samples["train/supernet/klas"] == 6 * 16
    assert samples["score/features"] == 3 * 32                    # 3 anchors x ls_samples
    for scope in ("train/anchor0", "train/probe/anchor2", "score/anchor1",
                  "train/finetune/s01-1-1", "train/supernet/klas", "train/supernet/snnet",
                  "infer/ls/s12-2-1"):
        assert led.total_ops(scope).get("mac_fp32", 0) > 0, scope
    fl = res["anchor_flops"]
    assert fl[0] < fl[1] < fl[2]
    for s, row in res["table"].items():                           # FLOPs the ledger recorded
        ops = led.total_ops(f"infer/ls/{s.name}")
        want = sum(2 * n if op.startswith("mac_") else n for op, n in ops.items()
                   if op.startswith(("mac_", "flop_"))) / cfg.n_test
        assert row["flops"] == want and row["gamma"] >= 0
    assert res["selected"]["klas"] and all(0 <= r["auc"] <= 1 for r in res["supernets"].values())


def test_summary_metrics_facts_and_stitch_table(tiny_run):
    metrics, facts, traces = km.summarise(tiny_run)
    table = traces["stitches"]
    assert table.kind == "table" and table.columns == km.STITCH_COLUMNS
    assert table.data.shape == (6, len(km.STITCH_COLUMNS))
    for row, s in zip(table.data, tiny_run["stitches"], strict=True):
        assert tuple(row[:4]) == (s.front, s.back, s.i, s.j)
        assert row[5] == tiny_run["table"][s]["gamma"]
    assert metrics["spearman_klas_gamma_vs_acc_ft"] == \
        tiny_run["corr"]["acc_ft"]["klas_gamma"]["spearman"]
    assert metrics["n_selected_snnet"] == 2 * 2                   # depth 2: i=1: j=1; i=2: j=1
    assert facts["export_stitch"] in facts["selected"]["klas"]


def test_same_seed_same_scores_and_accuracies(tiny_run):
    again = tiny()
    for s, row in tiny_run["table"].items():
        for key in ("gamma", "cka", "flops", "acc_ls", "acc_ft"):
            assert again["table"][s][key] == row[key], (s.name, key)
    assert again["supernets"]["klas"]["acc"] == tiny_run["supernets"]["klas"]["acc"]


def test_trained_state_rebuilds_the_exported_stitch(tiny_run):
    chosen = km.export_choice(tiny_run)
    mid = 0.5 * (tiny_run["anchor_flops"][0] + tiny_run["anchor_flops"][-1])
    assert all(abs(tiny_run["table"][chosen]["flops"] - mid)
               <= abs(tiny_run["table"][s]["flops"] - mid) for s in tiny_run["selected"]["klas"])
    x = torch.rand(5, 784, generator=torch.Generator().manual_seed(1))
    state = km.trained(tiny_run, x.numpy())
    assert state.meta["stitch"] == chosen.name and (state.meta["i"], state.meta["j"]) == \
        (chosen.i, chosen.j)
    net = km.rebuild(state)
    original = tiny_run["supernets"]["klas"]["nets"][chosen.name].cpu().eval()
    with torch.no_grad():
        assert torch.equal(net(x), original(x))
    # the supernet's accuracy of that stitch, recomputed from the rebuilt module
    data = load_data("fashion-mnist", tiny_run["config"])
    with torch.no_grad():
        right = int((net(torch.as_tensor(data.x_test)).argmax(1).numpy() == data.y_test).sum())
    acc = tiny_run["supernets"]["klas"]["acc"][chosen.name]
    assert right == round(128 * acc)                              # of 128 (float32 mean)
    assert np.array_equal(state.arrays["example_x"], x.numpy())


def test_neurobench_counts_the_exported_stitch_not_every_model(tiny_run):
    from sim.neurobench import metrics
    from sim.torch_engine.activity import model_facts
    led = tiny_run["device"].ledger
    # recorded: anchors, probe sets, stitch layers, fine-tune and supernet copies (the quick
    # preset summed 62 models: 527,954 parameters); NeuroBench's model is the exported stitch
    own = model_facts(km.rebuild(km.trained(tiny_run, np.zeros((1, 784), np.float32))))
    nb = metrics(led)
    assert len(led.deployed()) == 1 and len(led.models()) > 10
    assert nb["ParameterCount"] == own["parameters"]
    assert nb["Footprint"] == own["parameter_bytes"] + own["buffer_bytes"]


def test_config_errors():
    with pytest.raises(ModelError, match="increasing widths"):
        KLASConfig(widths=(64, 32, 16))
    with pytest.raises(ModelError, match="stitch_steps = 0"):
        KLASConfig(stitch_steps=0)
    # batch_size = 1: the stitch fine-tunes and the supernet drew batches of 1 // 2 = 0
    # images, a NaN loss with zero gradients, so no stitch was fine-tuned, silently
    with pytest.raises(ModelError, match=r"batch_size = 1: must be >= 2 \(the stitch"):
        KLASConfig(batch_size=1)
    # equal widths: every anchor (and stitch) had the same FLOPs, and bucket_edges failed on
    # the empty range [F, F] with a message naming no setting
    with pytest.raises(ModelError, match=r"widths = \(8, 8, 8\): .* \(strictly increasing"):
        KLASConfig(widths=(8, 8, 8), heads=(2, 2, 2))
    with pytest.raises(ModelError, match="tau = -0.1"):
        KLASConfig(tau=-0.1)
    with pytest.raises(ModelError, match="dataset 'digits' is not supported"):
        load_data("digits", KLASConfig())


def test_constant_column_has_no_rank_correlation():
    # n_test = 1: every stitch's accuracy was 0 or 1 on the one image, here all the same,
    # and spearmanr / kendalltau of a constant column are NaN (reported as metrics)
    from models.klas.model import check_rankable
    col = {"gamma": np.array([0.5, 0.7, 0.9]), "omega": np.array([1.0, 2.0, 3.0]),
           "cka": np.array([0.1, 0.2, 0.3]), "acc_ls": np.array([0.0, 1.0, 1.0]),
           "acc_ft": np.array([1.0, 1.0, 1.0])}
    check_rankable({**col, "acc_ft": np.array([1.0, 0.0, 1.0])}, KLASConfig.quick())
    with pytest.raises(ModelError, match=r"all 3 stitches have the same acc_ft \(1; n_test = "
                                         r"1, n_val = 300\): no ranking to correlate"):
        check_rankable(col, KLASConfig.quick(n_test=1))
    # a diverged anchor gives NaN KL scores, whose correlations were NaN too
    with pytest.raises(ModelError, match=r"the stitches' gamma is not finite: training "
                                         r"diverged \(lr = 0.003, probe_lr = 0.01\)"):
        check_rankable({**col, "gamma": np.array([0.5, np.nan, 0.9])}, KLASConfig.quick())


def test_diverged_anchor_is_refused(toy_gpu_path):
    # lr = 1e6 left non-finite anchor weights, refused only later by theta_matrix without
    # naming a setting; lr = inf makes the first Adam step inf for every weight with a
    # nonzero gradient (no chance involved)
    import sim
    from models.klas.model import train_anchors
    cfg = KLASConfig(widths=(4, 8), heads=(1, 1), depth=2, lr=float("inf"), batch_size=4,
                     anchor_epochs=1)
    dev = sim.device(toy_gpu_path)
    # on the engine's device, as run() puts the data (train_anchors indexes x there)
    x = torch.rand(8, 784).to(dev.torch_device)
    y = (torch.arange(8) % 10).to(dev.torch_device)
    with pytest.raises(ModelError, match=r"anchor 0 \(width 4\) has non-finite weights after "
                                         r"training: it diverged \(lr = inf\); lower lr"):
        train_anchors(cfg, dev, x, y)
