"""The report's figure sections, one module per suite whose figures need more than the
suite's table: ratios, per-item times, extrapolations and the non-timed facts its
workloads record, each built from results files only.

Each module has `sections(results) -> list[Section]`, empty when the files hold no
measurement of its suite.
"""
