"""Mesh and MPIGroup on real MPI ranks: every collective against numpy, mesh layout, errors,
debug mode and the timeout watchdog."""

from __future__ import annotations

import re

import numpy as np
import pytest

from hal import dtypes

pytestmark = pytest.mark.mpi

BF16 = dtypes.bfloat16
NARROW = (np.float16, BF16)  # summed in float32, then cast back
BY_NAME = {"bfloat16": BF16}  # a dtype name numpy does not know
CPU = {"HAL_DEVICE": "cpu"}  # the ranks skip probing the other backends


def rank_inputs(rank: int) -> dict[str, np.ndarray]:
    """Rank `rank`'s (4, 8) operand of each dtype (the ranks load them from in{rank}.npz)."""
    rng = np.random.default_rng(rank)
    eighths = rng.integers(-64, 64, (2, 4, 8)) / 8
    x = {"float64": rng.standard_normal((4, 8)),
         "float16": eighths[0].astype(np.float16),
         "bfloat16": eighths[1].astype(BF16),
         "int32": rng.integers(-1000, 1000, (4, 8)).astype(np.int32),
         "complex128": rng.standard_normal((4, 8)) + 1j * rng.standard_normal((4, 8))}
    # 2048 + 1 + 1 + 0 is 2050 in float32, but 2048 when float16 adds pairwise
    x["float16"][0, 0] = (2048, 1, 1, 0)[rank]
    return x


def total(parts: list[np.ndarray]) -> np.ndarray:
    """The sum over the ranks as MPIGroup defines it (narrow floats through float32)."""
    dtype = parts[0].dtype
    wide = np.float32 if dtype in NARROW else dtype
    return np.sum([p.astype(wide) for p in parts], axis=0).astype(dtype)


def check(got: np.ndarray, want: np.ndarray) -> None:
    """Equal dtype and shape; equal values (float64/complex128 up to the order of the sum)."""
    assert got.dtype == want.dtype and got.shape == want.shape
    if want.dtype in (np.float64, np.complex128):
        np.testing.assert_allclose(got, want, rtol=0, atol=1e-14)
    else:
        np.testing.assert_array_equal(got.astype(np.float64), want.astype(np.float64))


COLLECTIVES = '''
import ml_dtypes
import numpy as np
import hal
from frontends.parallel.cost import CostModel
from frontends.parallel.mesh import Mesh

rank, P = MPI.COMM_WORLD.Get_rank(), MPI.COMM_WORLD.Get_size()
x = dict(np.load(f"{DIR}/in{rank}.npz"))
x["bfloat16"] = x["bfloat16"].astype(ml_dtypes.bfloat16)
out = {}
with Mesh((P,), ("dp",)) as mesh:
    g, name = mesh.groups["dp"], mesh.group("dp")
    for dtype, a in x.items():
        out[f"{dtype}.all_reduce"] = g.all_reduce(a)
        out[f"{dtype}.all_gather"] = g.all_gather(a, 1)
        out[f"{dtype}.reduce_scatter"] = g.reduce_scatter(a, 1)
        out[f"{dtype}.all_to_all"] = g.all_to_all(a, 0, 1)
    for algorithm in ("rs_ag", "hierarchical"):
        for dtype in ("float64", "float16", "int32"):
            out[f"{dtype}.{algorithm}"] = g.all_reduce(x[dtype], algorithm=algorithm)
    flat = x["float64"].ravel()
    pending = {"iall_reduce": g.iall_reduce(flat), "ireduce_scatter": g.ireduce_scatter(flat),
               "iall_gather": g.iall_gather(flat),
               "float16.iall_reduce": g.iall_reduce(x["float16"].ravel())}
    for key in reversed(list(pending)):
        out[key] = pending[key].wait()

    t = hal.asarray(x["float64"])
    C = hal.collectives
    out["hal.all_reduce"] = C.all_reduce(t, group=name).numpy()
    out["hal.all_gather"] = C.all_gather(t, group=name, axis=1).numpy()
    out["hal.reduce_scatter"] = C.reduce_scatter(t, group=name, axis=1).numpy()
    out["hal.all_to_all"] = C.all_to_all(t, group=name, split_axis=0, concat_axis=1).numpy()

    step = hal.jit(lambda a: C.all_reduce(a * 2.0, group=name) + 1.0)
    ops = [node.op for node in step.graph(t).nodes]
    out["jit.first"] = step(t).numpy()
    out["jit.replay"] = step(hal.asarray(x["float64"] * 3.0)).numpy()
    try:
        g.reduce_scatter(np.ones((3, 4)), 0)
        uneven = None
    except hal.ShapeError as e:
        uneven = str(e)
    report = {"ops": ops, "traces": step.traces, "counts": dict(g.counts),
              "bytes": dict(g.bytes), "uneven": uneven,
              "dtypes": {k: str(v.dtype) for k, v in out.items()}}
model = CostModel({("all_reduce", "allreduce"): (1e-5, 1e-9),  # rs_ag from 11 kB up
                   ("all_reduce", "rs_ag"): (2e-5, 1e-10)})
with Mesh((P,), ("dp",), cost=model) as costed:
    g = costed.groups["dp"]
    report["chosen"] = [[g.all_reduce(np.full(n, 1.0 + rank)).tolist() == [P * (P + 1) / 2] * n,
                         g.last.detail] for n in (32, 4096)]
emit(report)
widened = {k: v.astype(np.float32) if v.dtype == ml_dtypes.bfloat16 else v for k, v in out.items()}
np.savez(f"{DIR}/out{rank}.npz", **widened)
'''


