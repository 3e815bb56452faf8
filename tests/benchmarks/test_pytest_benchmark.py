"""pytest-benchmark JSON from a real pytest-benchmark run: measurements, reports, compares."""

import json
import os
import subprocess
import sys
import textwrap

import pytest

from benchmarks.schema.files import load_results
from benchmarks.schema.pytest_benchmark import load_pytest_benchmark
from reports.cli import main


@pytest.fixture(scope="module")
def pytest_benchmark_json(tmp_path_factory):
    """A real pytest-benchmark JSON file from a tiny benchmark run in a subprocess."""
    tmp = tmp_path_factory.mktemp("pb")
    (tmp / "test_tiny.py").write_text(
        textwrap.dedent("""
        import pytest

        @pytest.mark.parametrize("backend", ["cpu", "numpy"])
        def test_sum(benchmark, backend):
            benchmark(sum, range(100))

        @pytest.mark.benchmark(group="opencl")
        def test_grouped(benchmark):
            benchmark(sum, range(10))

        def test_plain(benchmark):
            benchmark(sum, range(10))
    """)
    )
    out = tmp / "bench.json"
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:cacheprovider",
            "-c",
            "/dev/null",
            "--rootdir",
            str(tmp),
            str(tmp / "test_tiny.py"),
            f"--benchmark-json={out}",
            "--benchmark-save-data",
            "--benchmark-min-rounds=5",
            "--benchmark-max-time=0.01",
        ],
        capture_output=True,
        text=True,
        cwd=tmp,
        timeout=120,
        env={k: v for k, v in os.environ.items() if not k.startswith("PYTEST_XDIST")},
    )  # a run of this suite under xdist must not make pytest-benchmark disable itself
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return out


def test_pytest_benchmark_json_loads_as_measurements(pytest_benchmark_json):
    res = load_results(pytest_benchmark_json)
    assert res.completed
    by = {(m.workload, m.backend) for m in res.measurements}
    assert by == {
        ("test_tiny.py::test_sum", "cpu"),
        ("test_tiny.py::test_sum", "numpy"),
        ("test_tiny.py::test_grouped", "opencl"),
        ("test_tiny.py::test_plain", "unknown"),
    }
    m = res.measurements[0]
    assert m.suite == "pytest-benchmark" and m.status == "ok"
    assert len(m.samples) == m.stats["n"] >= 5
    assert m.stats["ci_low"] <= m.stats["median"] <= m.stats["ci_high"]
    assert m.timer == "perf_counter" and m.fallback_policy == "none"
    assert res.run.host["cpu"] and res.run.fingerprint
    assert res.run.host["python_implementation"] == "CPython" and res.run.host["cpu_arch"]


def test_pytest_benchmark_json_without_raw_data_keeps_its_statistics(
    pytest_benchmark_json, tmp_path
):
    data = json.loads(pytest_benchmark_json.read_text())
    for b in data["benchmarks"]:
        del b["stats"]["data"]
    path = tmp_path / "nodata.json"
    path.write_text(json.dumps(data))
    m = load_pytest_benchmark(path).measurements[0]
    assert m.samples == []
    assert m.stats["median"] == data["benchmarks"][0]["stats"]["median"]
    assert m.stats["ci_low"] is None


def test_report_and_compare_accept_pytest_benchmark_files(pytest_benchmark_json, tmp_path, capsys):
    assert main(["report", str(pytest_benchmark_json), "-o", str(tmp_path / "r")]) == 0
    details = (tmp_path / "r" / "report-details.md").read_text()
    assert "## Suite `pytest-benchmark`" in details and "test_tiny.py::test_sum" in details
    summary = (tmp_path / "r" / "report.md").read_text()
    assert "refused the CPU fallback" not in summary + details  # hal ran none of it
    assert "## Op coverage" not in details  # nor any hal op
    assert main(["compare", str(pytest_benchmark_json), str(pytest_benchmark_json)]) == 0
    assert "4 unchanged" in capsys.readouterr().out


def test_one_cold_round_among_thousands_gives_no_cv_in_the_thousands(pytest_benchmark_json,
                                                                    tmp_path):
    data = json.loads(pytest_benchmark_json.read_text())
    entry = data["benchmarks"][0]
    samples = [1e-7] * 4000 + [1.1e-7] * 4000
    samples[0] = 1e-3  # the first call, with cold caches
    entry["stats"]["data"] = samples
    path = tmp_path / "cold.json"
    path.write_text(json.dumps(data))
    m = load_pytest_benchmark(path).measurements[0]
    assert 0.04 < m.stats["cv"] < 0.06  # sd/mean of the fenced rounds: 1e-7 and 1.1e-7
    assert m.stats["max"] == 1e-3  # the statistics keep it
    del entry["stats"]["data"]
    entry["stats"].update(median=1e-7, iqr=1e-8)
    path.write_text(json.dumps(data))
    m = load_pytest_benchmark(path).measurements[0]
    assert m.stats["cv"] == pytest.approx(1e-8 / 1.349 / 1e-7)


def test_two_tests_of_one_name_in_two_classes_stay_apart(pytest_benchmark_json, tmp_path):
    data = json.loads(pytest_benchmark_json.read_text())
    plain = next(b for b in data["benchmarks"] if b["name"] == "test_plain")
    twin = json.loads(json.dumps(plain))
    plain["fullname"] = "test_tiny.py::TestA::test_plain"
    twin["fullname"] = "test_tiny.py::TestB::test_plain"
    data["benchmarks"].append(twin)
    path = tmp_path / "twins.json"
    path.write_text(json.dumps(data))
    names = {m.workload for m in load_pytest_benchmark(path).measurements}
    assert {"test_tiny.py::TestA::test_plain", "test_tiny.py::TestB::test_plain"} <= names
