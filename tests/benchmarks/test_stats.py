"""Statistics against known values, scipy's binomial distribution and synthetic data."""

import numpy as np
import pytest
from scipy import stats as sps

from benchmarks.stats import (
    geometric_mean,
    latency_percentiles,
    mann_whitney_p,
    median_ci,
    median_ci_indices,
    speedup,
    summarize,
)


@pytest.mark.parametrize(("n", "expected"), [(20, (3, 16)), (50, (15, 34)), (100, (36, 63))])
def test_median_ci_indices_match_published_rank_tables(n, expected):
    # 99% ranks (1-based) from the usual tables: n=20 -> 4..17, n=100 -> 37..64.
    assert median_ci_indices(n, 0.99)[:2] == expected


@pytest.mark.parametrize("n", range(1, 120))
def test_median_ci_indices_are_the_narrowest_with_enough_coverage(n):
    lo, hi, coverage = median_ci_indices(n, 0.99)
    binom = sps.binom(n, 0.5)
    assert hi == n - 1 - lo
    assert coverage == pytest.approx(binom.cdf(hi) - binom.cdf(lo))
    if n >= 8:  # [min, max] reaches 99% from n = 8 on (1 - 2/2**8 = 0.992)
        assert coverage >= 0.99
        if lo + 1 <= hi - 1:
            assert binom.cdf(hi - 1) - binom.cdf(lo + 1) < 0.99
    else:
        assert (lo, hi) == (0, n - 1)
        assert coverage == pytest.approx(1 - 2.0 ** (1 - n) if n > 1 else 0.0)


def test_median_ci_covers_the_true_median_about_99_percent_of_the_time():
    rng = np.random.default_rng(1)
    true_median = np.log(2.0)  # of Exponential(1)
    hits = [
        lo <= true_median <= hi
        for lo, hi, _ in (median_ci(rng.exponential(size=40)) for _ in range(2000))
    ]
    assert np.mean(hits) >= 0.98


def test_summarize_known_values():
    s = summarize([5.0, 1.0, 4.0, 2.0, 3.0])
    assert (s.n, s.median, s.min, s.max, s.mean) == (5, 3.0, 1.0, 5.0, 3.0)
    assert (s.q1, s.q3, s.iqr) == (2.0, 4.0, 2.0)
    assert s.cv == pytest.approx(np.std([1, 2, 3, 4, 5], ddof=1) / 3.0)
    assert (s.ci_low, s.ci_high) == (1.0, 5.0)
    assert s.ci_coverage == pytest.approx(0.9375)
    assert s.to_dict()["median"] == 3.0


def test_summarize_rejects_empty_and_nan():
    with pytest.raises(ValueError, match="no samples"):
        summarize([])
    with pytest.raises(ValueError, match="NaN"):
        summarize([1.0, float("nan")])


def test_speedup_bootstrap_ci_contains_true_ratio_and_is_seeded():
    rng = np.random.default_rng(7)
    base = 2.0 * rng.lognormal(0.0, 0.05, size=40)
    new = 1.0 * rng.lognormal(0.0, 0.05, size=40)
    s = speedup(base, new)
    assert s.ci_low < 2.0 < s.ci_high
    assert s.ci_low <= s.ratio <= s.ci_high
    assert s.ratio == pytest.approx(np.median(base) / np.median(new))
    assert speedup(base, new) == s


def test_mann_whitney_p():
    rng = np.random.default_rng(3)
    a = rng.normal(1.0, 0.01, 30)
    assert mann_whitney_p(a, a + 0.1) < 1e-6
    assert mann_whitney_p(a, rng.permutation(a)) == pytest.approx(1.0)
    assert mann_whitney_p([1.0, 1.0], [1.0, 1.0]) == 1.0
    assert np.isnan(mann_whitney_p([1.0], [1.0, 2.0]))


def test_geometric_mean():
    assert geometric_mean([1.0, 4.0, 16.0]) == pytest.approx(4.0)
    assert geometric_mean([2.0, float("nan"), 8.0]) == pytest.approx(4.0)
    assert np.isnan(geometric_mean([]))
    with pytest.raises(ValueError, match="positive"):
        geometric_mean([1.0, -1.0])


def test_latency_percentiles_are_observed_samples():
    s = summarize(np.arange(1.0, 101.0)[::-1])  # 100 latencies, in any order
    assert (s.p90, s.p99) == (90.0, 99.0)  # 90 (99) of the 100 at or below them
    assert latency_percentiles(np.arange(1.0, 101.0)) == (50.0, 90.0, 99.0)  # median: 50.5
    assert latency_percentiles([3.0, 1.0, 2.0]) == (2.0, 3.0, 3.0)  # few samples: the slowest
    with pytest.raises(ValueError, match="no samples"):
        latency_percentiles([])
