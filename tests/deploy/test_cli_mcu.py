"""`neuroedge simulate mlp --profile cortex-m7`: a torch model priced on a microcontroller."""
import pytest

from deploy.cli import main
from deploy.runfile import read_run
from hw_profiles import load


def test_simulate_mlp_on_cortex_m7_gives_an_energy_report(tmp_path, capsys):
    out = tmp_path / "m7.h5"
    # --all: the execution model's rules are in the long report's "What these figures are"
    assert main(["simulate", "mlp", "--profile", "cortex-m7", "--out", str(out), "--all"]) == 0
    text = capsys.readouterr().out
    assert "What these figures are" in text and "serial in-order core" in text
    ledger = read_run(out).ledger
    rep = ledger.price("cortex-m7")
    moved = rep.bytes_moved()
    # digits training keeps ~400 kB resident (the 1,347 x 64 float training set alone is
    # 344,832 B) against 320 KB of SRAM: the read-only rest is placed in flash and read there
    assert "nonvolatile:read" in moved and "local:write" in moved and "offchip:read" not in moved
    assert any("embedded Flash" in n for n in rep.notes)
    # the placement by hand: the train block's writable state first in the 327,680 B of
    # SRAM, its read-only state in the SRAM left over, the rest in flash (measured: 38,580 B
    # writable + 289,100 B read-only in SRAM, 77,284 B read-only in flash)
    prof = load("cortex-m7")
    sram = int(prof.memory["local"].capacity_bytes.value)
    fp = ledger.footprints()["train"]
    in_sram = sram - fp["writable"]
    in_flash = fp["read_only"] - in_sram
    assert in_flash > 0
    assert f"{fp['writable']:,} B writable + {in_sram:,} B read-only, embedded Flash: 0 B " \
           f"writable + {in_flash:,} B read-only" in " ".join(rep.notes)
    # each train scope's reads split in proportion to where the block's state lies:
    # flash gets floor(n x 77,284 / 404,964) of its n bytes (the remainder goes to SRAM);
    # the infer block fits SRAM, so its reads all land there; every write lands in SRAM
    state = fp["writable"] + fp["read_only"]
    flash_reads = sum(n * in_flash // state for scope in ledger.scopes()
                      if scope.split("/")[0] == "train"
                      for (_, direction), n in ledger.bytes(scope).items()
                      if direction == "read")
    total = ledger.total_bytes()
    reads, writes = total[("offchip", "read")], total[("offchip", "write")]
    assert moved == {"local:read": reads - flash_reads, "nonvolatile:read": flash_reads,
                     "local:write": writes}
    # energy and time recomputed from the profile: ops x pJ (kernel launches unpriced on
    # this kind; static power 0 W) + bytes x pJ/B; the in-order core's time the sum of
    # ops / rate and bytes / bandwidth
    flash = prof.memory["nonvolatile"]
    ops = {op: n for op, n in ledger.total_ops().items() if op != "kernel_launch"}
    assert prof.static_power_w.value == 0
    pj = (sum(n * prof.energy_pj[op].value for op, n in ops.items())
          + (reads - flash_reads) * prof.memory["local"].read_pj_per_byte.value
          + flash_reads * flash.read_pj_per_byte.value
          + writes * prof.memory["local"].write_pj_per_byte.value)
    seconds = (sum(n / prof.throughput[op].value for op, n in ops.items())
               + (reads - flash_reads + writes) / prof.memory["local"].bandwidth_bytes_per_s.value
               + flash_reads / flash.bandwidth_bytes_per_s.value)
    assert rep.total_j == pytest.approx(pj * 1e-12, rel=1e-9)
    assert rep.total_latency_s == pytest.approx(seconds, rel=1e-9)
