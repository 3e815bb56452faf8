"""The published claims the `seed` suite reproduces, as data the report reads.

Each claim compares a baseline with a candidate (FP32 with INT8, a peer library with hal,
a naive parallel layout with a better one). The seed suite's measurements carry
`claim` (the id) and `role` in their params: "candidate" and "baseline" are the two
sides, "peer candidate" and "peer baseline" the same comparison made by the peer
(ONNX Runtime's own INT8 against its FP32), "single" a one-process reference. The report
("Claims vs measured") pairs them by the claim's `metric` and `pairing`. Nothing here
imports hal: the report layer reads it.
"""

from __future__ import annotations

from dataclasses import dataclass

METRICS = ("time", "time per item", "rate", "footprint", "lines")


@dataclass(frozen=True)
class Claim:
    """One published claim.

    `published` is its figures as published, `ratio` how many times better the candidate
    is (None where the claim gives no ratio). `metric` is what is compared: "time" (median
    seconds per call, lower is better), "time per item" (per transform), "rate" (items/s,
    higher is better), "footprint" (peak memory of a call, lower is better) or "lines"
    (no timing comparison: the candidate's line counts). `pairing` "series" compares
    candidate and baseline measured on the same backend (INT8 with FP32), "best" the best
    candidate with the best baseline (hal's fastest backend with the strongest peer).
    `workload` says what we measure for it; `unit` what a "rate" counts.
    """

    id: str
    text: str
    published: str
    ratio: float | None
    metric: str
    pairing: str = "best"
    workload: str = ""
    unit: str = ""


CLAIMS = (
    Claim("bert_int8", "BERT INT8 inference: 780 -> 2300 samples/s at 99.2% accuracy",
          "780 -> 2300 samples/s (FP32 -> INT8, V100), 99.2% of FP32 accuracy", 2300 / 780,
          "rate", "series",
          "all-MiniLM-L6-v2 (6-layer BERT), seq 128, batch 32; FP32 -> dynamic INT8",
          "samples/s"),
    Claim("pde_3rd_order", "3rd-order PDE solve: 12.7 s vs 28.3 s",
          "28.3 s (peer) -> 12.7 s", 28.3 / 12.7, "time", "best",
          "KdV (u_t + u u_x + u_xxx = 0), Kassam-Trefethen ETDRK4, N=256, full solve, float64"),
    Claim("complex_fft", "Complex FFT: 8.4 ms vs 19.1 ms", "19.1 ms (peer) -> 8.4 ms",
          19.1 / 8.4, "time", "best", "2-D complex FFT 1024 x 1024, complex64"),
    Claim("parallel_fft", "1024-point parallel FFT: 3.2 us vs 7.5 us",
          "7.5 us (peer) -> 3.2 us per transform", 7.5 / 3.2, "time per item", "best",
          "1024 batched 1024-point complex FFTs, complex64, time per transform"),
    Claim("parallel_code", "Auto-parallel training: -70% code",
          "70% fewer lines than hand-written parallel training", 1 / 0.3, "lines", "best",
          "the byte-level LM's training script made tensor parallel (tp=2, and dp): code lines "
          "that differ from the single-device script, by annotations and by hand"),
    Claim("utilisation", "Auto-parallel training: +40% utilisation",
          "+40% hardware utilisation", 1.4, "rate", "best",
          "LM training steps on 2 MPI ranks: naive data parallel (one all_reduce per "
          "gradient) -> the best of buckets, ZeRO-2, tensor parallel", "tokens/s"),
    Claim("days_175b", "175B model: 21 -> 9 days", "21 -> 9 days to train", 21 / 9, "time",
          "best", "GPT-3 175B, 300B tokens"),
    Claim("pde_memory", "PDE solves: -40% memory", "40% less memory than the peer",
          1 / 0.6, "footprint", "best",
          "2-D Navier-Stokes (Kolmogorov flow) 1024 x 1024, 5 IF-RK4 steps, float64: peak "
          "resident memory of the solve above its inputs"),
)


def claim(claim_id: str) -> Claim:
    """The claim `claim_id`; KeyError naming the known ids."""
    for c in CLAIMS:
        if c.id == claim_id:
            return c
    raise KeyError(f"unknown claim {claim_id!r}; claims: {', '.join(c.id for c in CLAIMS)}")
