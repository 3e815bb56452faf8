"""A bounded fuzz of every op and of the command line: bad input must be a clear HalError.

Each op is called with operands and keyword values drawn from a fixed-seed pool of
good and bad things (tensors of every dtype and awkward shapes, Python scalars, None,
strings, lists, wrong-typed parameters). A call may succeed or raise a HalError; any
other exception is a finding, listed with a repro line. The command line is fuzzed the
same way with wrong flags and values: argparse's usage error (exit 2) or a one-line
`hal: ...` error are clear; a traceback is a finding. The counts print with -s.
"""

from __future__ import annotations

import contextlib
import inspect
import io
import warnings
from collections import Counter

import numpy as np
import pytest

import hal
from hal import ops

SEED = 12
CALLS_PER_OP = 80
SHAPES = [(), (0,), (3,), (2, 3), (1, 3), (4, 1, 3), (2, 0, 2)]
BAD_VALUES = [None, 0, 1, -1, 2.5, -7, "x", (0,), (0, 1), (1, 0), ((0, 1, 1),), ((1, 1),),
              True, 10**20, float("nan"), [0], {}, "float32", "tanh", "ortho"]


def _tensor(rng, device):
    dtypes = [d for d in hal.ALL if device.supports_dtype(d)]
    dtype = dtypes[rng.integers(len(dtypes))]
    shape = SHAPES[rng.integers(len(SHAPES))]
    values = rng.standard_normal(shape) * 3
    if hal.dtypes.is_complex(dtype):
        values = values + 1j * rng.standard_normal(shape)
    with np.errstate(all="ignore"):
        return hal.asarray(np.asarray(values).astype(dtype), device=device)


def _operand(rng, device):
    kind = rng.integers(10)
    if kind < 6:
        return _tensor(rng, device)
    return [1, 2.5, True, 1j, None, "s", [1.0, 2.0], np.ones(2)][rng.integers(8)] \
        if kind < 9 else BAD_VALUES[rng.integers(len(BAD_VALUES))]


def _keywords(spec):
    return [p.name for p in inspect.signature(spec.meta).parameters.values()
            if p.kind is p.KEYWORD_ONLY]


def _fuzz_op(spec, device, rng, calls: int, outcomes: Counter, findings: list) -> None:
    positional = [p for p in inspect.signature(spec.meta).parameters.values()
                  if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD, p.VAR_POSITIONAL)]
    keywords = _keywords(spec)
    for _ in range(calls):
        n = int(rng.integers(0, len(positional) + 2))
        args = [_operand(rng, device) for _ in range(n)]
        params = {k: BAD_VALUES[rng.integers(len(BAD_VALUES))] for k in keywords
                  if rng.random() < 0.3}
        if rng.random() < 0.1:
            params["unknown_keyword"] = 1
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                hal.op(spec.name, *args, **params)
            outcomes["ok"] += 1
        except hal.HalError:
            outcomes["HalError"] += 1
        except Exception as e:  # the finding this fuzz exists to catch
            outcomes[type(e).__name__] += 1
            findings.append(f"hal.op({spec.name!r}, {_show(args)}, **{params!r}) on "
                            f"{device.name}: {type(e).__name__}: {e}")


def _show(args) -> str:
    return ", ".join(f"<{a.dtype.name}{a.shape}>" if isinstance(a, hal.Tensor) else repr(a)
                     for a in args)


@pytest.mark.slow
def test_every_op_answers_bad_input_with_a_hal_error():
    hal.settings.fallback = "allow"
    rng = np.random.default_rng(SEED)
    outcomes, findings = Counter(), []
    for name, calls in (("cpu", CALLS_PER_OP), ("null", CALLS_PER_OP // 4),
                        ("opencl", CALLS_PER_OP // 16)):
        if name not in hal.available_backends():
            continue
        device = hal.device(name)
        for spec in ops.specs():
            _fuzz_op(spec, device, rng, calls, outcomes, findings)
    print(f"\nop fuzz: {sum(outcomes.values())} calls, {dict(outcomes)}")
    assert findings == [], "\n".join(findings[:20])
    assert outcomes["ok"] > 100 and outcomes["HalError"] > 100  # both sides were exercised


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
