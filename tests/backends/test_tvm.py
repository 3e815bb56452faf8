"""The TVM backend: kernels against the reference, fusion, the kernel cache across
processes, the default schedule, VNNI code, quantized linear accuracy, tuning and its
database, and bad input. The op x dtype cells are in tests/conformance.

Processes that compile or tune use their own cache directory (HAL_CACHE_DIR) so that
what they find on disk is what the test put there.
"""

from __future__ import annotations

import functools
import json
import os
import re
import subprocess
import sys
import tempfile
import textwrap
import warnings
from pathlib import Path

import numpy as np
import pytest

import hal

pytest.importorskip("tvm")

from backends.tvm import schedule, target, tuning
from backends.tvm.compiler import Compiler

RNG = np.random.default_rng(11)


@pytest.fixture(scope="module")
def dev():
    """tvm:0, with CPU fallback refused so that every op used must have a kernel."""
    return hal.device("tvm:0")


def _on(dev, a):
    return hal.asarray(a, device=dev)


def _run(code: str, cache, timeout=300) -> subprocess.CompletedProcess:
    env = {**os.environ, "HAL_CACHE_DIR": str(cache)}
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], env=env, text=True,
                          capture_output=True, timeout=timeout)


def _run_last_line(code: str, cache, timeout=600) -> subprocess.CompletedProcess:
    """_run, with stdout cut to its last line (what the code printed last)."""
    done = _run(code, cache, timeout)
    done.stdout = done.stdout.strip().splitlines()[-1] if done.stdout.strip() else ""
    return done


def test_capabilities_name_the_target_and_what_is_unsupported(dev):
    caps = dev.capabilities
    conf = caps.extra["target"]
    assert conf["kind"] == "llvm" and conf["num-cores"] == target.cores()
    assert "mcpu" in conf  # plain "llvm" would compile for generic x86-64
    assert "complex64" not in caps.dtypes and "complex64" in caps.unsupported
    assert "fftn" in caps.unsupported and "fftn" not in caps.ops
    assert {"matmul", "linear", "layer_norm", "softmax", "scaled_dot_product_attention",
            "qmatmul", "quantized_linear"} <= set(caps.ops)


def test_unsupported_op_is_refused_with_its_reason(dev):
    x = _on(dev, np.ones(4, np.float32))
    with pytest.raises(hal.UnsupportedOp, match=r"rfftn.*no TVM FFT kernel"):
        hal.fft.rfft(x)


def test_missing_device_names_the_runtime_the_install_lacks():
    with pytest.raises(hal.BackendUnavailable, match=r"tvm:5 does not exist.*built without"):
        hal.device("tvm:5")


