"""The shipped validation table loads, and every malformed entry is refused by name."""
import tomllib

import pytest

from hw_profiles.errors import ProfileError
from hw_profiles.validation import TABLE_PATH, from_dict, load_table


def _doc():
    return tomllib.loads(TABLE_PATH.read_text())


def test_shipped_table_rows_kinds_and_calibration_group():
    rows = load_table()
    assert len(rows) >= 70
    assert {r.kind for r in rows} == {"neuromorphic", "gpu", "cpu", "bitwise"}
    assert {r.device_kind for r in rows} >= {"mcu", "cpu", "gpu", "edge-gpu", "vpu", "neuromorphic"}
    assert len({r.id for r in rows}) == len(rows)
    cal = [r for r in rows if r.group == "calibration"]
    # TrueNorth's profile numbers came from its row; on the MCUs one keyword-spotting row
    # (convolutions) and one anomaly-detection row (dense layers) per part and stack (9
    # stacks on the L4R5, 5 on the H7A3) calibrate that stack
    mcu = [r for r in cal if r.kind == "bitwise"]
    assert [r.id for r in cal if r.kind != "bitwise"] == ["truenorth-rate-20hz"]
    assert len(mcu) == 28
    for workload in ("ds_cnn_kws", "fc_autoencoder_ad"):
        assert len({(r.profile, r.stack) for r in mcu if r.workload == workload}) == 14
    # the two rows of a stack are of one submission: the same id but for the benchmark
    assert {r.id.replace("-ad-", "-kws-") for r in mcu} == \
        {r.id for r in mcu if r.workload == "ds_cnn_kws"}
    # every MCU row is on the measured part and names its stack
    assert all(r.part == "same" and r.stack for r in rows if r.kind == "bitwise")


def test_mlperf_tiny_figures_as_published():
    rows = {r.id: r for r in load_table()}
    # energy/results.txt 'Median energy cost is ... uJ/inf.' of the L4R5 KWS submissions
    assert rows["l4r5-kws-tflm-2.3.1-v0.5"].measured_j == 0.007373704
    assert rows["l4r5-kws-microtvm-cmsis-nn-v1.0"].measured_j == 0.005230273
    assert rows["l4r5-kws-xcube-ai-9.0-v1.2"].measured_j == 0.001820454
    # latency = 1 / 'Median throughput' 13.323 inf./sec; the board at 1.8 V, Krai's at 3.0 V
    assert rows["l4r5-kws-xcube-ai-7.3-v1.0"].measured_latency_s == pytest.approx(1 / 13.323,
                                                                                rel=1e-6)
    assert rows["l4r5-kws-xcube-ai-7.3-v1.0"].supply_v == 1.8
    assert rows["l4r5-kws-xcube-ai-7.3-v1.1-krai"].supply_v == 3.0
    # OctoML's system description states no voltage: none is made up
    assert rows["l4r5-kws-microtvm-cmsis-nn-v1.0"].supply_v is None


