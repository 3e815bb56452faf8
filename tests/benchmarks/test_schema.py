"""The results schema: writing, reading, bad lines, versions, resume keys, pytest-benchmark."""

import json
import os
import re
import tracemalloc

import pytest

from benchmarks.schema.environment import library_versions, new_run
from benchmarks.schema.files import ResultWriter, load_results, read_results
from benchmarks.schema.lock import RunInProgress
from benchmarks.schema.records import (
    SCHEMA_VERSION,
    Check,
    DeviceRecord,
    Measurement,
    Placement,
    ResultsError,
    SchemaVersionError,
    completed_keys,
    fingerprinted_env,
    measurement_key,
)
from benchmarks.stats import summarize


def _measurement(workload="gemm", backend="cpu", samples=(1.0, 1.1, 0.9), **kw):
    return Measurement(
        suite="ops",
        workload=workload,
        backend=backend,
        device="cpu",
        dtype="float32",
        params={"M": 64, "N": 16},
        timer="perf_counter",
        sync="synchronize",
        warmup=2,
        inner_loops=4,
        samples=list(samples),
        stats=summarize(samples).to_dict(),
        flops=2e6,
        metrics={"gflops": 2e-3},
        check=Check(True, 1e-7, 1e-5),
        placement=Placement({"matmul": {"cpu:0:kernel": 1}}, 0, 0),
        **kw,
    )


def _write_run(path, measurements, completed=True):
    run = new_run("r1", devices=[DeviceRecord("cpu", "cpu", {"cores": 2})])
    with ResultWriter(path) as w:
        w.write_run(run)
        for m in measurements:
            w.write(m)
        w.write_end(run.id, completed)
    return run


def test_round_trip(tmp_path):
    path = tmp_path / "r1.jsonl"
    m = _measurement()
    run = _write_run(path, [m, _measurement("add")])
    res = read_results(path)
    assert res.completed
    assert res.run.id == "r1" and res.run.end is not None
    assert res.run.fingerprint == run.fingerprint
    assert res.run.devices[0] == DeviceRecord("cpu", "cpu", {"cores": 2})
    assert res.measurements[0] == m
    assert isinstance(res.measurements[0].check, Check)
    assert res.measurements[0].placement.ops == {"matmul": {"cpu:0:kernel": 1}}
    lines = path.read_text().splitlines()
    assert all(json.loads(line)["schema"] == SCHEMA_VERSION for line in lines)
    assert [json.loads(line)["type"] for line in lines] == [
        "run",
        "measurement",
        "measurement",
        "end",
    ]


def test_run_record_describes_host_and_fingerprint_is_stable(monkeypatch, tmp_path):
    monkeypatch.setenv("OMP_NUM_THREADS", "2")
    monkeypatch.setenv("HAL_FALLBACK", "error")
    a = new_run("a", repo=tmp_path)
    b = new_run("b", repo=tmp_path)
    assert a.fingerprint == b.fingerprint == a.compute_fingerprint()
    assert a.host["cores"] >= 1 and a.host["memory_bytes"] > 0 and a.host["python"]
    assert a.libraries["numpy"] and "torch" in a.libraries
    assert a.env["OMP_NUM_THREADS"] == "2" and a.env["HAL_FALLBACK"] == "error"
    assert a.git is None  # tmp_path is no git checkout
    b.devices.append(DeviceRecord("cpu", "cpu", peaks={"gbps": 10.0}))
    c = new_run("c", devices=[DeviceRecord("cpu", "cpu", peaks={"gbps": 20.0})])
    assert b.compute_fingerprint() == c.compute_fingerprint()  # measured peaks do not count
    monkeypatch.setenv("OMP_NUM_THREADS", "1")
    assert new_run("d").fingerprint != a.fingerprint


def test_paths_are_recorded_but_not_fingerprinted(monkeypatch, tmp_path):
    monkeypatch.setenv("HAL_CACHE_DIR", "/tmp/one")
    monkeypatch.setenv("HAL_THREADS", "2")
    monkeypatch.setenv("OPENBLAS_CONFIG_DIR", "/opt/blas")
    a = new_run("a", repo=tmp_path)
    monkeypatch.setenv("HAL_CACHE_DIR", "/tmp/two")
    monkeypatch.setenv("OPENBLAS_CONFIG_DIR", "/opt/other")
    b = new_run("b", repo=tmp_path)
    assert a.env["HAL_CACHE_DIR"] == "/tmp/one" and b.env["HAL_CACHE_DIR"] == "/tmp/two"
    assert a.fingerprint == b.fingerprint
    assert fingerprinted_env({"HAL_CACHE_DIR": "x", "HAL_PROBE_TIMEOUT": "5",
                              "HAL_DEVICE": "cpu:0", "MKL_HOME": "mkl",
                              "HAL_FALLBACK": "./policy", "OMP_NUM_THREADS": "2"}) == {
        "HAL_DEVICE": "cpu:0", "OMP_NUM_THREADS": "2"}
    monkeypatch.setenv("HAL_THREADS", "1")  # a setting that changes results still counts
    assert new_run("c", repo=tmp_path).fingerprint != a.fingerprint


