"""The "INT8" section: MiniLM's throughput in FP32 and INT8 per runtime beside the published
claim, hal's best INT8 against ONNX Runtime's, qmatmul 512^3 per runtime against ONNX
Runtime's MatMulInteger, the accuracy INT8 retains on the shipped sentences, and the ONNX
export/import round trip (from the int8 suite's facts)."""

from __future__ import annotations

import pandas as pd

from benchmarks.schema.records import Measurement, Results
from reports.figures.lookup import case_and_label, number, ok, ratio, seconds_cell, suite_section
from reports.section import Block, Section

RETENTION = ("cosine_min", "cosine_mean", "neighbour_agreement", "topic_accuracy_fp32",
             "topic_accuracy_int8")


def sections(results: list[Results]) -> list[Section]:
    """The section, empty without int8 suite measurements."""
    return suite_section(results, "int8", "INT8", _blocks)


def _blocks(ms: list[Measurement]) -> list[Block]:
    blocks: list[Block] = []
    throughput = throughput_table(ms)
    if not throughput.empty:
        claims = sorted({str(m.params["claim"]) for m in ms if "claim" in m.params})
        blocks += [f"Throughput in samples/s (median) at sequence length {_seq(ms)}; INT8/FP32 is "
                   "INT8's rate over FP32's in the same runtime; the cosines are each output's "
                   f"lowest to the numpy FP32 reference. The claim: {'; '.join(claims)}.",
                   throughput, *best_against_peer(ms)]
    products = qmatmul_table(ms)
    if not products.empty:
        blocks += ["qmatmul (uint8 x int8 -> int32, exact) per runtime: integer operations per "
                   "second (median), against ONNX Runtime's MatMulInteger in the same run; the "
                   "product form chosen for this CPU, its int8 units and the thread count.",
                   products]
    kept = retention_table(ms)
    if not kept.empty:
        blocks += [f"Retention on the shipped sentences ({_sentences(ms)}), INT8 against FP32 "
                   "of the same runtime: "
                   "INT8's cosine to FP32, the nearest-neighbour agreement (the share of "
                   "sentences whose nearest other sentence INT8 keeps) and the topic neighbour "
                   "accuracy (the nearest other sentence shares the topic) in FP32 and INT8; "
                   f"the goal: {_goal(ms)}.", kept]
    trip = round_trip_table(ms)
    if not trip.empty:
        blocks += ["Round trip on cpu: the model exported (`hal.onnx.export`), checked by "
                   "`onnx.checker`, run in ONNX Runtime and through `hal.onnx.load`; each "
                   "output's max abs difference to the model run eagerly.", trip]
    return blocks


def _goal(ms: list[Measurement]) -> str:
    """The retention goal the facts name, in words."""
    goals = {(m.facts["goal_agreement"], m.facts["goal_cosine"]) for m in ms
             if "goal_cosine" in m.facts}
    return "; ".join(f"agreement >= {a:.1%} and every cosine >= {c}" for a, c in sorted(goals))


def _sentences(ms: list[Measurement]) -> str:
    """The sentence set the retention facts were measured on, in words."""
    sets = {(m.facts["sentences"], m.facts["topics"], m.facts["tokens"]) for m in ms
            if "sentences" in m.facts}
    return "; ".join(f"{int(n)} sentences, {int(t)} topics, {int(k)} tokens"
                     for n, t, k in sorted(sets))


def _seq(ms: list[Measurement]) -> str:
    return ", ".join(sorted({str(m.params["seq"]) for m in ms if "seq" in m.params}))


def _runtime(m: Measurement) -> str:
    """hal with its device, or the peer with its version (and its provider and device,
    where the record names them)."""
    if "peer" not in m.params:
        return f"hal {m.device}"
    where = m.facts.get("peer_device")  # the provider and where it ran, where recorded
    return f"ONNX Runtime peer ({m.facts.get('peer', m.params['peer'])}" + (
        f" on {where})" if where else ")")


def _precision(m: Measurement) -> str:
    return case_and_label(m)[1].removeprefix("ort-")


def _pairs(ms: list[Measurement]) -> dict[tuple[int, str], dict[str, Measurement]]:
    """(batch, runtime) -> {"fp32", "int8": measurement} of the minilm throughput workloads."""
    pairs: dict[tuple[int, str], dict[str, Measurement]] = {}
    for m in ms:
        if case_and_label(m)[0] == "minilm":
            pairs.setdefault((int(m.params["batch"]), _runtime(m)), {})[_precision(m)] = m
    return pairs


def _rate(m: Measurement | None) -> float | None:
    return m.metrics.get("items_per_s") if m is not None and m.status == "ok" else None


def _rate_cell(m: Measurement | None) -> str:
    if m is None:
        return ""
    return number(_rate(m), ".1f") if m.status == "ok" else m.status


def _cosine(m: Measurement | None) -> str:
    if m is None or m.status != "ok" or m.check is None:
        return ""
    return number(m.check.quality.get("cosine_min"), ".4f")