def test_blouw_figures_as_published():
    rows = {r.id: r for r in load_table()}
    # Table 1: 0.081 W / 296 inf/s = 0.27 mJ; 11.47 W / 1813.63 inf/s = 6.3 mJ
    assert rows["loihi-kws-blouw2019"].measured_j == 0.00027
    assert rows["cpu-kws-blouw2019"].measured_j == 0.0063
    assert rows["loihi-kws-blouw2019"].measured_latency_s == pytest.approx(1 / 296, rel=1e-4)
    assert rows["loihi-kws-blouw2019"].missing  # activity on the chip is not published
    # the other three devices of Table 1: dynamic W / inf/s, e.g. GPU 22.86 / 770.39 = 0.0297
    assert rows["gpu-kws-blouw2019"].measured_j == 0.0298
    assert rows["jetson-tx1-kws-blouw2019"].measured_j == 0.0056
    assert rows["movidius-ncs-kws-blouw2019"].measured_j == 0.0015
    # every device of Table 1 but Loihi is priced on a profile of the part that was measured
    # (hw_profiles/data/NAME.toml), never on a neighbour's
    parts = {"cpu-kws-blouw2019": ("xeon-e5-2630", "cpu"),
             "gpu-kws-blouw2019": ("quadro-k4000", "gpu"),
             "jetson-tx1-kws-blouw2019": ("jetson-tx1", "edge-gpu"),
             "movidius-ncs-kws-blouw2019": ("movidius-ncs", "vpu")}
    for rid, (profile, device_kind) in parts.items():
        r = rows[rid]
        assert (r.profile, r.part, r.device_kind) == (profile, "same", device_kind)
        assert r.group == "held-out" and r.idle_subtracted and not r.missing
        assert r.workload == "mlp" and r.params["batch"] == 1
    # the NCSDK runs a compiled fp16 graph on the stick; TensorFlow 1.x runs fp32 op by op,
    # one session.run per inference from Python
    assert rows["movidius-ncs-kws-blouw2019"].params["precision"] == "fp16"
    assert rows["movidius-ncs-kws-blouw2019"].stack == "graph"
    assert {rows[r].stack for r in ("cpu-kws-blouw2019", "gpu-kws-blouw2019",
                                    "jetson-tx1-kws-blouw2019")} == {"tf1-session"}


def test_a_row_without_profile_must_say_why_and_not_be_priced():
    doc = _doc()
    e = next(x for x in doc["entry"] if x["id"] == "gpu-kws-blouw2019")
    e["profile"] = ""
    e.pop("device_kind", None)
    with pytest.raises(ProfileError, match="profile = '' .* needs workload = ''"):
        from_dict(doc)


@pytest.mark.parametrize("key,value,match", [
    ("kind", "fpga", "kind = 'fpga'"),
    ("profile", "loihi3", "not a shipped profile"),
    ("kind", "gpu", "is of kind 'neuromorphic'"),
    ("part", "similar", "part = 'similar'"),
    ("group", "train", "group = 'train'"),
    ("measured_j", 0.0, "measured_j = 0.0"),
    ("measured_j", -1e-3, "finite number > 0"),
    ("source_url", "doi:10.1126/science.1254642", "http"),
    ("colour", "red", "unknown key 'colour'"),
    ("supply_v", 0.0, r"supply_v = 0.0: expected a finite number > 0 \(V\)"),
    ("device_kind", "tpu", "device_kind = 'tpu'; expected one of mcu"),
])
def test_bad_entry_is_refused(key, value, match):
    doc = _doc()
    doc["entry"][0][key] = value
    with pytest.raises(ProfileError, match=match):
        from_dict(doc, "validation.toml")


def test_missing_key_and_duplicate_id_and_unexplained_gap():
    doc = _doc()
    del doc["entry"][0]["conditions"]
    with pytest.raises(ProfileError, match="missing required key 'conditions'"):
        from_dict(doc)
    doc = _doc()
    doc["entry"][1]["id"] = doc["entry"][0]["id"]
    with pytest.raises(ProfileError, match="used twice"):
        from_dict(doc)
    doc = _doc()
    kws = next(e for e in doc["entry"] if e["id"] == "loihi-kws-blouw2019")
    kws.pop("missing")     # the Loihi KWS row has no workload
    with pytest.raises(ProfileError, match="needs a 'missing'"):
        from_dict(doc)
    doc = _doc()
    doc["schema_version"] = 2
    with pytest.raises(ProfileError, match="schema_version"):
        from_dict(doc)


def test_readme_counts_the_shipped_rows():
    """README.md's row counts are the table's: all rows, and those with a rebuildable
    workload (the others say what is missing)."""
    from pathlib import Path
    rows = load_table()
    text = (Path(__file__).resolve().parents[2] / "README.md").read_text()
    n, rebuilt = len(rows), sum(bool(r.workload) for r in rows)
    assert f"rebuilds {n} published measurements of real chips ({rebuilt} predicted)" in \
        " ".join(text.split())