def test_library_versions_name_the_wheel_variant_installed(monkeypatch, tmp_path):
    """A library installed as a variant wheel (as datacentre images install cupy) is
    recorded with that wheel's version, not as absent."""
    for wheel, version in (("cupy_cuda13x", "14.2.0"), ("onnxruntime-gpu", "1.30.0")):
        info = tmp_path / f"{wheel}-{version}.dist-info"
        info.mkdir()
        (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {wheel}\n"
                                       f"Version: {version}\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    libraries = {"cupy": ("cupy",), "onnxruntime": ("not-installed",), "absent": ("absent",)}
    assert library_versions(libraries) == {"cupy": "14.2.0", "onnxruntime": "1.30.0",
                                           "absent": None}


def test_corrupt_and_truncated_lines_are_skipped_with_file_and_line(tmp_path):
    path = tmp_path / "r.jsonl"
    _write_run(path, [_measurement("a"), _measurement("b")], completed=False)
    lines = path.read_text().splitlines()
    lines.insert(2, "{not json")
    lines.append(lines[1][: len(lines[1]) // 2])  # a write cut short by a crash
    path.write_text("\n".join(lines))
    with pytest.warns(UserWarning) as record:
        res = read_results(path)
    messages = [str(w.message) for w in record]
    assert any(f"{path}:3" in msg for msg in messages)
    assert any(f"{path}:{len(lines)}" in msg for msg in messages)
    assert sorted(m.workload for m in res.measurements) == ["a", "b"]
    assert not res.completed


def test_unknown_major_version_is_rejected_naming_file_and_versions(tmp_path):
    path = tmp_path / "future.jsonl"
    _write_run(path, [_measurement()])
    text = path.read_text().replace(f'"schema": "{SCHEMA_VERSION}"', '"schema": "2.3"', 1)
    path.write_text(text)
    with pytest.raises(SchemaVersionError, match=r"future\.jsonl:1.*2\.3.*1\.x") as exc:
        read_results(path)
    assert isinstance(exc.value, ValueError)


def test_newer_minor_version_with_extra_fields_is_read(tmp_path):
    path = tmp_path / "minor.jsonl"
    _write_run(path, [_measurement()])
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    for rec in lines:
        rec["schema"] = "1.9"
        rec["added_later"] = True
    path.write_text("\n".join(json.dumps(r) for r in lines))
    assert read_results(path).measurements[0].workload == "gemm"


def test_completed_keys_and_last_record_per_key_wins(tmp_path):
    path = tmp_path / "r.jsonl"
    run = _write_run(path, [_measurement("a", status="failed", error="boom")], completed=False)
    with ResultWriter(path) as w:  # a resumed run appends to the same file
        w.write(_measurement("a"))
        w.write(_measurement("b"))
        w.write_end(run.id, True)
    res = read_results(path)
    assert res.completed
    assert [m.status for m in res.measurements if m.workload == "a"] == ["ok"]
    key = measurement_key("ops", "b", {"N": 16, "M": 64}, "cpu", "cpu", "float32")
    assert key in completed_keys(res)
    assert measurement_key("ops", "c", {}, "cpu", "cpu", "float32") not in completed_keys(res)


def test_rewritten_run_record_with_peaks_wins(tmp_path):
    path = tmp_path / "r.jsonl"
    run = _write_run(path, [], completed=False)
    run.devices[0].peaks = {"gflops": {"float32": 100.0}, "gbps": 20.0}
    with ResultWriter(path) as w:
        w.write_run(run)
    assert read_results(path).run.device("cpu", "cpu").peaks["gbps"] == 20.0


def test_bad_status_and_unreadable_files(tmp_path):
    with pytest.raises(ValueError, match="status 'weird'"):
        _measurement(status="weird")
    missing = tmp_path / "missing.jsonl"
    with pytest.raises(ResultsError, match=r"missing\.jsonl"):
        load_results(missing)
    empty = tmp_path / "empty.jsonl"
    empty.write_text("")
    with pytest.raises(ResultsError, match="no run record"):
        read_results(empty)


def test_not_a_pytest_benchmark_file(tmp_path):
    path = tmp_path / "x.json"
    path.write_text('{"something": 1}')
    with pytest.raises(ResultsError, match="not a pytest-benchmark"):
        load_results(path)


def test_completed_keys_count_rounds(tmp_path):
    path = tmp_path / "r.jsonl"
    _write_run(path, [_measurement("a"), _measurement("b", status="failed", error="x")])
    res = read_results(path)
    assert len(completed_keys(res)) == 2
    assert [k[1] for k in completed_keys(res, rounds=2)] == ["b"]  # failed is final


def _re(path):
    """A path as a regular expression matching it."""
    return re.escape(str(path))


@pytest.mark.parametrize(
    ("change", "reason"),
    [
        ({"stats": [1.0, 2.0]}, "stats is a list"),
        ({"params": None}, "params is null, not an object"),
        ({"stats": {**summarize([1.0, 2.0]).to_dict(), "median": "fast"}}, "stats.median is text"),
        ({"samples": [1.0, float("nan")]}, "samples hold NaN"),
        ({"samples": ["1.0"]}, r"samples\[0\] is text"),
        ({"check": {"passed": "yes"}}, "check.passed is text"),
        ({"placement": {"ops": {"add": {"cpu:0:kernel": "1"}}}}, "placement.ops.add.cpu:0:kernel"),
        ({"inner_loops": True}, "inner_loops is true or false"),
        ({"workload": 7}, "workload is an integer"),
    ],
)
def test_records_with_wrong_field_types_are_skipped_naming_file_line(tmp_path, change, reason):
    path = tmp_path / "r.jsonl"
    _write_run(path, [_measurement("a"), _measurement("b")])
    lines = path.read_text().splitlines()
    bad = {**json.loads(lines[2]), **change}
    lines[2] = json.dumps(bad)
    path.write_text("\n".join(lines) + "\n")
    with pytest.warns(UserWarning, match=rf"{_re(path)}:3: skipped an invalid measur.*{reason}"):
        res = read_results(path)
    assert [m.workload for m in res.measurements] == ["a"]
    assert res.completed


@pytest.mark.parametrize(
    "line",
    ['["type", "measurement"]', '{"type": "measurement"}', '{"type": 3, "schema": "1.0"}', "7"],
)
def test_lines_that_are_no_record_object_are_skipped(tmp_path, line):
    path = tmp_path / "r.jsonl"
    _write_run(path, [_measurement("a")])
    with open(path, "a") as f:
        f.write(line + "\n")
    with pytest.warns(UserWarning, match=rf"{_re(path)}:4: skipped a truncated or corrupt line"):
        res = read_results(path)
    assert [m.workload for m in res.measurements] == ["a"] and res.completed


def test_end_record_with_wrong_types_is_skipped(tmp_path):
    path = tmp_path / "r.jsonl"
    _write_run(path, [_measurement("a")], completed=False)
    with open(path, "a") as f:
        f.write(json.dumps({"type": "end", "schema": "1.0", "completed": "yes"}) + "\n")
    with pytest.warns(UserWarning, match=rf"{_re(path)}:4: .*completed is text"):
        assert not read_results(path).completed


@pytest.mark.parametrize("run_id", ["../escape", "a/b", "..", ".hidden", "a\\b", ""])
def test_run_id_that_is_no_plain_file_name_is_refused(tmp_path, run_id):
    with pytest.raises(ValueError, match="run id"):
        new_run(run_id)
    path = tmp_path / "r.jsonl"
    _write_run(path, [_measurement("a")])
    text = path.read_text().replace('"id": "r1"', json.dumps({"id": run_id})[1:-1], 1)
    path.write_text(text)
    with pytest.warns(UserWarning, match=r"r\.jsonl:1: skipped an invalid run record"):
        with pytest.raises(ResultsError, match="no run record"):
            read_results(path)


@pytest.mark.parametrize("whole", [False, True])
def test_appending_after_a_torn_last_line_starts_a_new_line(tmp_path, whole):
    path = tmp_path / "r.jsonl"
    run = _write_run(path, [_measurement("a")], completed=False)
    record = json.dumps(_measurement("b").to_dict())
    with open(path, "a") as f:  # a crash cut the last write short (before its newline)
        f.write(record if whole else record[: len(record) // 2])
    action = "added it" if whole else "cut off a torn last line"
    with pytest.warns(UserWarning, match=rf"{_re(path)}:4: .*{action}"):
        writer = ResultWriter(path)
    with writer as w:
        w.write(_measurement("c"))
        w.write_end(run.id, True)
    lines = path.read_text().splitlines()
    assert all(json.loads(line) for line in lines)  # every line is whole JSON again
    res = read_results(path)
    expected = ["a", "b", "c"] if whole else ["a", "c"]
    assert sorted(m.workload for m in res.measurements) == expected and res.completed


def test_a_results_file_has_one_writer_at_a_time(tmp_path):
    path = tmp_path / "r.jsonl"
    lock = tmp_path / "r.jsonl.lock"
    with ResultWriter(path) as first:
        first.write_run(new_run("r"))
        assert lock.read_text() == f"{os.getpid()}\n"
        with open(path, "a") as f:
            f.write('{"type": "measure')  # the first writer's record, half written
        before = path.read_bytes()
        with pytest.raises(RunInProgress, match=rf"{_re(path)} is being written by process "
                                                rf"{os.getpid()} \(it holds {_re(lock)}\)"):
            ResultWriter(path)
        assert path.read_bytes() == before  # not mended under the writer's feet
    assert not lock.exists()


def test_a_lock_its_writer_left_behind_is_taken_over(tmp_path):
    path = tmp_path / "r.jsonl"
    _write_run(path, [])
    (tmp_path / "r.jsonl.lock").write_text("4194303\n")  # a killed writer's lock, flock free
    with pytest.warns(UserWarning, match=r"r.jsonl.lock: took over the lock of process "
                                         r"4194303, which ended without releasing it"):
        writer = ResultWriter(path)
    with writer:
        assert (tmp_path / "r.jsonl.lock").read_text() == f"{os.getpid()}\n"
    assert not (tmp_path / "r.jsonl.lock").exists()


def test_a_line_longer_than_any_record_is_refused_unread(tmp_path, monkeypatch):
    path = tmp_path / "r.jsonl"
    _write_run(path, [_measurement("a")])
    with open(path, "r+b") as f:  # a 64 MiB line after the run record's (sparse: no disk)
        f.truncate(len(f.readline()))
        f.truncate(f.tell() + (64 << 20) + 1)
    monkeypatch.setenv("HAL_MAX_RECORD_BYTES", str(1 << 20))
    tracemalloc.start()
    try:
        with pytest.raises(ResultsError, match=rf"{_re(path)}:2: a line of more than 1048576 "
                                               r"bytes.*cut that line out.*HAL_MAX_RECORD_BYTES"):
            read_results(path)
        assert tracemalloc.get_traced_memory()[1] < 8 << 20  # the first MiB of it, no more
    finally:
        tracemalloc.stop()
    monkeypatch.setenv("HAL_MAX_RECORD_BYTES", "lots")
    with pytest.raises(ResultsError, match="HAL_MAX_RECORD_BYTES='lots': give the largest"):
        read_results(path)


def test_a_pytest_benchmark_file_larger_than_a_record_is_refused(tmp_path, monkeypatch):
    path = _pytest_benchmark_file(tmp_path / "pb.json", [])
    monkeypatch.setenv("HAL_MAX_RECORD_BYTES", "100")
    with pytest.raises(ResultsError, match=rf"{_re(path)}: a JSON document of \d+ bytes, "
                                           r"more than the 100"):
        load_results(path)


@pytest.mark.parametrize("kind", ["symlink loop", "fifo", "directory"])
def test_what_is_no_readable_regular_file_is_named_at_once(tmp_path, kind):
    path = tmp_path / "r.jsonl"
    if kind == "symlink loop":
        path.symlink_to(path.name)
        reason = "a symbolic link that leads back to itself; remove it"
    elif kind == "fifo":
        os.mkfifo(path)  # opening it to read would wait for a writer forever
        reason = "is not a regular file"
    else:
        path.mkdir()
        reason = "is not a regular file"
    for read in (load_results, read_results):
        with pytest.raises(ResultsError, match=rf"{_re(path)}.*{reason}"):
            read(path)


def _pytest_benchmark_file(path, benchmarks):
    entry = {"name": "test_sum[cpu]", "params": {"backend": "cpu"},
             "stats": {"data": [1.0, 1.2, 0.9], "iterations": 1}}
    path.write_text(json.dumps({"machine_info": [], "benchmarks": [entry, *benchmarks]}))
    return path


@pytest.mark.parametrize(
    ("bad", "reason"),
    [
        ({"name": "x", "stats": [1, 2]}, "stats is a list"),
        ({"name": "x", "params": "cpu"}, "params is text"),
        ({"name": "x", "stats": {"median": "fast"}}, "stats.median is text"),
        ({"name": "x", "stats": {"data": [1.0, float("nan")]}}, "NaN"),
        ([1, 2], "the entry is a list"),
    ],
)
def test_malformed_pytest_benchmark_entries_are_skipped(tmp_path, bad, reason):
    path = _pytest_benchmark_file(tmp_path / "pb.json", [bad])
    with pytest.warns(UserWarning, match=rf"{_re(path)}: skipped benchmarks\[1\].*{reason}"):
        res = load_results(path)
    (m,) = res.measurements
    assert m.backend == "cpu" and m.median == pytest.approx(1.0)


def test_pytest_benchmark_file_whose_benchmarks_is_no_list_is_refused(tmp_path):
    path = tmp_path / "pb.json"
    path.write_text('{"benchmarks": {"name": "x"}}')
    with pytest.raises(ResultsError, match="no 'benchmarks' list"):
        load_results(path)
