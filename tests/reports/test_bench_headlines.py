"""The claims `hal bench` names in its closing table: measured ratio beside the published."""

import dataclasses

from benchmarks.schema.files import load_results
from benchmarks.summary import summary_lines
from reports.cli import claim_headlines


def test_a_measured_claim_heads_the_closing_table(measurement, results_file):
    def seed(workload, backend, median, role, peer=None, seed=0):
        m = measurement(workload, backend, median, seed)
        params = {"claim": "complex_fft", "role": role, **({"peer": peer} if peer else {})}
        return dataclasses.replace(m, suite="seed", params=params)

    ms = [seed("fft2", "cpu", 0.004, "candidate"),
          seed("fft2[scipy]", "cpu", 0.008, "baseline", peer="scipy 1.17", seed=1)]
    results = load_results(results_file("seed.jsonl", ms))
    rows = claim_headlines(results)
    assert len(rows) == 1 and rows[0][0] == "Complex FFT: 8.4 ms vs 19.1 ms"
    ratio = float(rows[0][1].split("x")[0])
    assert abs(ratio - 2.0) < 0.05 and rows[0][1].endswith("x measured, 2.27x published")
    assert f"  Complex FFT: 8.4 ms vs 19.1 ms  {rows[0][1]}" in summary_lines(
        results, headlines=rows)
