"""`hal history`: step detection on synthetic series, commit ranges, machines, the report's
history page, and the bisect helper on real git repositories."""

import dataclasses
import json
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

from benchmarks.schema.files import load_results
from reports.bisect import BenchRequest, BisectError, bench_at_commit, bisect
from reports.cli import main
from reports.history import detect_steps, history_frame, history_sections, steps_table


def _series(n, noise, seed, steps=(), heavy=False):
    """n medians around 10 ms with relative `noise` (normal, or Student t with 3 degrees of
    freedom), times each factor from its index on: steps = ((index, factor), ...)."""
    rng = np.random.default_rng(seed)
    logs = noise * (rng.standard_t(3, n) if heavy else rng.normal(0.0, 1.0, n))
    for index, factor in steps:
        logs[index:] += np.log(factor)
    return 0.01 * np.exp(logs)


def test_planted_steps_are_found_at_their_commit():
    y = _series(30, 0.01, 0, steps=((10, 1.3), (20, 1 / 1.4)))
    found = detect_steps(y)
    assert [index for index, _, _ in found] == [10, 20]
    assert found[0][2] / found[0][1] == pytest.approx(1.3, rel=0.03)
    assert found[1][2] / found[1][1] == pytest.approx(1 / 1.4, rel=0.03)
    for seed in range(20):  # a 20% step over 3% noise, anywhere with two points after it
        at = 3 + seed % 20
        found = detect_steps(_series(26, 0.03, seed, steps=((at, 1.2),)))
        assert [index for index, _, _ in found] == [at], seed


@pytest.mark.parametrize("heavy", [False, True])
def test_noise_alone_has_no_step(heavy):
    for seed in range(30):
        n = 6 + 4 * seed
        assert detect_steps(_series(n, 0.03, seed, heavy=heavy)) == [], (seed, n)


def test_a_step_below_the_minimum_effect_and_a_lone_outlier_are_no_steps():
    assert detect_steps(_series(30, 0.001, 1, steps=((15, 1.03),))) == []
    assert [i for i, _, _ in detect_steps(_series(30, 0.001, 1, steps=((15, 1.03),)),
                                          min_effect=0.01)] == [15]
    spike = _series(30, 0.01, 2)
    spike[12] *= 1.5  # one busy moment
    assert detect_steps(spike) == []
    assert detect_steps([0.01, 0.02, 0.01]) == []  # too short to tell


SHAS = [f"{i:02d}" + "ab" * 19 for i in range(16)]


def _history_files(measurement, results_file, medians, *, hostname=None, env=None, tag=""):
    """A results file per commit SHAS[i] with one workload at medians[i], runs in order."""
    paths = []
    for i, median in enumerate(medians):
        m = measurement("gemm", "cpu", float(median), i)
        path = results_file(f"{tag}run{i:02d}.jsonl", [m], f"{tag}run{i:02d}",
                            hostname=hostname)
        lines = path.read_text().splitlines()
        run = json.loads(lines[0])
        run["git"] = {"commit": SHAS[i], "dirty": False}
        run["start"] = f"2026-12-0{1 + i // 10}T0{i % 10}:00:00+00:00"
        run["env"].update(env or {})
        path.write_text("\n".join([json.dumps(run), *lines[1:]]) + "\n")
        paths.append(path)
    return paths


def test_history_names_the_commit_range_of_each_step(measurement, results_file):
    medians = _series(16, 0.01, 3, steps=((9, 1.25),))
    paths = _history_files(measurement, results_file, medians)
    # a second setting of HAL_CACHE_DIR is the same machine
    paths[5:] = _history_files(measurement, results_file, medians, tag="b",
                               env={"HAL_CACHE_DIR": "/elsewhere"})[5:]
    results = [load_results(p) for p in paths]
    points = history_frame(results)
    assert points["machine"].nunique() == 1 and len(points) == 16
    steps = steps_table(points)
    assert len(steps) == 1
    step = steps.iloc[0]
    assert step["kind"] == "regression" and step["commits"] == f"{SHAS[8][:10]}..{SHAS[9][:10]}"
    assert step["change %"] == pytest.approx(25, abs=3)


def test_history_keeps_machines_apart_and_joins_runs_of_one_commit(measurement, results_file):
    flat = [0.01] * 6
    a = _history_files(measurement, results_file, flat, hostname="a", tag="a")
    b = _history_files(measurement, results_file, flat, hostname="b", tag="b",
                       env={"HAL_THREADS": "1"})
    again = _history_files(measurement, results_file, flat[:1], hostname="a", tag="c")
    points = history_frame([load_results(p) for p in a + b + again])
    assert points["machine"].nunique() == 2
    first = points[points["point"] == SHAS[0][:10]]
    assert sorted(first["runs"]) == [1, 2]