@pytest.mark.parametrize("ranks", [2, 4])
def test_collectives_match_numpy(run_ranks, tmp_path, ranks):
    xs = [rank_inputs(r) for r in range(ranks)]
    for r, x in enumerate(xs):
        np.savez(tmp_path / f"in{r}.npz", **{k: v.astype(np.float32) if v.dtype == BF16 else v
                                             for k, v in x.items()})
    reports = run_ranks(ranks, f"DIR = {str(tmp_path)!r}\n" + COLLECTIVES, env=CPU)
    for r, report in enumerate(reports):
        saved = np.load(tmp_path / f"out{r}.npz")
        out = {k: saved[k].astype(BY_NAME.get(report["dtypes"][k], report["dtypes"][k]))
               for k in saved}
        for dtype in xs[0]:
            parts = [x[dtype] for x in xs]
            summed = total(parts)
            check(out[f"{dtype}.all_reduce"], summed)
            check(out[f"{dtype}.all_gather"], np.concatenate(parts, 1))
            check(out[f"{dtype}.reduce_scatter"], np.split(summed, ranks, 1)[r])
            check(out[f"{dtype}.all_to_all"],
                  np.concatenate([np.split(p, ranks, 0)[r] for p in parts], 1))
        if ranks == 4:
            assert out["float16.all_reduce"][0, 0] == 2050  # accumulated in float32
        parts = [x["float64"] for x in xs]
        summed = total(parts)
        check(out["iall_reduce"], summed.ravel())
        check(out["ireduce_scatter"], np.split(summed.ravel(), ranks)[r])
        check(out["iall_gather"], np.concatenate([p.ravel() for p in parts]))
        check(out["float16.iall_reduce"], total([x["float16"] for x in xs]).ravel())
        check(out["hal.all_reduce"], summed)
        check(out["hal.all_gather"], np.concatenate(parts, 1))
        check(out["hal.reduce_scatter"], np.split(summed, ranks, 1)[r])
        check(out["hal.all_to_all"], np.concatenate([np.split(p, ranks, 0)[r] for p in parts], 1))
        for algorithm in ("rs_ag", "hierarchical"):
            for dtype in ("float64", "float16", "int32"):
                check(out[f"{dtype}.{algorithm}"], total([x[dtype] for x in xs]))
        assert report["chosen"] == [[True, "algorithm=allreduce"], [True, "algorithm=rs_ag"]]
        check(out["jit.first"], 2.0 * summed + 1.0)
        check(out["jit.replay"], 6.0 * summed + 1.0)
        assert "all_reduce" in report["ops"] and report["traces"] == 1
        # 5 dtypes, 2 algorithms x 3 dtypes, the hal op, two jitted runs (the replay too)
        assert report["counts"] == {"all_reduce": 14, "all_gather": 6, "reduce_scatter": 6,
                                    "all_to_all": 6, "iall_reduce": 2, "ireduce_scatter": 1,
                                    "iall_gather": 1}
        wire = sum(4 * a.size if a.dtype in NARROW else a.nbytes for a in xs[r].values())
        algorithms = 2 * (xs[r]["float64"].nbytes + 4 * 32 + xs[r]["int32"].nbytes)
        assert report["bytes"]["all_reduce"] == wire + algorithms + 3 * xs[r]["float64"].nbytes
        assert report["uneven"] == (
            f"reduce_scatter: axis 0 of the shape (3, 4) has 3 elements, which do not split "
            f"evenly over the {ranks} ranks of group 'mesh0.dp'; make it a multiple of "
            f"{ranks} (pad, or choose another split)")


