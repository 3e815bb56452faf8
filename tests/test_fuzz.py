"""A fuzz of the public API and of the command line: bad input must be a clear HalError.

Every public callable (the ops through `hal.op`, the functions of hal, hal.nn, hal.fft and
hal.random, creation, Tensor operators and methods) is called with arguments drawn from
pools of good and bad things: tensors of every dtype and awkward shapes, Python scalars,
huge, negative, NaN and infinite numbers, shapes, dtypes, axes, devices, strings, None.
Calls run in a worker process, so each outcome is classified:

    ok        the call returned (and agreed with the numpy reference where there is one)
    HalError  a clear error of hal's
    arity     a TypeError of Python's own call protocol (wrong number or names of arguments),
              raised before hal's code runs
    other     any other exception, by type: a finding
    crash     the worker died by a signal: a finding
    hang      no answer within the time limit: a finding
    wrong     a result that differs from numpy's (ops, creation, random ranges): a finding

Full size, by hand (counts and one repro line per finding group):

    python -m tests.test_fuzz --calls 20000 --device cpu --device opencl:0

CI runs a small size on the cpu device. The command line is fuzzed the same way with wrong
flags and values: argparse's usage error (exit 2) or a one-line `hal: ...` error are clear;
a traceback is a finding.
"""

from __future__ import annotations

import argparse
import contextlib
import inspect
import io
import json
import operator
import queue
import resource
import signal
import subprocess
import sys
import threading
import warnings
from collections import Counter
from pathlib import Path

import numpy as np
import pytest

import hal
from hal import ops
from hal.conformance.compare import mismatch

FINDINGS = ("other", "crash", "hang", "wrong")
CALL_TIMEOUT = 30.0  # seconds one call may take before it counts as a hang
WORKER_MEMORY = 8 << 30  # bytes of data a worker may map: a runaway allocation fails, not the host

# -- what the calls are made of --------------------------------------------------------------
SHAPES = [(), (0,), (3,), (2, 3), (1, 3), (4, 1, 3), (2, 0, 2)]
NAN, INF = float("nan"), float("inf")
NUMBERS = [0, 1, -1, 5, 2.5, -7, NAN, INF, -INF, 2**70, -(2**70), 10**6, True, None, "x", 1j,
           np.float32(1.5), np.int64(3)]
SHAPE_ARGS = [3, 0, (2, 3), (), (0,), -1, (-1,), (2, -3), (10**6,) * 2, 2**63, (2**40, 2**40),
              2.5, (2.5,), "x", None, [2, 3], (1,) * 40, (NAN,), (2**70,)]
DTYPES = [*hal.ALL, "float32", "int8", np.float32, "float128", np.longdouble, "x", None, 5,
          np.dtype("U3"), object]
AXES = [None, 0, 1, -1, 5, -9, (0, 1), (0, 0), 1.5, "x", [0], 2**70]
FLAGS = [True, False, None, 1, "yes", 2.5]
WORDS = ["ortho", "forward", "backward", None, "x", "tanh", "none", "relu", "reflect",
         "constant", "edge", "wrap", 3]
SEEDS = [None, 0, 7, -1, 2**70, 1.5, "x"]
OBJECTS = [[1, 2], [[1.0], [2.0]], [[1], [1, 2]], [1, "x"], "abc", {}, 2**70, [2**70], 1j,
           np.ones((2, 2)), np.array(["a"]), np.array([2**64 - 1], dtype=np.uint64), object(),
           np.float16(1), [NAN, INF]]
KEYS = [0, -1, 5, slice(None), slice(1, None, 2), slice(None, None, 0), (0, 0), None, Ellipsis,
        True, False, (Ellipsis, None), "x", [0, 1], 1.5, (slice(None),) * 40, (Ellipsis, Ellipsis)]
BAD_VALUES = [None, 0, 1, -1, 2.5, -7, "x", (0,), (0, 1), (1, 0), ((0, 1, 1),), ((1, 1),),
              True, 10**20, NAN, [0], {}, "float32", "tanh", "ortho"]