def test_history_command_and_report_page(measurement, results_file, tmp_path, capsys):
    medians = _series(12, 0.01, 4, steps=((6, 0.7),))
    paths = _history_files(measurement, results_file, medians)
    assert main(["history", *map(str, paths)]) == 0
    out = capsys.readouterr().out
    assert "1 step(s)" in out and "improvement" in out and f"{SHAS[5][:10]}..{SHAS[6][:10]}" in out
    sections = history_sections([load_results(p) for p in paths])
    assert len(sections) == 1 and sections[0].title.startswith("History on ")
    png = [b for b in sections[0].blocks if isinstance(b, tuple)]
    assert png and png[0][1].startswith(b"\x89PNG")
    assert main(["report", *map(str, paths), "-o", str(tmp_path / "r")]) == 0
    assert "## History on " in (tmp_path / "r" / "report-details.md").read_text()
    assert history_sections([load_results(paths[0])]) == []  # one commit: no page
    assert main(["history"]) == 2
    assert "--bisect" in capsys.readouterr().err


def _git(repo, *args, env=None):
    return subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True,
                          check=True, env=env).stdout.strip()


FAKE_CLI = textwrap.dedent('''
    """A stand-in for `hal bench`: writes a results file whose gemm takes VALUE seconds."""
    import json, pathlib, sys
    out = pathlib.Path(sys.argv[sys.argv.index("--out") + 1])
    out.mkdir(parents=True)
    value = float(pathlib.Path("VALUE").read_text())
    records = [{"type": "run", "schema": "1.3", "id": "r"},
               {"type": "measurement", "schema": "1.3", "suite": "quick", "workload": "gemm",
                "backend": "cpu", "device": "cpu:0", "dtype": "float32",
                "stats": {"median": value}}]
    (out / "r.jsonl").write_text("".join(json.dumps(r) + "\\n" for r in records))
''')


@pytest.fixture
def repo(tmp_path):
    """A git repository of 12 commits whose `hal bench` (a stand-in) measures gemm at 1 ms,
    and 1.5 ms from the 8th commit (index 7) on."""
    root = tmp_path / "repo"
    (root / "hal").mkdir(parents=True)
    (root / "hal" / "__init__.py").write_text("")
    (root / "hal" / "cli.py").write_text(FAKE_CLI)
    _git(root, "init", "-q")
    commits = []
    for i in range(12):
        (root / "VALUE").write_text("0.001" if i < 7 else "0.0015")
        (root / "NUMBER").write_text(str(i))
        _git(root, "add", "-A")
        when = f"2026-01-{i + 1:02d}T00:00:00+00:00"
        _git(root, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", f"c{i}",
             env={**os.environ, "GIT_COMMITTER_DATE": when, "GIT_AUTHOR_DATE": when})
        commits.append(_git(root, "rev-parse", "HEAD"))
    return root, commits


def test_bench_at_commit_runs_that_commits_bench_in_a_worktree(repo):
    root, commits = repo
    request = BenchRequest("gemm", python=sys.executable)
    assert bench_at_commit(root, commits[2], request) == pytest.approx(0.001)
    assert bench_at_commit(root, commits[9], request) == pytest.approx(0.0015)
    assert len(_git(root, "worktree", "list").splitlines()) == 1  # temporary ones removed
    with pytest.raises(BisectError, match=r"fft was not measured at all.*workloads there: gemm"):
        bench_at_commit(root, commits[2], dataclasses.replace(request, workload="fft"))
    with pytest.raises(BisectError, match="nosuch"):
        bench_at_commit(root, "nosuch", request)


def test_bisect_finds_the_first_commit_at_the_bad_level(repo):
    root, commits = repo
    level = {c: (0.001 if i < 7 else 0.0015) for i, c in enumerate(commits)}
    probed = []

    def measure(commit):
        probed.append(commit)
        return level[commit]

    found = bisect(root, commits[0], commits[-1], measure)
    assert found.first_bad == commits[7] and found.last_good == commits[6]
    assert len(probed) <= 2 + 4  # the two ends, then log2(11) probes
    with pytest.raises(BisectError, match="no step"):
        bisect(root, commits[0], commits[5], measure)
    with pytest.raises(BisectError, match="does not descend"):
        bisect(root, commits[5], commits[0], measure)


def test_history_bisect_command(repo, capsys):
    root, commits = repo
    code = main(["history", "--bisect", "gemm", "--good", commits[1], "--bad", commits[10],
                 "--repo", str(root)])
    assert code == 0
    out = capsys.readouterr().out
    assert f"first commit at the bad level: {commits[7]}" in out
    assert main(["history", "--bisect", "gemm", "--repo", str(root)]) == 2


def test_runs_are_ordered_by_their_commits_date_in_the_repository(repo, measurement,
                                                                   results_file):
    root, commits = repo
    medians = [0.001] * 6 + [0.0015] * 6
    paths = _history_files(measurement, results_file, medians)
    for path, commit in zip(paths, commits, strict=True):
        path.write_text(path.read_text().replace(SHAS[commits.index(commit)], commit))
    order = list(reversed(range(12)))  # benchmarked newest first, as a backfill does
    for i, path in zip(order, paths, strict=True):
        lines = path.read_text().splitlines()
        run = json.loads(lines[0])
        run["start"] = f"2026-12-01T{i:02d}:00:00+00:00"
        path.write_text("\n".join([json.dumps(run), *lines[1:]]) + "\n")
    results = [load_results(p) for p in paths]
    by_date = history_frame(results, root)
    assert list(by_date["commit"]) == commits
    (step,) = steps_table(by_date).itertuples()
    assert step.commits == f"{commits[5][:10]}..{commits[6][:10]}"
    assert list(history_frame(results)["commit"]) == commits[::-1]  # no repository: by run
