"""INT8 figures side by side: `python -m benchmarks.int8_figures [--json F] [--devices D,...]`.

all-MiniLM-L6-v2 in FP32 and INT8 (`frontends.quant.quant_post_dynamic`, per-channel
int8 weights, dynamic uint8 activations) on hal's devices, beside ONNX Runtime's CPU
provider on the graph hal exports (INT8 by its quantize_dynamic), all in one process:

(1) Throughput, samples/s at sequence 128, batch 8 (and 32 on the cpu and onnxruntime
    backends, as the `int8` suite): hal FP32, hal INT8 and their ratio per device, the
    ONNX Runtime peer's FP32, INT8 and ratio, the published claim (780 -> 2300 samples/s,
    2.95x, V100) beside, and hal's best INT8 against ONNX Runtime's INT8. Each row is the
    median of `--repeats` calls after a warm-up call, the rows called in turn (round
    robin), so that load from other work falls on all of them alike; each output's cosine
    to the numpy FP32 reference is shown.
(2) Retention on the shipped sentence set (frontends/nn/data/topics.tsv: 96 sentences, 8
    topics), INT8 against FP32 of the same runtime: embedding cosine (min, mean),
    nearest-neighbour agreement (the fraction of sentences whose nearest other sentence is
    the same under INT8 as under FP32) and topic neighbour accuracy (the nearest other
    sentence shares the topic) in FP32 and INT8; per-channel and per-tensor weights. Goal:
    agreement >= 99.2% and every cosine >= 0.99.
(3) Round trip at batch 8 x 128: hal MiniLM -> hal.onnx.export -> onnx.checker -> ONNX
    Runtime, against hal eager; and -> hal.onnx.load -> hal cpu, against hal eager (max
    abs difference), FP32 and INT8.

The 1/5/15-minute load averages are recorded around every figure (the machine may be
shared). A device that cannot run a row says why.
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

import hal
from benchmarks.figures import finish, measured
from benchmarks.suites import int8 as suite
from frontends import nn, quant
from frontends.nn import finetune

DEVICES = ("cpu", "onnxruntime:0", "tvm", "opencl")
THROUGHPUT_BATCHES = (8, suite.LARGE_BATCH)
AGREEMENT_GOAL = 0.992
COSINE_GOAL = 0.99
PEER = "onnxruntime peer (host)"


# -- measuring ----------------------------------------------------------------------------------
def interleaved_medians(calls: dict, repeats: int) -> dict:
    """{key: {median_s, samples_s, first_call_s, output}}: each call once as a warm-up
    (timed apart; a call that raises a HalError there gets {skipped: why} and is left
    out), then `repeats` rounds calling the others once each in turn."""
    out, running = {}, {}
    for key, call in calls.items():
        start = time.perf_counter()
        try:
            output = call()
        except hal.HalError as e:
            out[key] = _skipped(e)
            continue
        out[key] = {"first_call_s": time.perf_counter() - start, "samples_s": [],
                    "output": output}
        running[key] = call
    for _ in range(repeats):
        for key, call in running.items():
            start = time.perf_counter()
            call()
            out[key]["samples_s"].append(time.perf_counter() - start)
    for key in running:
        out[key]["median_s"] = float(np.median(out[key]["samples_s"]))
    return out


def _skipped(exc: Exception) -> dict:
    return {"skipped": f"{type(exc).__name__}: {exc}"}


def open_devices(names) -> tuple[list[hal.Device], dict[str, dict]]:
    """(the devices that open, {name: skipped reason} for those that do not)."""
    opened, missing = [], {}
    for name in names:
        try:
            opened.append(hal.device(name))
        except hal.HalError as e:
            missing[name] = _skipped(e)
    return opened, missing


def _hal_call(run: Callable, ids: np.ndarray, mask: np.ndarray, device: hal.Device) -> Callable:
    """A call of run(ids, mask) on `device` that returns the output on the host."""
    args = [hal.asarray(ids, device=device), hal.asarray(mask, device=device)]
    return lambda: run(*args).numpy()


def _ort_call(session, ids: np.ndarray, mask: np.ndarray) -> Callable:
    feed = {"input_ids": ids, "attention_mask": mask}
    return lambda: session.run(None, feed)[0]


# -- (1) throughput -----------------------------------------------------------------------------
def _pair(fp32: dict, int8: dict, batch: int) -> dict:
    """FP32 and INT8 rows with samples/s and the INT8/FP32 speed ratio."""
    out = {"fp32": fp32, "int8": int8}
    for row in (fp32, int8):
        if "median_s" in row:
            row["samples_per_s"] = batch / row["median_s"]
    if "median_s" in fp32 and "median_s" in int8:
        out["int8/fp32"] = fp32["median_s"] / int8["median_s"]
    return out


def figure_throughput(devices: list[hal.Device], repeats: int) -> dict:
    """Samples/s of hal FP32 and INT8 per device and of the ONNX Runtime peer, per batch."""
    out = {"seq": suite.SEQ, "repeats": repeats, "batches": {}}
    for batch in THROUGHPUT_BATCHES:
        t = suite.tokens(batch)
        ids, mask = t["input_ids"], t["attention_mask"]
        expected = suite.embeddings_reference(ids, mask)
        calls, rows = {}, {}
        here = [d for d in devices if batch < suite.LARGE_BATCH
                or d.backend.name in suite.LARGE_BATCH_BACKENDS]
        for device in here:
            for precision in ("fp32", "int8"):
                calls[(device.name, precision)] = _hal_call(suite.encoder(device, precision),
                                                            ids, mask, device)
        try:
            sessions = suite.ort_sessions(ids, mask, {"fp32": {}, "int8": {"per_channel": True}})
            for precision, session in sessions.items():
                calls[(PEER, precision)] = _ort_call(session, ids, mask)
        except hal.HalError as e:
            rows[PEER] = _skipped(e)
        for (name, precision), row in interleaved_medians(calls, repeats).items():
            if "output" in row:
                row["cosine_min"] = suite.cosine_quality(row.pop("output"),
                                                         expected)["cosine_min"]
            rows.setdefault(name, {})[precision] = row
        out["batches"][batch] = {name: _pair(r.get("fp32", {}), r.get("int8", {}), batch)
                                 if "skipped" not in r else r for name, r in rows.items()}
        out["batches"][batch]["best_hal_int8_vs_ort_int8"] = _best_vs_peer(
            out["batches"][batch])
    claim = suite.CLAIM_SAMPLES_PER_S
    out["claim"] = {**claim, "int8/fp32": claim["int8"] / claim["fp32"], "text": suite.CLAIM}
    return out


def _best_vs_peer(rows: dict) -> dict | None:
    """hal's fastest INT8 row against the peer's INT8: (device, samples/s, ratio)."""
    hal_rows = [(name, r["int8"]["samples_per_s"]) for name, r in rows.items()
                if name != PEER and "samples_per_s" in r.get("int8", {})]
    peer = rows.get(PEER, {}).get("int8", {}).get("samples_per_s")
    if not hal_rows or not peer:
        return None
    name, rate = max(hal_rows, key=lambda x: x[1])
    return {"device": name, "samples_per_s": rate, "ort_int8_samples_per_s": peer,
            "hal/ort": rate / peer}


# -- (2) retention ------------------------------------------------------------------------------
def nearest_other(embeddings: np.ndarray) -> np.ndarray:
    """For each row, the index of the most cosine-similar other row."""
    e = np.asarray(embeddings, np.float64)
    e = e / np.linalg.norm(e, axis=-1, keepdims=True)
    similarity = e @ e.T
    np.fill_diagonal(similarity, -np.inf)
    return similarity.argmax(axis=1)


def neighbour_agreement(fp32: np.ndarray, int8: np.ndarray) -> float:
    """The fraction of rows whose nearest other row is the same in both sets."""
    return float(np.mean(nearest_other(fp32) == nearest_other(int8)))


def topic_accuracy(embeddings: np.ndarray, topics) -> float:
    """The fraction of rows whose nearest other row has the same topic."""
    topics = np.asarray(topics)
    return float(np.mean(topics[nearest_other(embeddings)] == topics))


def retention(fp32: np.ndarray, int8: np.ndarray, topics) -> dict:
    """How much of FP32's embedding geometry INT8 keeps: cosine to FP32 (min, mean),
    nearest-neighbour agreement, topic accuracy in both, and whether the goal is met."""
    cos = suite.cosines(int8, fp32)
    agreement = neighbour_agreement(fp32, int8)
    return {"cosine_min": float(cos.min()), "cosine_mean": float(cos.mean()),
            "neighbour_agreement": agreement,
            "topic_accuracy_fp32": topic_accuracy(fp32, topics),
            "topic_accuracy_int8": topic_accuracy(int8, topics),
            "goal_met": bool(agreement >= AGREEMENT_GOAL and cos.min() >= COSINE_GOAL)}


def _hal_retention(device: hal.Device, ids, mask, expected, topics) -> dict:
    fp32 = _hal_call(suite.encoder(device, "fp32"), ids, mask, device)()
    row = {"fp32_cosine_min_to_reference": suite.cosine_quality(fp32, expected)["cosine_min"]}
    for label, per_channel in (("int8 per-channel", True), ("int8 per-tensor", False)):
        quantized = suite.int8_model(device, per_channel)
        int8 = _hal_call(hal.jit(lambda i, m, q=quantized: q(i, m)), ids, mask, device)()
        row[label] = retention(fp32, int8, topics)
    return row


def _peer_retention(ids, mask, expected, topics) -> dict:
    variants = {"fp32": {}, "int8 per-channel": {"per_channel": True},
                "int8 per-tensor": {"per_channel": False}}
    if not quant.peers.has_vnni():
        variants["int8 per-channel, u8 x s8 default (int16 sums)"] = {
            "per_channel": True, "exact_int8": False}
    sessions = suite.ort_sessions(ids, mask, variants)
    outputs = {name: _ort_call(s, ids, mask)() for name, s in sessions.items()}
    fp32 = outputs.pop("fp32")
    row = {"fp32_cosine_min_to_reference": suite.cosine_quality(fp32, expected)["cosine_min"]}
    return {**row, **{name: retention(fp32, out, topics) for name, out in outputs.items()}}


def figure_retention(devices: list[hal.Device]) -> dict:
    """INT8 against FP32 on the 96 shipped sentences, per device and for the peer."""
    rows = finetune.read_topics()
    topics = [topic for topic, _ in rows]
    t = nn.tokenize(suite.tokenizer(), [s for _, s in rows], max_length=suite.SEQ)
    ids, mask = t["input_ids"], t["attention_mask"]
    expected = suite.embeddings_reference(ids, mask)
    out = {"sentences": len(rows), "topics": len(set(topics)), "tokens": int(ids.shape[1]),
           "goal": {"neighbour_agreement": AGREEMENT_GOAL, "cosine_min": COSINE_GOAL},
           "reference_topic_accuracy": topic_accuracy(expected, topics), "rows": {}}
    for device in devices:
        try:
            out["rows"][device.name] = _hal_retention(device, ids, mask, expected, topics)
        except hal.HalError as e:
            out["rows"][device.name] = _skipped(e)
    try:
        out["rows"][PEER] = _peer_retention(ids, mask, expected, topics)
    except hal.HalError as e:
        out["rows"][PEER] = _skipped(e)
    return out


# -- (3) round trip -----------------------------------------------------------------------------
def _max_abs(a, b) -> float:
    return float(np.max(np.abs(np.asarray(a, np.float64) - np.asarray(b, np.float64))))


def round_trip(sentence_encoder, ids: np.ndarray, mask: np.ndarray, directory: Path) -> dict:
    """Export the encoder, check the file, run it in ONNX Runtime and through hal.onnx.load
    on cpu; each output's max abs difference to the encoder run eagerly on cpu."""
    import onnx

    cpu = hal.device("cpu")
    args = [hal.asarray(ids, device=cpu), hal.asarray(mask, device=cpu)]
    eager = sentence_encoder(*args).numpy()
    path = suite.export_minilm(directory / "model.onnx", sentence_encoder, ids, mask)
    onnx.checker.check_model(str(path))
    ops = sorted({node.op_type for node in onnx.load(str(path)).graph.node})
    ort = _ort_call(quant.peers.ort_session(path), ids, mask)()
    loaded = hal.onnx.load(path)(*args)[0].numpy()
    return {"onnx_mb": path.stat().st_size / 1e6, "checker": "passed", "onnx_ops": ops,
            "ort_max_abs_diff": _max_abs(ort, eager),
            "hal_load_max_abs_diff": _max_abs(loaded, eager)}


