"""estimate(..., stack=...) and ``neuroedge estimate --stack``: a run priced for a chosen
software stack, the stack stated on every profile's error line, bad names refused."""
import pytest
import torch

from deploy.estimate import estimate
from deploy.estimate_text import table
from hw_profiles.errors import NeuroedgeError


def _net():
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 4))


def test_graph_stack_drops_exactly_the_launch_time():
    eager = estimate(_net(), (1, 8), profiles="a100")
    graph = estimate(_net(), (1, 8), profiles="a100", stack="graph")
    e, g = eager.reports["a100"], graph.reports["a100"]
    assert (e.stack, g.stack) == ("eager", "graph")
    # eager = graph + kernel launches x launch_s (the only stack-dependent term)
    launches = eager.ledgers["a100"].total_ops()["kernel_launch"]
    from hw_profiles import load
    launch_s = load("a100").execution["launch_s"].value
    assert e.total_latency_s - g.total_latency_s == pytest.approx(launches * launch_s)
    assert graph.rows()[0]["stack"] == "graph" and graph.rows()[0]["stack_asked"]
    assert not eager.rows()[0]["stack_asked"]


def test_error_lines_say_asked_or_default():
    est = estimate(_net(), (1, 8), profiles="a100,stm32l4r5",
                   stack="stm32l4r5=xcube-ai-7.3")
    text = table(est)
    assert "error a100 (stack eager, the default;" in text
    # an fp32 model: X-CUBE-AI 7.3's fitted cycles are for int8 layers, so the figures are
    # the manual's peak ones, and the line says so (it said "stack xcube-ai-7.3, asked" for
    # figures equal to peak's)
    assert ("error stm32l4r5 (stack peak, xcube-ai-7.3 asked, which sets none of these "
            "ops;") in text
    est = estimate(_net(), (1, 8), profiles="stm32l4r5", stack="xcube-ai-7.3", dtype="int8")
    assert "error stm32l4r5 (stack xcube-ai-7.3, asked;" in table(est)


def test_a_kernel_library_prices_above_the_manuals_peak():
    peak = estimate(_net(), (1, 8), profiles="stm32l4r5", dtype="int8", stack="peak")
    lib = estimate(_net(), (1, 8), profiles="stm32l4r5", dtype="int8", stack="tflm-2.3.1")
    # TFLM 2.3.1's fitted cycles per int8 MAC are several times the manual's 0.5
    assert lib.reports["stm32l4r5"].total_latency_s > 2 * peak.reports["stm32l4r5"].total_latency_s


@pytest.mark.parametrize("stack, message", [
    ("grap", r"stack 'grap' is not a software stack of profile 'a100' \(gpu\); did you mean "
             r"'graph'\? its stacks are eager, graph, fused$"),
    ("xcube-ai-7.3", r"its stacks are eager, graph, fused; to price stm32l4r5 for "
                     r"xcube-ai-7.3 only, give PROFILE=STACK pairs"),
    ("a100=graph,cortex-m4=peak", r"stack for profile 'cortex-m4', which is not among the "
                                  r"profiles asked \(a100, stm32l4r5\)"),
    ("a100=", r"expected one stack name, or PROFILE=STACK pairs"),
])
def test_bad_stacks_are_one_line_errors(stack, message):
    with pytest.raises(NeuroedgeError, match=message):
        estimate(_net(), (1, 8), profiles="a100,stm32l4r5", stack=stack)


def test_cli_stack_flag(tmp_path, capsys):
    from deploy.cli import main
    f = tmp_path / "net.py"
    f.write_text("import torch\n\ndef make():\n    return torch.nn.Linear(8, 4)\n")
    assert main(["estimate", f"{f}:make", "--input-shape", "1,8", "--profiles", "a100",
                 "--stack", "fused"]) == 0
    assert "error a100 (stack fused, asked;" in capsys.readouterr().out
    assert main(["estimate", f"{f}:make", "--input-shape", "1,8", "--profiles", "a100",
                 "--stack", "fuse"]) == 2
    err = capsys.readouterr().err.strip()
    assert err == ("neuroedge: error: stack 'fuse' is not a software stack of profile 'a100' "
                   "(gpu); did you mean 'fused'? its stacks are eager, graph, fused")


def test_a_stack_for_a_nir_graph_is_refused():
    with pytest.raises(NeuroedgeError, match="a neuromorphic chip runs its own runtime "
                                             r"\(stack native\): leave stack out"):
        estimate("net.nir", profiles="loihi", stack="graph")


def test_a_profile_file_is_named_in_stack_pairs_as_given(tmp_path, monkeypatch):
    """``--stack FILE=NAME`` names a profile given as a file the way ``--profiles`` did (the
    path as typed, or another spelling of it), and a file profile by its name when no other
    profile asked has that name; before, only the label "stm32l4r5 (file: /abs/x.toml)"
    worked."""
    from deploy.estimate import stacks_asked
    from hw_profiles import load_many
    from hw_profiles.loader import DATA_DIR
    monkeypatch.chdir(tmp_path)
    (tmp_path / "x.toml").write_text((DATA_DIR / "stm32l4r5.toml").read_text())
    profs = load_many(["stm32l4r5", "x.toml"])
    file_label = profs[1].label
    assert stacks_asked(profs, "x.toml=tflm-2.3.1") == {file_label: "tflm-2.3.1"}
    assert stacks_asked(profs, f"{tmp_path}/x.toml=tflm-2.3.1") == {file_label: "tflm-2.3.1"}
    # the bare name is the shipped profile while it is asked too, else the file's
    assert stacks_asked(profs, "stm32l4r5=tflm-2.3.1") == {"stm32l4r5": "tflm-2.3.1"}
    assert stacks_asked(load_many(["x.toml"]), "stm32l4r5=tflm-2.3.1") == \
        {file_label: "tflm-2.3.1"}
    with pytest.raises(NeuroedgeError, match="not among the profiles asked"):
        stacks_asked(profs, "y.toml=tflm-2.3.1")


def test_a_profile_named_twice_in_stack_is_refused_naming_both(tmp_path, capsys):
    """Before, ``--stack a100=graph,a100=fused`` priced a100 for the last one, fused, with no
    word (and a dict naming the profile under two spellings did the same), while a profile
    named twice in ``--profiles`` is refused."""
    from deploy.cli import main
    from deploy.estimate import stacks_asked
    from hw_profiles import load_many
    from hw_profiles.loader import DATA_DIR
    f = tmp_path / "net.py"
    f.write_text("import torch\n\ndef make():\n    return torch.nn.Linear(8, 4)\n")
    assert main(["estimate", f"{f}:make", "--input-shape", "1,8", "--profiles", "a100",
                 "--stack", "a100=graph,a100=fused"]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err == ("neuroedge: error: estimate: --stack: profile 'a100' is named twice "
                            "('a100=graph', then 'a100=fused'); give each profile one stack\n")
    profs = load_many(["a100"])
    a100 = str(DATA_DIR / "a100.toml")
    with pytest.raises(NeuroedgeError, match=rf"profile 'a100' is named twice \('a100=graph', "
                                             rf"then '{a100}=graph'\)"):
        stacks_asked(profs, {"a100": "graph", a100: "graph"})
