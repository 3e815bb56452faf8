"""The "CNN" section: ResNet-50 images/s per batch and runtime (hal per backend, ONNX Runtime
and torch as peers) with hal's rate over ONNX Runtime's on the same device, and the digits
CNN's accuracy in FP32 and INT8 with the retention and images/s (from the cnn suite)."""

from __future__ import annotations

import pandas as pd

from benchmarks.schema.records import Measurement, Results
from reports.figures.lookup import case_and_label, number, ratio, suite_section
from reports.section import Block, Section


def sections(results: list[Results]) -> list[Section]:
    """The section, empty without cnn suite measurements."""
    return suite_section(results, "cnn", "CNN", _blocks)


def _blocks(ms: list[Measurement]) -> list[Block]:
    blocks: list[Block] = []
    throughput = resnet_table(ms)
    if not throughput.empty:
        weights = sorted({str(m.params["weights"]) for m in ms if "weights" in m.params})
        blocks += ["ResNet-50 inference in images/s (median; batch 1 as single-stream queries): "
                   f"weights {'; '.join(weights)}, so the check is each output's cosine to "
                   "the numpy float64 forward of the same weights, not a label. x ORT is hal's "
                   "rate over ONNX Runtime's (on the graph hal exports) on the same device; a "
                   "row not measured gives its status.", throughput]
    accuracy = digits_table(ms)
    if not accuracy.empty:
        targets = sorted({str(m.params["accuracy_target"]) for m in ms
                          if "accuracy_target" in m.params})
        blocks += ["The digits CNN (trained on scikit-learn's load_digits, the held-out images "
                   "in one batch): top-1 accuracy in FP32 and INT8 (every layer int8, "
                   "activations quantized per call), the retention (INT8 over FP32) and "
                   f"images/s; targets: {'; '.join(targets)}.",
                   accuracy]
    return blocks


def _rate(m: Measurement | None) -> float | None:
    return m.metrics.get("items_per_s") if m is not None and m.status == "ok" else None


def _cell(m: Measurement | None) -> str:
    if m is None:
        return ""
    return number(_rate(m), ".1f") if m.status == "ok" else m.status


def _runtime(m: Measurement) -> str:
    label = case_and_label(m)[1]
    return {"ort": "ONNX Runtime", "torch": "torch"}.get(label, "hal")


def resnet_table(ms: list[Measurement]) -> pd.DataFrame:
    """Device x batch (image size): images/s of hal, ONNX Runtime and torch, x ORT, cosine."""
    found: dict[tuple[str, int, str], dict[str, Measurement]] = {}
    for m in ms:
        if case_and_label(m)[0] == "resnet50":
            key = (m.device, int(m.params["batch"]), str(m.params["image"]))
            found.setdefault(key, {})[_runtime(m)] = m
    rows = []
    for (device, batch, image), runs in sorted(found.items()):
        hal_run, ort = runs.get("hal"), runs.get("ONNX Runtime")
        cosine = hal_run.check.quality.get("cosine_min") \
            if hal_run is not None and hal_run.check is not None else None
        rows.append({"device": device, "batch": batch, "image": image,
                     "hal images/s": _cell(hal_run), "ONNX Runtime": _cell(ort),
                     "torch": _cell(runs.get("torch")),
                     "x ORT": ratio(_rate(hal_run), _rate(ort)),
                     "hal cosine": number(cosine, ".6f")})
    return pd.DataFrame(rows)


def digits_table(ms: list[Measurement]) -> pd.DataFrame:
    """Device x precision: top-1 accuracy, retention, images/s of the digits CNN."""
    rows = []
    for m in sorted(ms, key=lambda m: (m.device, m.workload)):
        if case_and_label(m)[0] != "digits_cnn":
            continue
        quality = m.check.quality if m.check is not None else {}
        rows.append({"device": m.device, "precision": str(m.params["precision"]).upper(),
                     "images": m.params["batch"],
                     "top-1": number(quality.get("accuracy"), ".2%"),
                     "retention": number(quality.get("retention"), ".2%"),
                     "images/s": _cell(m)})
    return pd.DataFrame(rows)