def figure_round_trip(batch: int = 8) -> dict:
    """The export/import round trip of MiniLM FP32 and INT8 at (batch, SEQ)."""
    t = suite.tokens(batch)
    cpu = hal.device("cpu")
    out = {"batch": batch, "seq": suite.SEQ, "rows": {}}
    for precision, make in (("fp32", suite.model), ("int8", suite.int8_model)):
        with tempfile.TemporaryDirectory(prefix="hal-int8-round-trip-") as directory:
            try:
                out["rows"][precision] = round_trip(make(cpu), t["input_ids"],
                                                    t["attention_mask"], Path(directory))
            except hal.HalError as e:
                out["rows"][precision] = _skipped(e)
    return out


# -- text ---------------------------------------------------------------------------------------
def _load(figure: dict) -> str:
    before, after = figure["load"]["before"], figure["load"]["after"]
    return f"load {', '.join(map(str, before))} -> {', '.join(map(str, after))}"


def _rate_text(row: dict) -> str:
    if "skipped" in row:
        return f"skipped: {row['skipped']}"
    if "samples_per_s" not in row:
        return "-"
    batch_rates = sorted(row["samples_per_s"] * row["median_s"] / t for t in row["samples_s"])
    return (f"{row['samples_per_s']:6.1f} ({batch_rates[0]:.1f}-{batch_rates[-1]:.1f}) "
            f"cos {row['cosine_min']:.4f}")


