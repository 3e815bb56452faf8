"""Numeric arguments of every hal subcommand: out-of-range values are one argparse error
naming the argument, before anything runs."""

from __future__ import annotations

import argparse

import pytest

from hal.cli import main, non_negative_float, positive_float, positive_int, probability

BAD = [
    (["conformance", "--examples", "0"], "--examples", "at least 1"),
    (["conformance", "--examples", "2.5"], "--examples", "not a number"),
    (["bench", "--rounds", "0"], "--rounds", "at least 1"),
    (["bench", "--rounds", "-3"], "--rounds", "at least 1"),
    (["bench", "--timeout", "-1"], "--timeout", "above 0"),
    (["bench", "--timeout", "0"], "--timeout", "above 0"),
    (["bench", "--timeout", "nan"], "--timeout", "above 0"),
    (["compare", "a.jsonl", "b.jsonl", "--threshold", "-0.1"], "--threshold", "at least 0"),
    (["compare", "a.jsonl", "b.jsonl", "--alpha", "1.5"], "--alpha", "between 0 and 1"),
    (["tune", "--trials", "0"], "--trials", "at least 1"),
    (["tune", "--time-limit", "-5"], "--time-limit", "above 0"),
    (["tune", "--time-limit", "0"], "--time-limit", "above 0"),
]


@pytest.mark.parametrize(("argv", "argument", "words"), BAD, ids=lambda v: " ".join(v)
                         if isinstance(v, list) else None)
def test_out_of_range_numbers_are_one_line_argparse_errors(capsys, argv, argument, words):
    with pytest.raises(SystemExit) as exit_:
        main(argv)
    assert exit_.value.code == 2
    err = capsys.readouterr().err
    (line,) = [x for x in err.splitlines() if "error:" in x]
    assert f"argument {argument}: " in line and words in line
    assert "Traceback" not in err


@pytest.mark.parametrize(
    ("kind", "text", "value"),
    [(positive_int, "3", 3), (positive_float, "0.5", 0.5), (non_negative_float, "0", 0.0),
     (probability, "0.01", 0.01)],
)
def test_values_in_range_are_accepted(kind, text, value):
    assert kind(text) == value


@pytest.mark.parametrize(("kind", "text"), [(positive_int, "0"), (positive_float, "inf"),
                                            (non_negative_float, "-1e-9"), (probability, "0")])
def test_values_out_of_range_are_refused(kind, text):
    with pytest.raises(argparse.ArgumentTypeError, match="out of range"):
        kind(text)