POOLS = {  # parameter name -> the values drawn for it
    **dict.fromkeys(("shape", "s", "pad_width", "bounds"), SHAPE_ARGS),
    **dict.fromkeys(("dtype", "out_dtype"), DTYPES),
    **dict.fromkeys(("axis", "axes", "concat_axis", "split_axis", "shift"), AXES),
    **dict.fromkeys(("keepdims", "copy", "causal", "descending", "stable", "endpoint",
                     "include_initial"), FLAGS),
    **dict.fromkeys(("low", "high", "start", "stop", "step", "num", "fill_value", "n_rows",
                     "n_cols", "k", "mean", "std", "n", "eps", "correction", "value",
                     "a_zero_point", "b_zero_point", "min", "max"), NUMBERS),
    **dict.fromkeys(("norm", "mode", "approximate", "activation", "group"), WORDS),
    "seed": SEEDS, "obj": OBJECTS, "key": KEYS,
}
TENSOR_ONLY = {"x", "x1", "x2", "a", "b", "q", "k", "v", "weight", "bias", "condition", "cond",
               "indices", "re", "im", "y", "scale", "zero_point", "weight_scale", "lo", "hi"}


def _tensor(rng, device) -> hal.Tensor:
    dtypes = [d for d in hal.ALL if device.supports_dtype(d)]
    dtype = dtypes[rng.integers(len(dtypes))]
    shape = SHAPES[rng.integers(len(SHAPES))]
    values = rng.standard_normal(shape) * 3
    if hal.dtypes.is_complex(dtype):
        values = values + 1j * rng.standard_normal(shape)
    with np.errstate(all="ignore"):
        return hal.asarray(np.asarray(values).astype(dtype), device=device)


def _pick(rng, pool):
    return pool[rng.integers(len(pool))]


def _operand(rng, device):
    kind = rng.integers(10)
    if kind < 6:
        return _tensor(rng, device)
    if kind < 9:
        return _pick(rng, [1, 2.5, True, 1j, None, "s", [1.0, 2.0], np.ones(2), 2**70, NAN])
    return _pick(rng, BAD_VALUES)


def _value(rng, device, name: str):
    """A value for the parameter called `name`: from its pool, now and then from any."""
    if rng.random() < 0.15:
        return _pick(rng, BAD_VALUES)
    if name == "device":
        return _pick(rng, [None, device, device.name, "nosuch", f"{device.backend.name}:9", 3])
    if name in ("arrays", "xs"):
        return [_operand(rng, device) for _ in range(rng.integers(4))]
    if name == "name":
        return _pick(rng, [*ops.names(), "nosuch", 3])
    if name in POOLS:
        return _pick(rng, POOLS[name])
    return _operand(rng, device)


# -- the targets: every public callable, and how to call it ------------------------------------
def _public_functions() -> dict[str, object]:
    """'hal.fn' / 'hal.nn.fn' / ... -> function, for every public function of those modules."""
    out = {}
    for module in (hal.functions, hal.creation, hal.nn, hal.fft, hal.random, hal.linalg,
                   hal.manipulation, hal.searching, hal.statistics):
        flat = (hal.functions, hal.creation, hal.manipulation, hal.searching, hal.statistics)
        prefix = "hal." if module in flat else f"{module.__name__}."
        for name, fn in vars(module).items():
            if (inspect.isfunction(fn) and not name.startswith("_") and name != "op"
                    and fn.__module__ == module.__name__):
                out[prefix + name] = fn
    return out


OPERATORS = {"+": operator.add, "-": operator.sub, "*": operator.mul, "/": operator.truediv,
             "**": operator.pow, "@": operator.matmul, "//": operator.floordiv,
             "%": operator.mod, "==": operator.eq, "!=": operator.ne, "<": operator.lt,
             "<=": operator.le, ">": operator.gt, ">=": operator.ge}
CONVERSIONS = {"neg": operator.neg, "pos": operator.pos, "abs": abs, "len": len, "bool": bool,
               "float": float, "int": int, "complex": complex, "index": operator.index,
               "list": list, "repr": repr, "item": hal.Tensor.item,
               "tolist": hal.Tensor.tolist, "numpy": hal.Tensor.numpy,
               "T": lambda x: x.T, "mT": lambda x: x.mT}
METHODS = ("astype", "reshape", "sum", "max", "min", "to", "to_device", "__array_namespace__",
           "__getitem__")