def test_fused_composites_are_one_kernel_each(dev):
    x = RNG.standard_normal((6, 8)).astype(np.float32)
    w = RNG.standard_normal((8, 5)).astype(np.float32)
    b = RNG.standard_normal(5).astype(np.float32)
    with hal.fallback_policy("error"), hal.placement() as where:
        out = hal.nn.linear(_on(dev, x), _on(dev, w), _on(dev, b), activation="gelu_tanh")
    assert list(where.to_dict()["ops"]) == ["linear"]
    expected = hal.ops.spec("linear").evaluate(x, w, b, activation="gelu_tanh")
    np.testing.assert_allclose(out.numpy(), expected, rtol=1e-5, atol=1e-5)
    q = RNG.standard_normal((2, 5, 8)).astype(np.float32)
    with hal.placement() as where:
        out = hal.nn.scaled_dot_product_attention(*(_on(dev, q),) * 3, causal=True)
    assert list(where.to_dict()["ops"]) == ["scaled_dot_product_attention"]
    expected = hal.ops.spec("scaled_dot_product_attention").evaluate(q, q, q, causal=True)
    np.testing.assert_allclose(out.numpy(), expected, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize(("out_channels", "layout"), [(6, "channels_first"),
                                                      (64, "channels_last")])
def test_conv_is_one_kernel_in_either_product_orientation(dev, out_channels, layout):
    """Columns along the positions (6 channels), or along 64 channels of 5x5 positions."""
    x = RNG.standard_normal((2, 4, 5, 5)).astype(np.float32)
    w = RNG.standard_normal((out_channels, 2, 3, 3)).astype(np.float32)
    b = RNG.standard_normal(out_channels).astype(np.float32)
    xl = x if layout == "channels_first" else np.moveaxis(x, 1, -1)
    with hal.fallback_policy("error"), hal.placement() as where:
        out = hal.nn.conv(_on(dev, xl), _on(dev, w), _on(dev, b), padding=((1, 0), (0, 1)),
                          groups=2, layout=layout)
    assert list(where.to_dict()["ops"]) == ["conv"]
    expected = hal.ops.spec("conv").evaluate(xl, w, b, padding=((1, 0), (0, 1)), groups=2,
                                             layout=layout)
    np.testing.assert_allclose(out.numpy(), expected, rtol=1e-5, atol=1e-5)


def test_default_schedule_is_parallel_and_vectorised():
    from tvm import te

    from backends.tvm import elementwise, linalg

    a, b = (te.placeholder((1 << 16,), "float32", name=f"in{i}") for i in range(2))
    add = te.create_prim_func([a, b, elementwise.binary(a, b, op="add")])
    text = schedule.default(add).script()
    assert "T.parallel" in text and "T.vectorized" in text
    x, y = (te.placeholder((256, 256), "float32", name=f"in{i}") for i in range(2))
    mm = te.create_prim_func([x, y, linalg.matmul(x, y)])
    text = schedule.default(mm).script()
    assert "T.parallel" in text and "T.vectorized" in text and "T.unroll" in text


@pytest.mark.skipif(not target.has_vnni(), reason="the CPU has no AVX-512 VNNI")
def test_uint8_qmatmul_uses_vnni_and_is_exact(dev):
    import tvm
    from tvm import te

    from backends.tvm import quant

    a = te.placeholder((64, 128), "uint8", name="in0")
    b = te.placeholder((128, 64), "int8", name="in1")
    func = te.create_prim_func([a, b, quant.raw_product(a, b, vnni=True)])
    executable = tvm.compile(schedule.default(func), target=target.host().target)
    assert "vpdpbusd" in executable.mod.inspect_source("asm")
    ah = RNG.integers(0, 256, (64, 128), dtype=np.uint8)
    bh = RNG.integers(-128, 128, (128, 64), dtype=np.int8)
    out = hal.qmatmul(_on(dev, ah), _on(dev, bh), a_zero_point=3, b_zero_point=-5)
    np.testing.assert_array_equal(out.numpy(), hal.ops.spec("qmatmul").evaluate(
        ah, bh, a_zero_point=3, b_zero_point=-5))


@pytest.mark.skipif(not target.has_vnni(), reason="the CPU has no AVX-512 VNNI")
@pytest.mark.parametrize("m, k, n, za, zb", [(24, 64, 48, 128, 0), (8, 32, 64, 0, -5),
                                             (12, 96, 32, 0, 0), (40, 64, 64, 255, 127)])
def test_vnni_qmatmul_tiles_and_zero_point_corrections_are_exact(dev, m, k, n, za, zb):
    ah = RNG.integers(0, 256, (m, k), dtype=np.uint8)
    bh = RNG.integers(-128, 128, (k, n), dtype=np.int8)
    ah[:, ::3], bh[::2] = 255, -128  # the largest products
    out = hal.qmatmul(_on(dev, ah), _on(dev, bh), a_zero_point=za, b_zero_point=zb)
    np.testing.assert_array_equal(out.numpy(), hal.ops.spec("qmatmul").reference(
        ah, bh, a_zero_point=za, b_zero_point=zb))


def test_quantized_linear_matches_reference_and_stays_close_to_float32(dev):
    x = RNG.standard_normal((32, 64)).astype(np.float32)
    w = RNG.standard_normal((64, 48)).astype(np.float32)
    scale = np.abs(w).max(axis=0) / 127
    wq = np.rint(w / scale).astype(np.int8)
    b = RNG.standard_normal(48).astype(np.float32)
    with hal.placement() as where:
        out = hal.nn.quantized_linear(_on(dev, x), _on(dev, wq), _on(dev, scale), _on(dev, b))
    assert list(where.to_dict()["ops"]) == ["quantized_linear"]
    expected = hal.ops.spec("quantized_linear").evaluate(x, wq, scale, b)
    np.testing.assert_allclose(out.numpy(), expected, rtol=1e-5, atol=1e-4)
    exact = x @ w + b
    assert np.linalg.norm(out.numpy() - exact) / np.linalg.norm(exact) < 0.02


def test_empty_and_degenerate_shapes(dev):
    empty = _on(dev, np.zeros((0, 3), np.int8))
    assert hal.sum(empty).numpy() == 0
    assert hal.matmul(_on(dev, np.zeros((2, 0), np.float32)),
                      _on(dev, np.zeros((0, 3), np.float32))).numpy().tolist() == [[0] * 3] * 2
    x = _on(dev, np.zeros((2, 0), np.float32))
    w = _on(dev, np.zeros((0, 4), np.int8))
    out = hal.nn.quantized_linear(x, w, _on(dev, np.ones(4, np.float32)),
                                  _on(dev, np.arange(4, dtype=np.float32)))
    assert out.numpy().tolist() == [[0, 1, 2, 3]] * 2


def test_integer_floor_divide_and_remainder_match_numpy_at_zero_and_overflow(dev):
    for d in (np.int8, np.int64):
        low = np.iinfo(d).min
        a = np.array([low, 7, -7, 7, -7, 5, low, 0], d)
        b = np.array([-1, 2, 2, -2, -2, 0, 3, -3], d)
        with hal.fallback_policy("error"), np.errstate(all="ignore"):
            for name in ("floor_divide", "remainder"):
                out = getattr(hal, name)(_on(dev, a), _on(dev, b))
                np.testing.assert_array_equal(out.numpy(), getattr(np, name)(a, b))


def test_float_floor_divide_and_remainder_match_numpy_with_inf_nan_and_zero(dev):
    nan, inf = np.nan, np.inf
    a = np.array([1, -1, inf, 1, 0, -0.0, nan, 7.5, -7.5, 1, 3, -3, 5, -5, 1])
    b = np.array([inf, inf, 1, 0, 0, 1, 1, -2, 2, 0.1, -0.0, 0, -inf, 3, -inf])
    for d in (np.float32, np.float64):
        with hal.fallback_policy("error"), np.errstate(all="ignore"):
            for name in ("floor_divide", "remainder"):
                out = getattr(hal, name)(_on(dev, a.astype(d)), _on(dev, b.astype(d))).numpy()
                expected = getattr(np, name)(a.astype(d), b.astype(d))
                np.testing.assert_array_equal(out, expected)
                signed = ~np.isnan(expected)  # numpy's zeros carry a sign; its NaNs do not
                assert (np.signbit(out) == np.signbit(expected))[signed].all(), name


def test_take_counts_negative_indices_from_the_end(dev):
    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    indices = np.array([[-1, 0], [2, -3]], np.int32)
    with hal.fallback_policy("error"):
        np.testing.assert_array_equal(hal.take(_on(dev, x), _on(dev, indices), axis=1).numpy(),
                                      np.take(x, indices, axis=1))
        flat = np.array([-12, 11, 5], np.int64)
        np.testing.assert_array_equal(hal.take(_on(dev, x), _on(dev, flat)).numpy(),
                                      np.take(x, flat))
        empty = hal.take(_on(dev, np.zeros((0, 4), np.float32)), _on(dev, indices), axis=1)
    assert empty.shape == (0, 2, 2) and empty.dtype == np.float32


def test_cumulative_sum_widens_integers_and_prepends_zero(dev):
    x = RNG.integers(-100, 100, (3, 5)).astype(np.int8)
    with hal.fallback_policy("error"):
        out = hal.cumulative_sum(_on(dev, x), axis=1, include_initial=True).numpy()
        flags = hal.cumulative_sum(_on(dev, x > 0), axis=0).numpy()
        empty = hal.cumulative_sum(_on(dev, np.zeros((3, 0), np.int8)), axis=1,
                                   include_initial=True).numpy()
    assert out.dtype == np.int64 and flags.dtype == np.int64
    np.testing.assert_array_equal(out, np.pad(np.cumsum(x, axis=1, dtype=np.int64),
                                              [(0, 0), (1, 0)]))
    np.testing.assert_array_equal(flags, np.cumsum(x > 0, axis=0))
    np.testing.assert_array_equal(empty, np.zeros((3, 1), np.int64))


@pytest.mark.parametrize("d", [np.float16, np.float64])
def test_sort_is_stable_with_nan_last_and_signed_zeros_equal(dev, d):
    nan, inf = np.nan, np.inf
    x = np.array([[nan, 1, -inf, -0.0, nan, 0, inf, -1, 0, 1, -0.0, 1e-300]]).astype(d)
    with hal.fallback_policy("error"):
        for descending in (False, True):
            order = hal.argsort(_on(dev, x), axis=1, descending=descending).numpy()
            np.testing.assert_array_equal(order, hal.ops.spec("argsort").evaluate(
                x, axis=1, descending=descending))
            values = hal.sort(_on(dev, x), axis=1, descending=descending).numpy()
            np.testing.assert_array_equal(values, np.take_along_axis(x, order, axis=1))


def test_second_process_loads_kernels_from_the_cache(tmp_path):
    code = """
        import hal, numpy as np, json
        d = hal.device("tvm:0")
        x = hal.asarray(np.arange(12, dtype=np.float32).reshape(3, 4), device=d)
        y = hal.nn.softmax(hal.exp(x) + 1.0)
        print(json.dumps({"builds": d.compiler.builds, "sum": float(hal.sum(y).numpy())}))
    """
    first = _run(code, tmp_path)
    assert first.returncode == 0, first.stderr
    second = _run(code, tmp_path)
    assert second.returncode == 0, second.stderr
    a, b = json.loads(first.stdout), json.loads(second.stdout)
    assert a["builds"] >= 3 and b["builds"] == 0
    assert a["sum"] == pytest.approx(3.0) and b["sum"] == a["sum"]


def test_damaged_cache_file_is_rebuilt(tmp_path, dev):
    compiler = Compiler(dev.info, tmp_path)
    from backends.tvm import elementwise

    inputs = (((8,), np.dtype("float32")),)
    first = compiler.kernel("exp", elementwise.unary, inputs, (("op", "exp"),))
    first.path.write_bytes(b"not a shared library")
    again = Compiler(dev.info, tmp_path).kernel("exp", elementwise.unary, inputs,
                                                (("op", "exp"),))
    assert again.schedule == "default" and again.path == first.path
    x = hal.asarray(np.ones(8, np.float32), device=dev)
    out = dev.empty((8,), np.dtype("float32"))
    again.function(x.native.tensor, out.tensor)
    np.testing.assert_allclose(out.tensor.numpy(), np.e, rtol=1e-6)


def test_corrupt_tuning_database_warns_with_its_path_and_uses_the_default(tmp_path, dev,
                                                                        monkeypatch):
    monkeypatch.setattr(hal.settings, "cache_dir", tmp_path)
    tuning.forget_databases()
    directory = tuning.database_dir(dev.info)
    directory.mkdir(parents=True)
    (directory / "database_workload.json").write_text("this is not json\n")
    (directory / "database_tuning_record.json").write_text("[1, 2\n")
    from tvm import te

    a = te.placeholder((64,), "float32", name="in0")
    func = te.create_prim_func([a, te.compute((64,), lambda i: a[i] * 2, name="out")])
    try:
        with pytest.warns(tuning.TuningDatabaseWarning, match=re.escape(str(directory))):
            assert tuning.lookup(func, dev.info) is None
    finally:
        tuning.forget_databases()
    compiler = Compiler(dev.info, tmp_path)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", tuning.TuningDatabaseWarning)
        compiled = compiler.build("double", "k", func, tmp_path / "double.so")
    assert compiled.schedule == "default"


_TARGET = {"keys": ["cpu"], "kind": "llvm", "num-cores": 2}
_ARGS = [["TENSOR", "float32", [64]], ["TENSOR", "float32", [64]]]
_GET = ["GetSBlock", [], ["out", "main"], ["b0"]]
_SAMPLE = [[_GET, ["GetLoops", ["b0"], [], ["l1"]],
            ["SamplePerfectTile", ["l1"], [2, 16], ["v2", "v3"]]], [[2, [4, 16]]]]
# Valid JSON of the wrong shape. The first five, and a blank line, took TVM 0.27's
# JSONDatabase down (a segfault or abort, no exception) before the files were checked.
DAMAGED_RECORDS = {
    "record is an object": ({"workload": 0}, "a record is [workload index"),
    "record is null": (None, "a record is [workload index"),
    "null run seconds": ([0, [_SAMPLE, [None], _TARGET, _ARGS]], "run seconds are not"),
    "decision past the trace": ([0, [[_SAMPLE[0], [[7, [4, 16]]]], [1e-5], _TARGET, _ARGS]],
                                "a decision is not"),
    "negative decision": ([0, [[_SAMPLE[0], [[-1, [4, 16]]]], [1e-5], _TARGET, _ARGS]],
                          "a decision is not"),
    "missing fields": ([0, [_SAMPLE, [1e-5]]], "a record is [workload index"),
    "workload index past the file": ([3, [_SAMPLE, [1e-5], _TARGET, _ARGS]],
                                     "workload index 3 is not one of the file's 1"),
    "trace is text": ([0, ["trace", [1e-5], _TARGET, _ARGS]], "the trace is not"),
    "instruction is a number": ([0, [[[5], []], [1e-5], _TARGET, _ARGS]], "an instruction"),
    "run seconds are text": ([0, [_SAMPLE, "fast", _TARGET, _ARGS]], "run seconds are not"),
    "run seconds are NaN": ([0, [_SAMPLE, [float("nan")], _TARGET, _ARGS]], "finite numbers"),
    "target is a number": ([0, [_SAMPLE, [1e-5], 5, _ARGS]], "the target is not"),
    "argument info is a dict": ([0, [_SAMPLE, [1e-5], _TARGET, [{"a": 1}]]], "argument info"),
}


@functools.cache
def _workload_line() -> str:
    """The line TVM writes to database_workload.json for the `_double` kernel."""
    from tvm import ir
    from tvm.s_tir import meta_schedule as ms

    with tempfile.TemporaryDirectory() as directory:
        db = ms.database.JSONDatabase(work_dir=directory, allow_missing=True)
        db.commit_workload(ir.IRModule({"main": _double()}))
        return (Path(directory) / "database_workload.json").read_text().strip()


def _damaged_database(directory, case: str) -> None:
    """A tuning database with the workload of `_double` and the damaged record of `case`
    (a blank line, a workload line that is a number, or one of DAMAGED_RECORDS)."""
    directory.mkdir(parents=True, exist_ok=True)
    workload = _workload_line()
    record = json.dumps([0, [_SAMPLE, [1e-5], _TARGET, _ARGS]])
    if case == "blank line":
        record = record + "\n"
    elif case == "workload is a number":
        workload = "5"
    else:
        record = json.dumps(DAMAGED_RECORDS[case][0])
    (directory / "database_workload.json").write_text(workload + "\n")
    (directory / "database_tuning_record.json").write_text(record + "\n")


DAMAGED = [*DAMAGED_RECORDS, "blank line", "workload is a number"]


@pytest.mark.parametrize("case", DAMAGED)
def test_damaged_tuning_database_is_named_with_its_line(tmp_path, case):
    _damaged_database(tmp_path, case)
    problem = tuning.database_problem(tmp_path)
    if case == "workload is a number":
        assert problem.startswith(f"{tmp_path / 'database_workload.json'}:1: a workload is")
    else:
        line = 2 if case == "blank line" else 1
        what = "a blank line" if case == "blank line" else DAMAGED_RECORDS[case][1]
        assert problem.startswith(f"{tmp_path / 'database_tuning_record.json'}:{line}: ")
        assert what in problem


def test_a_database_as_tvm_writes_it_passes_the_check(tmp_path):
    from tvm import ir
    from tvm.s_tir import Schedule
    from tvm.s_tir import meta_schedule as ms

    func = _double()
    mod = ir.IRModule({"main": func})
    db = ms.database.JSONDatabase(work_dir=str(tmp_path), allow_missing=True)
    workload = db.commit_workload(mod)
    sch = Schedule(mod)
    (loop,) = sch.get_loops(sch.get_sblock("out"))
    sch.split(loop, sch.sample_perfect_tile(loop, n=2))
    for seconds, tgt in (([1e-5], target.host().target), (None, None)):
        db.commit_tuning_record(ms.database.TuningRecord(
            sch.trace, workload, seconds, tgt, ms.arg_info.ArgInfo.from_prim_func(func)))
    assert len((tmp_path / "database_tuning_record.json").read_text().splitlines()) == 2
    assert tuning.database_problem(tmp_path) is None
    assert tuning.database_problem(tmp_path / "none there") is None


def _double():
    from tvm import te

    a = te.placeholder((64,), "float32", name="in0")
    return te.create_prim_func([a, te.compute((64,), lambda i: a[i] * 2, name="out")])


def test_damaged_tuning_databases_never_crash_and_keep_the_default_schedule(tmp_path,
                                                                          monkeypatch):
    """Every damaged database, in one process: a warning naming the file, no tuned schedule,
    a kernel built with the default schedule, and the device's capabilities name the file
    (so benchmark records say why nothing was tuned)."""
    for case in DAMAGED:
        monkeypatch.setattr(hal.settings, "cache_dir", tmp_path / case)
        _damaged_database(tuning.database_dir(target.host()), case)
    done = _run_last_line(f"""
        import json, pathlib, warnings
        import hal
        from backends.tvm import target, tuning
        from backends.tvm.compiler import Compiler
        from tvm import te

        a = te.placeholder((64,), "float32", name="in0")
        func = te.create_prim_func([a, te.compute((64,), lambda i: a[i] * 2, name="out")])
        info, seen = target.host(), {{}}
        for case in {DAMAGED!r}:
            hal.settings.cache_dir = pathlib.Path({str(tmp_path)!r}) / case
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                found = tuning.lookup(func, info)
                built = Compiler(info, hal.settings.cache_dir).build(
                    "double", "k", func, hal.settings.cache_dir / "double.so")
            named = [str(w.message) for w in caught
                     if w.category is tuning.TuningDatabaseWarning
                     and str(tuning.database_dir(info)) in str(w.message)]
            seen[case] = {{"found": found is not None, "schedule": built.schedule,
                           "named": len(named)}}
        seen["capabilities"] = hal.device("tvm:0").capabilities.extra["tuning_database_problem"]
        print(json.dumps(seen))
    """, tmp_path / "unused")
    assert done.returncode == 0, done.stderr[-3000:]
    seen = json.loads(done.stdout)
    assert "database_workload.json:1: a workload is" in seen.pop("capabilities")
    assert seen == {case: {"found": False, "schedule": "default", "named": 1}
                    for case in DAMAGED}


def test_tune_on_a_damaged_database_is_one_line(tmp_path, monkeypatch, capsys):
    from hal.cli import main

    monkeypatch.setattr(hal.settings, "cache_dir", tmp_path)
    tuning.forget_databases()
    _damaged_database(tuning.database_dir(target.host()), "record is null")
    assert main(["tune", "--workload", "gemm:8x8x8", "--trials", "1"]) == 2
    err = capsys.readouterr().err
    records = tuning.database_dir(target.host()) / "database_tuning_record.json"
    assert err == (f"hal: tuning database {records.parent} is damaged ({records}:1: a record "
                   "is [workload index, [trace, run seconds, target, argument info]]); delete "
                   "or move that directory, then run `hal tune` again\n")


def test_tune_cli_rejects_bad_workloads():
    from hal.cli import main

    assert main(["tune", "--workload", "nosuch"]) == 2
    assert main(["tune", "--workload", "gemm:12x12"]) == 2
    assert main(["tune", "--device", "cpu", "--workload", "gemm:8x8x8"]) == 2


@pytest.mark.slow
def test_tuning_is_kept_reused_and_survives_interruption(tmp_path):
    """A short tuning run: records reach the database, the tuned kernel is rebuilt into the
    cache and used by the next process; an interrupted run keeps what it measured."""
    tune = _run_last_line("""
        import json, sys
        from rich.console import Console
        from backends.tvm import cli, workloads
        spec = workloads.parse("gemm:64x64x64")
        summary = cli.tune([spec], "tvm:0", 8, None, Console(file=sys.stderr))
        print(json.dumps(summary))
    """, tmp_path, timeout=600)
    assert tune.returncode == 0, tune.stderr[-3000:]
    summary = json.loads(tune.stdout)
    assert summary["trials"] >= 8 and summary["stopped"] is None
    (row,) = summary["kernels"]
    assert row["status"] in ("tuned", "default kept (faster)") and row["tuned_ms"] > 0
    kept = "tuned" if row["status"] == "tuned" else "default"
    log = [json.loads(line) for line in open(os.path.join(os.path.dirname(
        row["file"]), "tuning", "runs.jsonl"))]
    assert log[-1]["kernels"] == summary["kernels"]
    reuse = _run("""
        import hal, numpy as np, json
        d = hal.device("tvm:0")
        a = hal.asarray(np.eye(64, dtype=np.float32), device=d)
        b = hal.asarray(np.arange(64 * 64, dtype=np.float32).reshape(64, 64), device=d)
        out = hal.matmul(a, b)
        key = next(iter(d.compiler._memory))
        seen = {"builds": d.compiler.builds, "schedule": d.compiler._memory[key].schedule,
                "ok": bool(np.array_equal(out.numpy(), b.numpy()))}
        c = hal.asarray(np.ones((32, 48), np.float32), device=d)  # a shape never tuned
        seen["untuned_ok"] = bool((hal.matmul(c, c.T).numpy() == 48).all())
        seen["untuned"] = [v.schedule for k, v in d.compiler._memory.items() if k != key]
        print(json.dumps(seen))
    """, tmp_path)
    assert reuse.returncode == 0, reuse.stderr[-3000:]
    assert json.loads(reuse.stdout) == {"builds": 0, "schedule": kept, "ok": True,
                                        "untuned_ok": True, "untuned": ["default"] * 2}
    interrupted = _run_last_line("""
        import json, os, signal
        from tvm import te
        from backends.tvm import linalg, target, tuning
        a, b = (te.placeholder((48, 48), "float32", name=f"in{i}") for i in range(2))
        func = te.create_prim_func([a, b, linalg.matmul(a, b)])

        def stop(done):  # Ctrl-C after the first batch
            os.kill(os.getpid(), signal.SIGINT)

        outcome = tuning.tune([func], target.host(), 64, progress=stop)
        print(json.dumps({"stopped": outcome.stopped, "trials": outcome.trials,
                          "found": tuning.lookup(func, target.host()) is not None}))
    """, tmp_path, timeout=600)
    assert interrupted.returncode == 0, interrupted.stderr[-3000:]
    result = json.loads(interrupted.stdout)
    assert result["stopped"] == "interrupted" and result["trials"] > 0 and result["found"]