def test_rows_of_one_profile_name_one_device_kind():
    """A profile prices one device: its rows' device kind is the profile's (the kind whose
    held-out error its reports show, hw_profiles.validation.error_rows), so two rows of one
    profile naming two device kinds are refused, naming both."""
    doc = _doc()
    e = next(x for x in doc["entry"] if x["id"] == "gpu-resnet50-orin-mlperf")
    twin = {**e, "id": "orin-twin", "device_kind": "gpu"}
    doc["entry"].append(twin)
    with pytest.raises(ProfileError, match=r"^validation.toml \[\[entry\]\] 'orin-twin': "
                                           r"device_kind = 'gpu' but row "
                                           r"'gpu-resnet50-orin-mlperf' prices profile "
                                           r"'jetson-orin' as 'edge-gpu'; the rows of one "
                                           r"profile name one device kind$"):
        from_dict(doc, "validation.toml")


def _summary(tmp_path):
    """A summary as bench/validate.py --write-summary writes it, with hand numbers: gpu
    profiles' held-out rows on an Orin and a TX1 (edge-gpu) and a K4000 (gpu)."""
    import json
    f = {"energy_median_factor": 2.0, "energy_worst_factor": 4.0,
         "latency_median_factor": None, "latency_worst_factor": None}
    doc = {"kinds": {"gpu": {"rows": 3, "median_rel_error": 0.5, "min_ratio": 0.25,
                             "max_ratio": 1.2}},
           "device_kinds": {
               "edge-gpu": {"rows": 2, **f, "median_rel_error": 0.35, "min_ratio": 0.5,
                            "max_ratio": 1.2, "profiles": ["jetson-orin", "jetson-tx1"]},
               "gpu": {"rows": 1, **f, "median_rel_error": 0.75, "min_ratio": 0.25,
                       "max_ratio": 0.25, "profiles": ["quadro-k4000"]}},
           "kind_factors": {"gpu": {"rows": 3, **f, "device_kinds": ["edge-gpu", "gpu"],
                                    "profiles": ["jetson-orin", "jetson-tx1",
                                                 "quadro-k4000"]}},
           "stacks": {}, "profiles": {},
           "profile_device_kinds": {"jetson-orin": "edge-gpu", "jetson-tx1": "edge-gpu",
                                    "quadro-k4000": "gpu"}}
    path = tmp_path / "summary.json"
    path.write_text(json.dumps(doc))
    return path


def test_a_profile_shows_its_own_device_kinds_rows(tmp_path):
    """error_rows: a profile a row prices shows its device kind's rows (the Orin: the two
    edge-gpu rows, median |r - 1| 0.35), never its profile kind's mixed with other device
    kinds (the gpu-profile median 0.5 over edge GPUs and a K4000)."""
    from hw_profiles.validation import error_rows, heldout_error
    path = _summary(tmp_path)
    orin = error_rows("gpu", "jetson-orin", path)
    assert orin == {"device_kinds": ["edge-gpu"], "profiles": ["jetson-orin", "jetson-tx1"],
                    "rows": 2, "median_rel_error": 0.35, "min_ratio": 0.5, "max_ratio": 1.2,
                    "measured": True}
    assert error_rows("gpu", "quadro-k4000", path)["median_rel_error"] == 0.75
    err = heldout_error("gpu", "eager", path, profile="jetson-orin")
    assert (err["rows"], err["device_kinds"], err["measured"]) == (2, ["edge-gpu"], True)