def throughput_table(ms: list[Measurement]) -> pd.DataFrame:
    """Batch x runtime: FP32 and INT8 samples/s, INT8/FP32, the cosines to the reference."""
    rows = []
    for (batch, runtime), found in sorted(_pairs(ms).items()):
        fp32, int8 = found.get("fp32"), found.get("int8")
        rows.append({"batch": batch, "runtime": runtime, "FP32 samples/s": _rate_cell(fp32),
                     "INT8 samples/s": _rate_cell(int8), "INT8/FP32": ratio(_rate(int8),
                                                                            _rate(fp32)),
                     "FP32 cosine": _cosine(fp32), "INT8 cosine": _cosine(int8)})
    return pd.DataFrame(rows)


def best_against_peer(ms: list[Measurement]) -> list[str]:
    """Per batch: hal's fastest INT8 runtime against ONNX Runtime's INT8, in a sentence."""
    out = []
    by_batch: dict[int, dict[str, float]] = {}
    for (batch, runtime), found in _pairs(ms).items():
        rate = _rate(found.get("int8"))
        if rate is not None:
            by_batch.setdefault(batch, {})[runtime] = rate
    for batch, rates in sorted(by_batch.items()):
        peer = {r: v for r, v in rates.items() if r.startswith("ONNX Runtime")}
        ours = {r: v for r, v in rates.items() if r not in peer}
        if peer and ours:
            best = max(ours, key=ours.get)
            theirs = max(peer.values())
            out.append(f"Batch {batch}: hal's best INT8 ({best}) {ours[best]:.1f} samples/s "
                       f"against ONNX Runtime's INT8 {theirs:.1f}: {ours[best] / theirs:.2f}x.")
    return out


def _gops(m: Measurement | None) -> float | None:
    """Integer operations per second / 1e9 (the harness's `gflops` of 2 M N K per call)."""
    return m.metrics.get("gflops") if m is not None and m.status == "ok" else None


def qmatmul_table(ms: list[Measurement]) -> pd.DataFrame:
    """Runtime x qmatmul shape: median time, GOP/s, x ONNX Runtime, form, units, threads."""
    found = [m for m in ms if case_and_label(m)[0] == "qmatmul"]
    peers = {_shape(m): _gops(m) for m in found if "peer" in m.params}
    rows = [{"shape": _shape(m), "runtime": _runtime(m), "median": seconds_cell(m),
             "GOP/s": number(_gops(m), ".0f"),
             "x ONNX Runtime": ratio(_gops(m), peers.get(_shape(m))),
             "product form": m.params.get("int8_form", ""),
             "int8 units": m.params.get("int8_units", ""),
             "threads": m.params.get("threads", "")} for m in found]
    return pd.DataFrame(rows)


def _shape(m: Measurement) -> str:
    return "x".join(str(m.params.get(d, "?")) for d in ("M", "N", "K"))


def retention_table(ms: list[Measurement]) -> pd.DataFrame:
    """Runtime x INT8 variant: the retention measures and whether the goal is met."""
    rows = []
    for m in ok(ms):
        variants = sorted({k.split("/")[0] for k in m.facts if k.endswith("/cosine_min")})
        for variant in variants:
            r = {k: m.facts.get(f"{variant}/{k}") for k in RETENTION}
            rows.append({"runtime": _runtime(m), "INT8 variant": variant,
                         "cosine min": number(r["cosine_min"], ".4f"),
                         "cosine mean": number(r["cosine_mean"], ".4f"),
                         "agreement": number(r["neighbour_agreement"], ".1%"),
                         "topic accuracy FP32": number(r["topic_accuracy_fp32"], ".1%"),
                         "topic accuracy INT8": number(r["topic_accuracy_int8"], ".1%"),
                         "goal": str(m.facts.get(f"{variant}/goal_met", "")),
                         "its FP32 against the reference: 1 - cosine": number(
                             1 - m.facts["fp32_cosine_min_to_reference"], ".1e"),
                         "reference topic accuracy": number(
                             m.facts.get("topic_accuracy_reference"), ".1%")})
    return pd.DataFrame(rows)


def round_trip_table(ms: list[Measurement]) -> pd.DataFrame:
    """Precision: the exported file, the two differences to eager (or why one is missing),
    the ops."""
    rows = []
    for m in ok(ms):
        if "onnx_mb" not in m.facts:
            continue
        f = m.facts
        rows.append({"precision": _precision(m), "device": m.device,
                     "ONNX MB": number(f["onnx_mb"], ".1f"), "onnx.checker": f.get("checker", ""),
                     "ONNX Runtime max abs diff": _difference(f.get("ort_max_abs_diff")),
                     "hal.onnx.load max abs diff": _difference(f.get("hal_load_max_abs_diff")),
                     "ops": f.get("onnx_ops", "")})
    return pd.DataFrame(rows)


def _difference(value: float | str | None) -> str:
    """A max abs difference, or the text saying why there is none."""
    return value if isinstance(value, str) else number(value, ".2g")