def _throughput_text(f: dict) -> list[str]:
    claim = f["claim"]
    lines = [f"(1) Throughput, samples/s, seq {f['seq']}; medians of {f['repeats']} calls, rows "
             f"in turn  [{_load(f)}]",
             f"  claim: {claim['text']}",
             f"  batch {suite.LARGE_BATCH} on the {' and '.join(suite.LARGE_BATCH_BACKENDS)} "
             "backends only (as the int8 suite)"]
    for batch, rows in f["batches"].items():
        lines.append(f"  batch {batch}:{'':<21}{'FP32 median (range)':>33}"
                     f"{'INT8 median (range)':>33}   INT8/FP32")
        for name, r in rows.items():
            if name == "best_hal_int8_vs_ort_int8":
                continue
            label = name if name == PEER else f"hal {name}"
            if "skipped" in r:
                lines.append(f"    {label:<28} skipped: {r['skipped']}")
                continue
            ratio = f"{r['int8/fp32']:.2f}x" if "int8/fp32" in r else "-"
            lines.append(f"    {label:<28}{_rate_text(r['fp32']):>33}{_rate_text(r['int8']):>33}"
                         f"   {ratio}")
        best = rows["best_hal_int8_vs_ort_int8"]
        if best:
            lines.append(f"    hal's best INT8 ({best['device']}) {best['samples_per_s']:.1f} vs "
                         f"ONNX Runtime INT8 {best['ort_int8_samples_per_s']:.1f} samples/s: "
                         f"{best['hal/ort']:.2f}x")
    return [*lines, ""]


