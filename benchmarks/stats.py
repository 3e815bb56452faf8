"""Honest statistics on raw timing samples (seconds per call).

The headline is the median; spread is the IQR and the coefficient of variation; the tail
is the 90th and 99th percentiles (latency percentiles, as MLPerf reports them, where each
sample is one call); the uncertainty of the median is a distribution-free order-statistic
confidence interval (as asv's `_stats.py` does). Speedups are ratios of medians with a
seeded bootstrap CI, significance is a Mann-Whitney U test, and summaries across
workloads use the geometric mean.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
from numpy.typing import ArrayLike
from scipy import stats as sps

DEFAULT_CONFIDENCE = 0.99
DEFAULT_RESAMPLES = 10_000


@dataclass(frozen=True)
class Summary:
    """Descriptive statistics of one sample set; `ci_coverage` is the CI's true coverage."""

    n: int
    median: float
    min: float
    max: float
    mean: float
    q1: float
    q3: float
    iqr: float
    cv: float
    ci_low: float
    ci_high: float
    ci_coverage: float
    p90: float
    p99: float

    def to_dict(self) -> dict[str, Any]:
        """Plain dict for JSON records."""
        return asdict(self)


@dataclass(frozen=True)
class Speedup:
    """Ratio of medians `baseline / candidate` (>1: candidate faster) with a bootstrap CI."""

    ratio: float
    ci_low: float
    ci_high: float
    confidence: float

    def to_dict(self) -> dict[str, Any]:
        """Plain dict for JSON records."""
        return asdict(self)


def _samples(samples: ArrayLike) -> np.ndarray:
    """Validate samples as a non-empty 1-D float array without NaN."""
    x = np.asarray(samples, dtype=float).ravel()
    if x.size == 0:
        raise ValueError("no samples: a statistic needs at least one sample")
    if np.isnan(x).any():
        raise ValueError("samples contain NaN")
    return x


def median_ci_indices(n: int, confidence: float = DEFAULT_CONFIDENCE) -> tuple[int, int, float]:
    """Order-statistic indices (0-based, into the sorted samples) of a CI for the median.

    Returns `(lo, hi, coverage)`: the interval `[x_(lo), x_(hi)]` covers the population
    median with probability `coverage = P(lo < B <= hi)`, `B ~ Binomial(n, 1/2)`. The
    narrowest symmetric interval with coverage >= `confidence` is chosen; when `n` is too
    small for that, the interval is `[min, max]` and `coverage` says how much it achieves.
    """
    if n < 1:
        raise ValueError(f"n must be at least 1, got {n}")
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must lie in (0, 1), got {confidence}")
    binom = sps.binom(n, 0.5)
    # With B = number of samples below the median, x_(j) <= median iff B > j, and
    # x_(n-1-j) >= median iff B <= n-1-j: coverage is cdf(n-1-j) - cdf(j).
    j = np.arange((n + 1) // 2)
    coverage = binom.cdf(n - 1 - j) - binom.cdf(j)
    ok = np.nonzero(coverage >= confidence)[0]
    lo = int(ok[-1]) if ok.size else 0
    return lo, n - 1 - lo, float(coverage[lo])


def median_ci(
    samples: ArrayLike, confidence: float = DEFAULT_CONFIDENCE
) -> tuple[float, float, float]:
    """Distribution-free CI of the median: `(low, high, coverage)`; see `median_ci_indices`."""
    x = np.sort(_samples(samples))
    lo, hi, coverage = median_ci_indices(x.size, confidence)
    return float(x[lo]), float(x[hi]), coverage


def latency_percentiles(samples: ArrayLike) -> tuple[float, float, float]:
    """The 50th, 90th and 99th percentiles: the smallest samples with at least 50% (90%,
    99%) of the samples at or below them (an observed time, never interpolated; the maximum
    when there are fewer than 100 samples for the 99th)."""
    p50, p90, p99 = np.percentile(_samples(samples), [50, 90, 99], method="inverted_cdf")
    return float(p50), float(p90), float(p99)


def summarize(samples: ArrayLike, confidence: float = DEFAULT_CONFIDENCE) -> Summary:
    """Median, min, max, mean, quartiles, IQR, CV, the median's CI and the 90th and 99th
    percentiles of one sample set."""
    x = _samples(samples)
    q1, median, q3 = np.percentile(x, [25, 50, 75])
    _, p90, p99 = latency_percentiles(x)
    mean = float(np.mean(x))
    cv = float(np.std(x, ddof=1) / mean) if x.size > 1 and mean != 0 else 0.0
    low, high, coverage = median_ci(x, confidence)
    return Summary(
        n=int(x.size),
        median=float(median),
        min=float(x.min()),
        max=float(x.max()),
        mean=mean,
        q1=float(q1),
        q3=float(q3),
        iqr=float(q3 - q1),
        cv=cv,
        ci_low=low,
        ci_high=high,
        ci_coverage=coverage,
        p90=p90,
        p99=p99,
    )


def _chunks(resamples: int, n: int, budget: int = 2_000_000) -> list[int]:
    """Split `resamples` into chunks of at most `budget / n` draws, bounding memory."""
    step = max(1, budget // n)
    return [min(step, resamples - i) for i in range(0, resamples, step)]


def _boot_medians(x: np.ndarray, rng: np.random.Generator, count: int) -> np.ndarray:
    """Medians of `count` bootstrap resamples of `x`, drawn in one vectorised step."""
    return np.median(x[rng.integers(0, x.size, size=(count, x.size))], axis=1)


def speedup(
    baseline: ArrayLike,
    candidate: ArrayLike,
    confidence: float = DEFAULT_CONFIDENCE,
    resamples: int = DEFAULT_RESAMPLES,
    seed: int = 0,
) -> Speedup:
    """Speedup `median(baseline) / median(candidate)` with a percentile bootstrap CI.

    Both sample sets are resampled independently (vectorised in memory-bounded chunks,
    `resamples` draws, seeded so the same data always gives the same interval).
    """
    a, b = _samples(baseline), _samples(candidate)
    rng = np.random.default_rng(seed)
    ratios = np.concatenate(
        [
            _boot_medians(a, rng, count) / _boot_medians(b, rng, count)
            for count in _chunks(resamples, max(a.size, b.size))
        ]
    )
    tail = 100.0 * (1.0 - confidence) / 2.0
    low, high = np.percentile(ratios, [tail, 100.0 - tail])
    return Speedup(
        ratio=float(np.median(a) / np.median(b)),
        ci_low=float(low),
        ci_high=float(high),
        confidence=confidence,
    )


def mann_whitney_p(a: ArrayLike, b: ArrayLike) -> float:
    """Two-sided Mann-Whitney U p-value that `a` and `b` come from one distribution.

    Returns NaN when a side has fewer than two samples (no test is possible) and 1.0 when
    every sample is identical.
    """
    x, y = _samples(a), _samples(b)
    if x.size < 2 or y.size < 2:
        return float("nan")
    if np.all(x == x[0]) and np.all(y == x[0]):
        return 1.0
    return float(sps.mannwhitneyu(x, y, alternative="two-sided").pvalue)


def geometric_mean(values: ArrayLike) -> float:
    """Geometric mean of positive values, NaN entries ignored; NaN when none remain."""
    x = np.asarray(values, dtype=float).ravel()
    x = x[~np.isnan(x)]
    if x.size == 0:
        return float("nan")
    if (x <= 0).any():
        raise ValueError("geometric mean needs positive values")
    return float(sps.gmean(x))