def test_a_profile_no_row_prices_shows_its_profile_kinds_rows_by_device_kind(tmp_path):
    """error_rows: no row prices a100, so it has no device kind the table knows: its report
    shows the gpu-profile rows (3, median 0.5), named by their device kinds and profiles,
    and measured is False (the report says none ran on a100)."""
    from hw_profiles.validation import error_rows, heldout_error
    path = _summary(tmp_path)
    assert error_rows("gpu", "a100", path) == {
        "device_kinds": ["edge-gpu", "gpu"],
        "profiles": ["jetson-orin", "jetson-tx1", "quadro-k4000"], "rows": 3,
        "median_rel_error": 0.5, "min_ratio": 0.25, "max_ratio": 1.2, "measured": False}
    err = heldout_error("gpu", "eager", path, profile="a100")
    assert (err["rows"], err["measured"], err["for_profile"]) == (3, False, "a100")
    assert error_rows("cpu", "x86-avx2", path) is None       # no cpu-profile row at all


def test_a_summary_without_whose_rows_is_refused(tmp_path):
    """A summary written before it named each device kind's profiles cannot say whose rows a
    figure is: refused, saying how to rewrite it (never read as nobody's rows)."""
    import json

    from hw_profiles.validation import error_rows
    path = _summary(tmp_path)
    doc = json.loads(path.read_text())
    del doc["device_kinds"]["gpu"]["profiles"]
    path.write_text(json.dumps(doc))
    with pytest.raises(ProfileError, match=r"not a validation summary \(KeyError: 'profiles'\)"
                                           r"; rewrite it with python bench/validate.py "
                                           r"--write-summary$"):
        error_rows("gpu", "a100", path)


def test_truenorth_calibration_row_quotes_the_72_mw_and_the_3_percent():
    """Merolla 2014 p.7: "the total measured power was 72mW (at 0.775V operating voltage),
    corresponding to 26pJ per synaptic event"; the row said "~65-70 mW". The profile's split
    uses the nominal rate: 1,048,576 x 20 Hz x 128 = 2.684e9 /s x 26 pJ = 69.8 mW, 3% under
    72 mW, so its static power (26 - 2.5 pJ) x 2.684e9 /s = 63.1 mW is 2.2 mW under."""
    from hw_profiles import load
    row = next(r for r in load_table() if r.id == "truenorth-rate-20hz")
    watts = row.measured_j * 1_048_576 * 20 * 128      # the row's 26 pJ at the nominal rate
    assert "65-70" not in row.conditions
    assert "the total measured power was 72mW (at 0.775V operating voltage), corresponding " \
        "to 26pJ per synaptic event" in row.conditions
    assert (f"26 pJ x 2.684e9 /s = {watts * 1e3:.1f} mW, {round(100 * (1 - watts / 0.072))}% "
            "under the 72 mW measured") in row.note
    # the profile's static power, as the note quotes it
    assert f"{load('truenorth').static_power_w.value * 1e3:.1f} mW" in row.note


def test_orin_row_says_the_profile_prices_another_configuration():
    """The jetson-orin profile is the module at MAXN (60 W, 2.18 W idle); the measurement is
    the whole developer kit at the wall at MaxQ, whose log reads 5.80-5.82 W between runs:
    x (1 / 694.80 queries/s = 1.439 ms) = 8.35-8.38 mJ of the 20.0 mJ."""
    from hw_profiles import load
    row = next(r for r in load_table() if r.id == "gpu-resnet50-orin-mlperf")
    prof = load("jetson-orin")
    assert prof.static_power_w.value == 2.18 and "60 W max" in prof.description
    floor = [f"{w / 694.80 * 1e3:.2f}" for w in (5.80, 5.82)]   # W x s per query, in mJ
    assert round(row.measured_j * 1e3, 1) == 20.0
    for text in ("MaxQ", "MAXN (60 W board power, 2.18 W idle", "~5.8 W at the wall between "
                 "runs", f"{floor[0]}-{floor[1]} mJ of the 20.0 mJ"):
        assert text in row.conditions, text
    assert "Not like for like" in row.note and "(1.12)" in row.note