def test_mesh_2x2_coordinates_and_groups(run_ranks):
    reports = run_ranks(4, '''
        import numpy as np
        import hal
        from frontends.parallel.mesh import Mesh

        rank = MPI.COMM_WORLD.Get_rank()
        with Mesh((2, 2), ("dp", "tp")) as mesh:
            report = {
                "coords": mesh.coords, "size": mesh.size, "rank": mesh.rank,
                "names": {a: mesh.group(a) for a in mesh.names},
                "members": {a: mesh.comm(a).allgather(rank) for a in mesh.names},
                "group_rank": {a: [mesh.groups[a].rank, mesh.groups[a].size]
                               for a in mesh.names},
                "sums": {a: hal.collectives.all_reduce(hal.asarray(np.array([1.0 * rank])),
                                                       group=mesh.group(a)).numpy().tolist()
                         for a in mesh.names},
                "node": mesh.node.Get_size()}
            try:
                mesh.group("pp")
            except hal.HalError as e:
                report["unknown"] = str(e)
            with Mesh((4,), ("dp",)) as other:
                report["other"] = other.group("dp")
        try:
            hal.collectives.group("mesh0.tp")
        except hal.HalError as e:
            report["closed"] = str(e)
        emit(report)
    ''', env=CPU)
    for r, report in enumerate(reports):
        dp, tp = divmod(r, 2)
        assert report["coords"] == {"dp": dp, "tp": tp}
        assert (report["size"], report["rank"]) == (4, r)
        assert report["names"] == {"dp": "mesh0.dp", "tp": "mesh0.tp"}
        assert report["members"] == {"dp": [tp, tp + 2], "tp": [2 * dp, 2 * dp + 1]}
        assert report["group_rank"] == {"dp": [dp, 2], "tp": [tp, 2]}
        assert report["sums"] == {"dp": [2.0 * tp + 2], "tp": [4.0 * dp + 1]}
        assert report["node"] == 4
        assert report["unknown"] == "mesh (2, 2) has no axis 'pp' (axes: dp, tp)"
        assert report["other"] == "mesh1.dp"
        assert "no process group named 'mesh0.tp'" in report["closed"]


def test_one_rank_mesh_and_refused_layouts(run_ranks):
    report, = run_ranks(1, '''
        import os, threading
        import numpy as np
        import hal
        from frontends.parallel.mesh import Mesh

        x = np.arange(6.0).reshape(2, 3)
        report = {}
        with Mesh((1, 1), ("dp", "tp")) as mesh:
            g = mesh.groups["tp"]
            report["group"] = [g.size, g.rank]
            report["same"] = [np.array_equal(y, x) for y in (
                g.all_reduce(x), g.all_gather(x, 1), g.reduce_scatter(x, 0),
                g.all_to_all(x, 0, 1))]
        errors = []
        for shape, names in (((2,), ("dp",)), ((1,), ("dp", "tp")), ((1, 1), ("dp", "dp"))):
            try:
                Mesh(shape, names)
            except hal.HalError as e:
                errors.append(str(e))
        os.environ["HAL_PARALLEL_TIMEOUT"] = "soon"
        try:
            Mesh((1,), ("dp",))
        except hal.HalError as e:
            errors.append(str(e))
        os.environ["HAL_PARALLEL_TIMEOUT"] = "5"
        with Mesh((1,), ("dp",)) as mesh:
            report["timeout"] = mesh.groups["dp"].timeout
            dog, = [t for t in threading.enumerate() if t.name == "hal-watchdog-mesh1.dp"]
        dog.join(5)
        report["watchdog_after_close"] = dog.is_alive()
        report["errors"] = errors
        emit(report)
    ''', env=CPU)
    assert report["group"] == [1, 0] and report["same"] == [True] * 4
    size, names, duplicate, env = report["errors"]
    assert size == ("Mesh: the shape (2,) has 2 ranks but the communicator has 1; run under "
                    "`mpiexec -n 2`, or choose a shape whose product is 1")
    assert "one per axis of the shape (1,)" in names
    assert "('dp', 'dp') must be distinct" in duplicate
    assert env.startswith("HAL_PARALLEL_TIMEOUT='soon' is not a positive number of seconds")
    assert report["timeout"] == 5.0 and report["watchdog_after_close"] is False


