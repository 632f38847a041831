"""`neuroedge simulate mlp --profile cortex-m7`: a torch model priced on a microcontroller."""
from deploy.cli import main
from deploy.runfile import read_run


def test_simulate_mlp_on_cortex_m7_gives_an_energy_report(tmp_path, capsys):
    out = tmp_path / "m7.h5"
    # --all: the execution model's rules are in the long report's "What these figures are"
    assert main(["simulate", "mlp", "--profile", "cortex-m7", "--out", str(out), "--all"]) == 0
    text = capsys.readouterr().out
    assert "What these figures are" in text and "serial in-order core" in text
    rep = read_run(out).ledger.price("cortex-m7")
    moved = rep.bytes_moved()
    # digits training keeps ~400 kB resident (the 1,347 x 64 float training set alone is
    # 344,832 B) against 320 KB of SRAM: the read-only rest is placed in flash and read there
    assert "nonvolatile:read" in moved and "local:write" in moved and "offchip:read" not in moved
    assert any("embedded Flash" in n for n in rep.notes)
    assert rep.total_j > 0 and rep.total_latency_s > 0