def _retention_text(f: dict) -> list[str]:
    goal = f["goal"]
    lines = [f"(2) Retention, INT8 vs FP32 of the same runtime: {f['sentences']} sentences, "
             f"{f['topics']} topics, padded to {f['tokens']} tokens; goal: agreement >= "
             f"{goal['neighbour_agreement']:.1%}, cosine >= {goal['cosine_min']}  [{_load(f)}]",
             f"  numpy FP32 reference: topic neighbour accuracy "
             f"{f['reference_topic_accuracy']:.1%}",
             f"    {'':<58}{'cos min':>8}{'cos mean':>9}{'agree':>8}"
             f"{'topic FP32':>11}{'INT8':>7}  goal"]
    for name, row in f["rows"].items():
        label = name if name == PEER else f"hal {name}"
        if "skipped" in row:
            lines.append(f"  {label}: skipped: {row['skipped']}")
            continue
        lines.append(f"  {label} (its FP32 against the numpy reference: 1 - cosine <= "
                     f"{1 - row['fp32_cosine_min_to_reference']:.1e})")
        for variant, r in row.items():
            if variant == "fp32_cosine_min_to_reference":
                continue
            lines.append(f"    {variant:<58}{r['cosine_min']:>8.4f}{r['cosine_mean']:>9.4f}"
                         f"{r['neighbour_agreement']:>8.1%}{r['topic_accuracy_fp32']:>11.1%}"
                         f"{r['topic_accuracy_int8']:>7.1%}  {'met' if r['goal_met'] else 'no'}")
    return [*lines, ""]


