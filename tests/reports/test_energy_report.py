"""The report's energy: perf/W beside the speedups and the claims, speed against energy per
device, rooflines with named points and their work per joule."""

from __future__ import annotations

import dataclasses
import re

from benchmarks.schema.files import load_results
from reports.claims import claims_table
from reports.report import build_report

COUNTER = "RAPL powercap (intel-rapl:0:package-0)"


def _with_energy(m, joules_per_call: float, watts: float):
    """`m` as if its device's counter had read `joules_per_call` at `watts`."""
    calls = len(m.samples) * m.inner_loops
    energy = {"available": True, "counter": COUNTER, "joules": joules_per_call * calls,
              "seconds": joules_per_call * calls / watts, "calls": calls,
              "joules_per_call": joules_per_call, "watts": watts}
    metrics = {**m.metrics, "joules_per_call": joules_per_call, "watts": watts,
               "gflops_per_joule": m.flops / joules_per_call / 1e9}
    return dataclasses.replace(m, energy=energy, metrics=metrics)


def _without(m, why: str):
    return dataclasses.replace(m, energy={"available": False, "why": why})


def test_perf_per_watt_beside_the_speedup_and_a_picture_of_speed_against_energy(
        measurement, results_file, tmp_path):
    cpu = _with_energy(measurement("gemm", "cpu", 0.010, 1), 0.5, 50.0)
    opencl = _with_energy(measurement("gemm", "opencl", 0.005, 2), 0.125, 25.0)
    fft = _without(measurement("fft", "null", 0.01, 3), "not available here: no counter")
    path = results_file("energy.jsonl", [cpu, opencl, fft, measurement("fft", "cpu", 0.01, 4)])
    out = tmp_path / "o"
    written = {p.name for p in build_report([path], out)}
    md = (out / "report-details.md").read_text()
    gemm = next(line for line in md.splitlines() if line.startswith("| ops/gemm"))
    assert re.search(r"2\.0\dx \[[^]]*\]; 4\.00x perf/W", gemm)  # 0.5 J -> 0.125 J a call
    energy = md[md.index("## Energy"):]
    assert "`null:0` (run run): not available here: no counter." in energy
    assert f"The points of `cpu:0` (run run; {COUNTER}), by number:" in energy
    assert re.search(r"\| +1 \| ops/gemm +\| n=1024 +\| float32 \| 5 ms +\| +0\.125 \| +25 \|",
                     energy)
    assert {"energy-run-cpu_0.png", "energy-run-opencl_0.png"} <= written
    roof = md[md.index("## Rooflines"):md.index("## Energy")]
    assert "The points of `cpu:0`'s roofline, by number:" in roof
    assert re.search(r"\| +2 \| ops/gemm +\| n=1024 +\| float32 \| +20 \| +200 \| +100 \| +4 \|",
                     roof)
    assert "GFLOP/J |" in roof  # where the energy was read
    assert {"work-per-joule-run-cpu-cpu_0.png", "work-per-joule-run-opencl-opencl_0.png"} \
        <= written
    assert not any(n.startswith("work-per-joule-run-null") for n in written)


def test_the_claims_table_gives_perf_per_watt_where_both_sides_read_energy(
        measurement, results_file):
    def seed(m, role, peer=None):
        return dataclasses.replace(m, suite="seed", params={
            "claim": "complex_fft", "role": role, **({"peer": peer} if peer else {})})

    hal_side = _with_energy(seed(measurement("fft2", "cpu", 0.004, 1), "candidate"), 0.2, 50.0)
    peer = _with_energy(seed(measurement("fft2[numpy]", "cpu", 0.008, 2), "baseline",
                             "numpy 2.4"), 0.6, 75.0)
    peer = dataclasses.replace(peer, facts={"peer": "numpy 2.4.1", "peer_device": "host CPU"})
    table = claims_table([load_results(results_file("seed.jsonl", [hal_side, peer]))])
    row = table[table["claim"].str.startswith("Complex FFT")].iloc[0]
    assert row["baseline"] == "numpy 2.4.1 on host CPU"
    assert row["perf/W"] == "600 mJ -> 200 mJ a call (3.00x perf/W)"
    table = claims_table([load_results(results_file("none.jsonl", [
        seed(measurement("fft2", "cpu", 0.004, 1), "candidate"),
        seed(measurement("fft2[numpy]", "cpu", 0.008, 2), "baseline", "numpy 2.4")]))])
    assert set(table["perf/W"]) == {""}