def targets() -> list[str]:
    """Every target's name, in a fixed order."""
    return ([f"op:{s.name}" for s in ops.specs()] + sorted(_public_functions())
            + [f"Tensor {o}" for o in OPERATORS] + [f"Tensor.{c}" for c in CONVERSIONS]
            + [f"Tensor.{m}" for m in METHODS])


def _signature_args(rng, device, fn, skip: int = 0) -> tuple[list, dict]:
    """Positional and keyword arguments for fn, by its signature (its first `skip`
    parameters left out); now and then one too few or too many, or an unknown keyword."""
    params = list(inspect.signature(fn).parameters.values())[skip:]
    positional = [p for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    required = [p for p in positional if p.default is p.empty]
    n = len(required) + int(rng.integers(0, len(positional) - len(required) + 1))
    if rng.random() < 0.1:
        n = max(0, n + int(rng.choice([-1, 1])))
    args = [_value(rng, device, p.name) if p.name not in TENSOR_ONLY else _operand(rng, device)
            for p in positional[:n]]
    args += [_operand(rng, device) for _ in range(n - len(positional))]
    if any(p.kind is p.VAR_POSITIONAL for p in params):
        args += [_operand(rng, device) for _ in range(rng.integers(4))]
    keywords = {p.name: _value(rng, device, p.name) for p in params
                if p.kind is p.KEYWORD_ONLY and rng.random() < 0.4}
    if rng.random() < 0.05:
        keywords["unknown_keyword"] = 1
    return args, keywords


def make_call(target: str, device, seed: int, i: int) -> tuple:
    """(fn, args, keywords) of call i of the fuzz: the same for the same (seed, i)."""
    rng = np.random.default_rng([seed, i])
    if target.startswith("op:"):
        spec = ops.spec(target[3:])
        args, keywords = _signature_args(rng, device, spec.meta)
        return hal.op, [spec.name, *args], keywords
    if target.startswith("Tensor "):
        a, b = _tensor(rng, device), _operand(rng, device)
        return OPERATORS[target[7:]], [a, b] if rng.random() < 0.7 else [b, a], {}
    if target.startswith("Tensor."):
        name, x = target[7:], _tensor(rng, device)
        if name in CONVERSIONS:
            return CONVERSIONS[name], [x], {}
        if name == "__getitem__":
            return getattr(x, name), [_pick(rng, KEYS) if rng.random() < 0.8 else
                                      _operand(rng, device)], {}
        if name in ("to", "to_device"):
            return getattr(x, name), [_value(rng, device, "device")], {}
        args, keywords = _signature_args(rng, device, getattr(hal.Tensor, name), skip=1)
        return getattr(x, name), args, keywords
    fn = _public_functions()[target]
    args, keywords = _signature_args(rng, device, fn)
    return fn, args, keywords


def show(target: str, args, keywords) -> str:
    """A short repro line for a call."""
    def one(a):
        if isinstance(a, hal.Tensor):
            return f"<{a.dtype.name}{a.shape}>"
        if isinstance(a, list) and any(isinstance(v, hal.Tensor) for v in a):
            return "[" + ", ".join(map(one, a)) + "]"
        text = repr(a)
        return text if len(text) < 60 else text[:57] + "..."

    if target.startswith("op:"):
        args = args[1:]
    words = [one(a) for a in args] + [f"{k}={one(v)}" for k, v in keywords.items()]
    return f"{target}({', '.join(words)})"


# -- references: numpy's answer, where the fuzz has one -----------------------------------------
CREATION = {"hal.ones": np.ones, "hal.zeros": np.zeros, "hal.full": np.full,
            "hal.arange": np.arange, "hal.linspace": np.linspace, "hal.eye": np.eye,
            "hal.ones_like": np.ones_like, "hal.zeros_like": np.zeros_like,
            "hal.full_like": np.full_like}


def wrong(target: str, args, keywords, out) -> str | None:
    """'' when the result agrees with numpy's, else how it differs; None when there is no
    reference to compare with."""
    if not isinstance(out, hal.Tensor):
        return None
    if target.startswith("op:"):
        return _op_wrong(ops.spec(target[3:]), args[1:], keywords, out)
    if target in CREATION:
        return _creation_wrong(CREATION[target], args, keywords, out)
    if target in ("hal.random.uniform", "hal.random.integers"):
        low = keywords.get("low", 0.0) if target.endswith("uniform") else args[1]
        high = keywords.get("high", 1.0) if target.endswith("uniform") else args[2]
        values = out.numpy().astype(np.float64)
        inside = (values >= low) & (values < high) | (values == low)
        return "" if inside.all() else f"values outside [{low}, {high}): {values[~inside][:3]}"
    return None


def _op_wrong(spec, args, keywords, out) -> str:
    if not all(isinstance(a, hal.Tensor) or a is None for a in args):
        return None  # scalars are promoted by dispatch's rules: the conformance kit checks those
    hosts = [None if a is None else a.numpy() for a in args]
    positions = range(len(args)) if spec.promote == (-1,) else spec.promote
    promoted = [hosts[i].dtype for i in positions if i < len(hosts) and hosts[i] is not None]
    if len(set(promoted)) > 1:
        common = hal.result_type(*promoted)
        hosts = [h if h is None or i not in positions else h.astype(common)
                 for i, h in enumerate(hosts)]
    try:
        expected = spec.evaluate(*hosts, **keywords)
    except Exception as e:  # hal accepted what the reference refuses
        return f"the reference raised {type(e).__name__}: {e}"
    actual = out.numpy()
    bound = spec.bound(*hosts, **keywords) if spec.bound else None
    return mismatch(actual, expected, spec.tolerance_for(expected.dtype), bound)


def _creation_wrong(reference, args, keywords, out) -> str:
    args = [a.numpy() if isinstance(a, hal.Tensor) else a for a in args]
    keywords = {k: v for k, v in keywords.items() if k != "device"}
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            expected = np.asarray(reference(*args, **keywords))
    except Exception:
        return None  # numpy refuses what hal accepts (a device, a hal dtype): nothing to compare
    if expected.dtype not in hal.ALL:
        return None
    return mismatch(out.numpy(), expected, (1e-6, 1e-12))


# -- the worker: runs calls, one JSON line each ---------------------------------------------------
def _worker(device_name: str, seed: int, calls: list[int]) -> None:
    """Run the fuzz calls `calls` on the device, printing a start line before each and its
    outcome after it, so the parent can tell which call crashed or hung."""
    resource.setrlimit(resource.RLIMIT_DATA, (WORKER_MEMORY, WORKER_MEMORY))
    warnings.simplefilter("ignore")
    hal.settings.fallback = "allow"
    device = hal.device(device_name)
    names = targets()
    _emit({"ready": True})
    for i in calls:
        target = names[i % len(names)]
        fn, args, keywords = make_call(target, device, seed, i)
        repro = show(target, args, keywords)
        _emit({"start": i, "target": target, "repro": repro})
        record = {"i": i, "target": target, "repro": repro, "outcome": "ok"}
        try:
            out = fn(*args, **keywords)
            problem = wrong(target, args, keywords, out)
            record["checked"] = problem is not None
            if problem:
                record.update(outcome="wrong", message=problem)
        except hal.HalError as e:
            record.update(outcome="HalError", type=type(e).__name__, message=str(e))
        except KeyboardInterrupt:
            raise
        except BaseException as e:  # the findings this fuzz exists for
            arity = isinstance(e, TypeError) and e.__traceback__.tb_next is None
            record.update(outcome="arity" if arity else "other", type=type(e).__name__,
                          message=str(e))
        record["message"] = record.get("message", "")[:300]
        _emit(record)


def _emit(record: dict) -> None:
    print("FUZZ " + json.dumps(record), flush=True)


WORKER = [sys.executable, "-m", "tests.test_fuzz", "--worker"]  # + device, --seed, --calls


def run(device: str, calls: int, seed: int = 0, timeout: float = CALL_TIMEOUT,
        worker: list[str] = WORKER) -> list[dict]:
    """Run `calls` fuzz calls on `device` in worker processes: one record per call, with
    outcome ok, HalError, arity, other, crash, hang or wrong. A worker that dies or hangs
    is replaced and the fuzz goes on after the call it was running."""
    records: list[dict] = []
    todo = list(range(calls))
    while todo:
        done, started = _run_worker(worker, device, seed, todo, timeout, records)
        todo = [i for i in todo if i not in done and i != started.get("start")]
        if started:
            records.append({**started, "i": started["start"], **started["fault"]})
    return records


def _run_worker(command: list[str], device: str, seed: int, todo: list[int], timeout: float,
                records: list[dict]) -> tuple[set[int], dict]:
    """One worker over `todo`; (calls that finished, the call running when it died or hung
    with its fault: {} when the worker got through them all)."""
    worker = subprocess.Popen(
        [*command, device, "--seed", str(seed), "--calls", ",".join(map(str, todo))],
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
        cwd=Path(__file__).parents[1])
    lines: queue.Queue = queue.Queue()
    threading.Thread(target=lambda: [lines.put(x) for x in worker.stdout] + [lines.put(None)],
                     daemon=True).start()
    done, started, ready = set(), {}, False
    while True:
        try:
            line = lines.get(timeout=timeout if ready else max(timeout, 300))
        except queue.Empty:
            worker.kill()
            worker.wait()
            if not started:
                raise RuntimeError(f"the fuzz worker on {device} did not start") from None
            started["fault"] = {"outcome": "hang", "message": f"no answer in {timeout:g} s"}
            return done, started
        if line is None:
            code = worker.wait()
            if started:
                how = (f"killed by {signal.Signals(-code).name}" if code < 0 else
                       f"exited with code {code}")
                started["fault"] = {"outcome": "crash", "type": how, "message": how}
            elif len(done) < len(todo):
                raise RuntimeError(f"the fuzz worker on {device} ended with code {code} "
                                   "before its first call")
            return done, started
        if not line.startswith("FUZZ "):
            continue
        record = json.loads(line[5:])
        if "ready" in record:
            ready = True
        elif "start" in record:
            started = record
        else:
            records.append(record)
            done.add(record["i"])
            started = {}


def summary(records: list[dict]) -> tuple[Counter, dict]:
    """(calls per outcome, with findings split by type; finding groups: (target, outcome
    or type) -> {calls, repro, message})."""
    counts: Counter = Counter()
    groups: dict[tuple[str, str], dict] = {}
    for r in records:
        kind = r["outcome"] if r["outcome"] not in ("other", "crash") else \
            f"{r['outcome']}:{r.get('type')}"
        counts[r["outcome"]] += 1
        counts["ok, checked against numpy"] += r["outcome"] == "ok" and r.get("checked", False)
        if r["outcome"] in (*FINDINGS, "arity"):
            counts[kind] += kind != r["outcome"]
            group = groups.setdefault((r["target"], kind), {"calls": 0, "repro": r["repro"],
                                                            "message": r.get("message", "")})
            group["calls"] += 1
    return counts, groups


# -- the CI size -----------------------------------------------------------------------------
@pytest.mark.slow
@pytest.mark.parametrize(("device", "rounds"), [("cpu", 3), ("null", 1), ("opencl:0", 1)])
def test_public_api_answers_bad_input_with_a_hal_error(device, rounds):
    """A small fuzz, `rounds` calls per target: no crash, hang, wrong answer or exception
    but HalError and Python's own arity TypeError."""
    if device.split(":")[0] not in hal.available_backends():
        pytest.skip(f"{device} is not available here")
    records = run(device, len(targets()) * rounds, seed=12)
    counts, groups = summary(records)
    print(f"\npublic API fuzz on {device}: {len(records)} calls, {dict(counts)}")
    findings = [f"{kind} in {target}: {g['repro']}: {g['message']}"
                for (target, kind), g in groups.items() if not kind.startswith("arity")]
    assert findings == [], "\n".join(findings[:30])
    assert counts["ok"] > 30 * rounds and counts["HalError"] > 30 * rounds  # both sides ran


CLI_CASES = [
    ["devices", "--bogus"], ["devices", "--json", "extra"],
    ["conformance", "--examples", "0"], ["conformance", "--examples", "-3"],
    ["conformance", "--examples", "x"], ["conformance", "--backend", "nosuch"],
    ["conformance", "--backend", "cpu:x"], ["conformance", "--backend", "cpu:7"],
    ["conformance", "--backend", "cpu", "--ops", "nosuchop"],
    ["conformance", "--backend", "cpu", "--dtypes", "float128"],
    ["bench", "--suite", "nosuch"], ["bench", "--backend", "nosuch", "--suite", "smoke"],
    ["bench", "--rounds", "-1"], ["bench", "--rounds", "0"], ["bench", "--timeout", "-5"],
    ["bench", "--dtype", "float128", "--suite", "smoke"], ["bench", "--resume", "no/such"],
    ["bench", "--resume", "../x"], ["report"], ["report", "/no/such/file.jsonl"],
    ["compare", "a"], ["compare", "/no/a.jsonl", "/no/b.jsonl"],
    ["compare", "a", "b", "--threshold", "-1"], ["compare", "a", "b", "--alpha", "2"],
    ["tune", "--trials", "0"], ["tune", "--time-limit", "-1"], ["tune", "--time-limit", "0"],
    ["tune", "--workload", "nosuch"], ["nosuchcommand"], [],
]


@pytest.mark.slow
@pytest.mark.parametrize("argv", CLI_CASES, ids=[" ".join(a) or "(none)" for a in CLI_CASES])
def test_the_command_line_refuses_bad_input_in_one_line(argv, tmp_path, monkeypatch):
    from hal.cli import main

    monkeypatch.setenv("HAL_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(hal.settings, "cache_dir", tmp_path)
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = main(argv)
        except SystemExit as e:  # argparse's usage error
            code = e.code
    text = err.getvalue() + out.getvalue()
    assert code not in (0, None), f"{argv} was accepted:\n{text}"
    assert "Traceback" not in text
    assert text.strip(), f"{argv} failed without saying why"


FAULTY_WORKER = """
import json, os, signal, sys, time
print("FUZZ " + json.dumps({"ready": True}), flush=True)
for i in map(int, sys.argv[sys.argv.index("--calls") + 1].split(",")):
    print("FUZZ " + json.dumps({"start": i, "target": f"t{i}", "repro": f"t{i}()"}), flush=True)
    if i == 1:
        os.kill(os.getpid(), signal.SIGSEGV)
    if i == 2:
        time.sleep(60)
    print("FUZZ " + json.dumps({"i": i, "target": f"t{i}", "repro": f"t{i}()",
                                "outcome": "ok"}), flush=True)
"""


def test_the_fuzz_names_a_crash_and_a_hang():
    """The worker protocol: a call that kills the worker is a crash naming the signal, one
    that does not answer in time is a hang, and the calls after each still run."""
    records = run("cpu", 4, timeout=1.0, worker=[sys.executable, "-c", FAULTY_WORKER])
    outcomes = {r["i"]: (r["outcome"], r.get("type")) for r in records}
    assert outcomes == {0: ("ok", None), 1: ("crash", "killed by SIGSEGV"),
                        2: ("hang", None), 3: ("ok", None)}


def main(argv: list[str] | None = None) -> int:
    """The fuzz at any size: counts per device and one repro line per finding group."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--calls", type=int, default=5000, help="calls per device")
    parser.add_argument("--device", action="append", help="device(s); default cpu")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--timeout", type=float, default=CALL_TIMEOUT, help="seconds per call")
    parser.add_argument("--json", type=Path, help="write every record here (JSON lines)")
    args = parser.parse_args(argv)
    for device in args.device or ["cpu"]:
        records = run(device, args.calls, args.seed, args.timeout)
        counts, groups = summary(records)
        print(f"{device}: {len(records)} calls, " + ", ".join(
            f"{k} {n}" for k, n in sorted(counts.items())))
        print(f"  {sum(1 for _, kind in groups if not kind.startswith('arity'))} finding "
              f"groups, {sum(1 for _, kind in groups if kind.startswith('arity'))} arity groups")
        for (_, kind), g in sorted(groups.items(), key=lambda kv: kv[0][1]):
            print(f"  {kind:28} {g['calls']:5}  {g['repro']}: {g['message'][:160]}")
        if args.json:
            with args.json.open("a") as f:
                f.writelines(json.dumps({"device": device, **r}) + "\n" for r in records)
    return 0


if __name__ == "__main__":
    if sys.argv[1:2] == ["--worker"]:
        worker_args = argparse.ArgumentParser()
        worker_args.add_argument("device")
        worker_args.add_argument("--seed", type=int)
        worker_args.add_argument("--calls")
        w = worker_args.parse_args(sys.argv[2:])
        _worker(w.device, w.seed, [int(i) for i in w.calls.split(",")])
    else:
        sys.exit(main())