def _round_trip_text(f: dict) -> list[str]:
    lines = [f"(3) Round trip at batch {f['batch']} x {f['seq']}: export -> onnx.checker -> "
             f"ONNX Runtime / hal.onnx.load on cpu, vs hal eager on cpu  [{_load(f)}]"]
    for precision, r in f["rows"].items():
        if "skipped" in r:
            lines.append(f"  {precision}: skipped: {r['skipped']}")
            continue
        lines.append(f"  {precision}: {r['onnx_mb']:.1f} MB, checker {r['checker']}; max abs "
                     f"diff ONNX Runtime {r['ort_max_abs_diff']:.2g}, hal.onnx.load "
                     f"{r['hal_load_max_abs_diff']:.2g}; ops {', '.join(r['onnx_ops'])}")
    return lines


def text(results: dict) -> str:
    """The figures as plain text."""
    f = results["figures"]
    lines = [f"Machine: {results['cores']} cores; devices {', '.join(results['devices'])}"
             + "".join(f"; {n} {r['skipped']}" for n, r in results["missing"].items())
             + "; load average (1, 5, 15 min) per figure.", ""]
    for key, render in (("1", _throughput_text), ("2", _retention_text),
                        ("3", _round_trip_text)):
        if key in f:
            lines += render(f[key])
    return "\n".join(lines)


def main(argv=None) -> None:
    """Measure the figures and print them (and write them as JSON with --json)."""
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--json", help="also write the results to this file")
    p.add_argument("--devices", default=",".join(DEVICES),
                   help=f"comma-separated hal devices (default {','.join(DEVICES)})")
    p.add_argument("--figures", default="123", help="which figures, e.g. '13'")
    p.add_argument("--repeats", type=int, default=5, help="(1) timed calls per row")
    args = p.parse_args(argv)
    devices, missing = open_devices([d for d in args.devices.split(",") if d])
    run = {"1": lambda: figure_throughput(devices, args.repeats),
           "2": lambda: figure_retention(devices), "3": figure_round_trip}
    results = {"cores": os.cpu_count(), "devices": [d.name for d in devices],
               "missing": missing, "figures": {}}
    for key in "123":
        if key in args.figures:
            results["figures"][key] = measured(run[key])
    finish(results, args.json, text)


if __name__ == "__main__":
    main()