def test_debug_check_is_on_by_default_and_reports_a_mismatch_on_every_rank(run_ranks):
    reports = run_ranks(2, '''
        import os
        import numpy as np
        import hal
        from frontends.parallel.mesh import Mesh

        rank = MPI.COMM_WORLD.Get_rank()
        messages = []
        with Mesh((2,), ("dp",)) as mesh:
            g = mesh.groups["dp"]
            g.all_reduce(np.ones((4, 8), np.float32))
            try:
                if rank == 0:
                    g.all_reduce(np.ones((4, 8), np.float32))
                else:
                    g.all_gather(np.ones((4, 4), np.float32), 0)
            except hal.HalError as e:
                messages.append(str(e))
            try:  # a shape mismatch: without the check, MPICH's "Message truncated" abort
                hal.collectives.all_reduce(hal.asarray(np.ones((2 + rank, 3))),
                                           group=mesh.group("dp"))
            except hal.HalError as e:
                messages.append(str(e))
            after = g.all_reduce(np.ones(3)).tolist()
        off = [Mesh((2,), ("dp",), debug=False).groups["dp"].debug]
        os.environ["HAL_PARALLEL_DEBUG"] = "0"
        off.append(Mesh((2,), ("dp",)).groups["dp"].debug)
        emit({"messages": messages, "after": after, "off": off})
    ''', env=CPU)
    for report in reports:
        op, shape = report["messages"]
        assert op.startswith("group 'mesh0.dp': collective #2 differs across its ranks (rank 0: "
                             "all_reduce float32(4, 8) algorithm=allreduce #2; rank 1: "
                             "all_gather float32(4, 4) axis=0 #2)")
        assert shape.startswith("group 'mesh0.dp': collective #3 differs across its ranks "
                                "(rank 0: all_reduce float64(2, 3) algorithm=allreduce #3; "
                                "rank 1: all_reduce float64(3, 3) algorithm=allreduce #3)")
        assert report["after"] == [2.0, 2.0, 2.0]  # the group still works afterwards
        assert report["off"] == [False, False]


def test_timeout_aborts_the_job_with_a_diagnostic(run_ranks):
    proc = run_ranks(2, '''
        import time
        import numpy as np
        from frontends.parallel.mesh import Mesh

        with Mesh((2,), ("dp",), timeout=1.0) as mesh:
            g = mesh.groups["dp"]
            g.all_reduce(np.ones((4, 8), np.float32))
            if MPI.COMM_WORLD.Get_rank() == 1:
                time.sleep(30)  # rank 1 never joins the second all_reduce
            g.all_reduce(np.ones((4, 8), np.float32))
    ''', timeout=40, env=CPU, expect_failure=True)
    assert proc.returncode == 3, proc.stderr  # MPI_Abort's status, not the fixture's timeout
    assert ("hal.parallel: rank 0 of 2: all_reduce float32(4, 8) algorithm=allreduce #2 on group "
            "'mesh0.dp' (as its rank 0 of 2) has not completed after") in proc.stderr
    assert "last completed: all_reduce float32(4, 8) algorithm=allreduce #1" in proc.stderr


# Rank 1 fails before its first collective while rank 0 waits inside one: by an uncaught
# exception anywhere, or by a nonzero sys.exit inside the mesh's with block.
FAILS = {"raise": 'raise ValueError("rank 1 fails")', "exit": "sys.exit(3)"}


@pytest.mark.parametrize("fault", FAILS)
def test_a_failing_rank_aborts_the_job_with_its_reason(run_ranks, fault):
    proc = run_ranks(2, f'''
        import numpy as np
        from frontends.parallel.mesh import Mesh

        with Mesh((2,), ("dp",), abort_on_error=False):  # opted out: the hook is not set
            print(f"hook kept: {{sys.excepthook is sys.__excepthook__}}", flush=True)  # one write
        with Mesh((2,), ("dp",)) as mesh:
            if mesh.rank == 1:
                {FAILS[fault]}
            mesh.groups["dp"].all_reduce(np.ones(4))
    ''', timeout=30, env=CPU, expect_failure=True)
    assert proc.stdout.count("hook kept: True") == 2
    if fault == "raise":
        assert proc.returncode == 1, proc.stderr  # MPI_Abort's status, not the timeout's
        assert re.search(r"hal\.parallel: rank 1 of 2: uncaught ValueError at \S*rank_script\.py:"
                         r"\d+: rank 1 fails; aborting the job", proc.stderr), proc.stderr
        assert 'raise ValueError("rank 1 fails")' in proc.stderr  # the traceback
    else:
        assert proc.returncode == 3, proc.stderr
        assert ("hal.parallel: rank 1 of 2: sys.exit(3) inside a Mesh block; aborting the job"
                in proc.stderr)
