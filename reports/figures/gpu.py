"""The "GPU" section: the GPU figures of a `gpu` suite run, each beside its goal, per device.

Elementwise add in float32, float16 and bfloat16 as % of the device's measured bandwidth
peak (goal >= 85); softmax and layer_norm 8192 x 4096, hal's time over torch's on the same
device (goal <= 1.0); the FFTs, hal over torch (goal <= 1.1); each int8 GEMM, hal's rate
over torch._int_mm's (goal >= 0.8); BERT-base INT8, FP16 and BF16 throughput over FP32's
(goal for INT8 >= 2.95, the published claim's ratio; FP16 and BF16 have none). A figure
whose rows are missing or not `ok` is empty, with the status in its note.

    python -m reports.figures.gpu results/RUN.jsonl     # the table as text
"""

from __future__ import annotations

import sys
from pathlib import Path

import pandas as pd

from benchmarks.schema.files import load_results
from benchmarks.schema.records import Measurement, Results
from reports.figures.lookup import median, number, suite_section
from reports.section import Block, Section

ELEMENTWISE_GOAL, FUSED_GOAL, FFT_GOAL, INT8_GEMM_GOAL, BERT_INT8_GOAL = 85.0, 1.0, 1.1, 0.8, 2.95


def sections(results: list[Results]) -> list[Section]:
    """The section, empty without gpu suite measurements."""
    return suite_section(results, "gpu", "GPU figures", _blocks)


def _blocks(ms: list[Measurement]) -> list[Block]:
    table = figures_table(ms)
    if table.empty:
        return []
    return ["The figures of a GPU against its goals: elementwise as % of the measured "
            "bandwidth peak, hal over torch on the same device (times; rates for the int8 "
            "GEMMs), and BERT-base's throughput in each precision over FP32's.", table]


def _find(ms: list[Measurement], device: str, workload: str, dtype: str | None = None,
          **params) -> Measurement | None:
    """The measurement of `workload` on `device` (of `dtype`, with those params), if any."""
    for m in ms:
        if m.device == device and m.workload == workload and dtype in (None, m.dtype) and \
                all(m.params.get(k) == v for k, v in params.items()):
            return m
    return None


def _status(*found: Measurement | None) -> str:
    """Why a figure is empty: a row not measured, or not ok (its status and reason)."""
    for m in found:
        if m is None:
            return "not measured"
        if m.status != "ok":
            return f"{m.workload} {m.status}: {(m.error or '').strip()[:120]}"
    return ""


def _row(device: str, figure: str, value: float | None, goal: tuple[str, float] | None,
         note: str) -> dict:
    """A figure's row; goal (">=" or "<=", target) or None for a figure without one."""
    met = ""
    if value is not None and goal is not None:
        met = "yes" if (value >= goal[1] if goal[0] == ">=" else value <= goal[1]) else "no"
    return {"device": device, "figure": figure, "value": number(value, ".3g"),
            "goal": "" if goal is None else f"{goal[0]} {goal[1]:g}", "met": met, "note": note}


def _over(a: Measurement | None, b: Measurement | None) -> float | None:
    """median(a) / median(b), None where either is missing or not ok."""
    ta, tb = median(a), median(b)
    return None if ta is None or not tb else ta / tb


def figures_table(ms: list[Measurement]) -> pd.DataFrame:
    """One row per figure and device of the gpu suite's measurements `ms`."""
    rows = []
    for device in sorted({m.device for m in ms}):
        for dtype in ("float32", "float16", "bfloat16"):
            m = _find(ms, device, "add", dtype)
            pct = m.metrics.get("pct_of_peak") if m is not None and m.status == "ok" else None
            rows.append(_row(device, f"add {dtype}: % of bandwidth peak", pct,
                             (">=", ELEMENTWISE_GOAL), _status(m)))
        for name, goal in (("softmax", FUSED_GOAL), ("layer_norm", FUSED_GOAL),
                           ("fft", FFT_GOAL), ("fft2", FFT_GOAL)):
            hal, torch = _find(ms, device, name), _find(ms, device, f"{name}[torch]")
            rows.append(_row(device, f"{name}: hal time / torch", _over(hal, torch),
                             ("<=", goal), _status(hal, torch)))
        for m in [m for m in ms if m.device == device and m.workload == "qmatmul"]:
            shape = {k: m.params.get(k) for k in ("M", "N", "K")}
            torch = _find(ms, device, "qmatmul[torch]", **shape)
            rows.append(_row(device, "int8 GEMM {M}x{N}x{K}: hal rate / torch._int_mm".format(
                **shape), _over(torch, m), (">=", INT8_GEMM_GOAL), _status(m, torch)))
        fp32 = _find(ms, device, "bert-base[fp32]")
        for precision in ("int8", "fp16", "bf16"):
            other = _find(ms, device, f"bert-base[{precision}]")
            goal = (">=", BERT_INT8_GOAL) if precision == "int8" else None
            rows.append(_row(device, f"BERT-base {precision.upper()} / FP32 throughput",
                             _over(fp32, other), goal, _status(fp32, other)))
    return pd.DataFrame(rows)


def main(argv: list[str]) -> int:
    """Print the figures table of the gpu suite measurements in the given results files."""
    ms = [m for path in argv for m in load_results(Path(path)).measurements if m.suite == "gpu"]
    table = figures_table(ms)
    if table.empty:
        print("no gpu suite measurements in " + (", ".join(argv) or "no files"), file=sys.stderr)
        return 1
    print(table.to_string(index=False))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
