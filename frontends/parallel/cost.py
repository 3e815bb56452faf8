"""The cost of collectives: T = alpha + beta * n, measured per algorithm, and the choice.

`run(algorithm, comm, x)` sums x over the ranks of an mpi4py communicator by one of three
algorithms: "allreduce" (one MPI_Allreduce), "rs_ag" (a reduce-scatter then an allgather of
the flat array) and "hierarchical" (a reduce to one leader per node, an all-reduce among the
leaders, a broadcast within each node). Which is fastest depends on the message size and the
machine, so `calibrate` times every algorithm (and the all-gather, reduce-scatter and
all-to-all) over a ladder of sizes and fits alpha (seconds) and beta (seconds per byte) to
each; the resulting `CostModel` predicts, chooses, and is stored as JSON with the context it
was measured in. `load_or_calibrate` reuses a stored model whose context matches.

n is always the bytes of the whole buffer on one rank: the array summed (all_reduce), the
array scattered (reduce_scatter), the array gathered (all_gather), the array exchanged
(all_to_all).

The transports of a device's tensors have figures of their own (`transport_seconds`):
staged through the host (two copies around the MPI fit) or a device library such as NCCL
(ASSUMED_DEVICE_LIBRARIES: assumptions until calibrated on a multi-GPU node).

    mpiexec -n 2 python -m frontends.parallel.cost     # calibrate, store, print the table
"""

from __future__ import annotations

import argparse
import bisect
import copy
import functools
import json
import math
import os
import statistics
import time
from datetime import UTC, datetime
from itertools import combinations, pairwise
from pathlib import Path

import mpi4py
import numpy as np
from mpi4py import MPI
from mpi4py.util import dtlib
from scipy.optimize import nnls
from tabulate import tabulate

from hal import HalError, settings

ALGORITHMS = ("allreduce", "rs_ag", "hierarchical")
COLLECTIVES = {
    "all_reduce": ALGORITHMS,
    "all_gather": ("mpi",),
    "reduce_scatter": ("mpi",),
    "all_to_all": ("mpi",),
}
SCHEMA, VERSION = "hal.parallel.cost_model", 1
DEFAULT_SIZES = tuple(8 * 4**k for k in range(12))  # 8 B .. 32 MiB
ENV_PREFIXES = ("MPIR_CVAR_", "MPICH_", "UCX_", "FI_", "OMPI_MCA_", "I_MPI_", "OMP_NUM_THREADS")
MATCHED_CONTEXT = ("ranks", "nodes", "hosts", "mpi4py", "mpi_library", "env")


# The transports of a device's tensors (frontends/parallel/transport.py), as (alpha s,
# beta s/byte) of an all_reduce of n bytes per rank. ASSUMPTIONS, not measurements: no
# multi-GPU node has run hal; calibrate them there. NCCL's ring all-reduce between 2 GPUs
# over PCIe Gen4 (~12 GB/s algorithm bandwidth, ~20 us); over NVLink 4 it reaches ~150-350
# GB/s at ~10 us, so PCIe is the cautious figure. A staged collective copies the buffer
# to the host and back (pageable memory: ~10 GB/s and ~10 us a copy) around MPI's
# all-reduce, whose fit is the calibrated model's where one is given, else the mpich
# wheel's measured on a 2-core machine (~8 us, ~1 GB/s).
ASSUMED_DEVICE_LIBRARIES = {"nccl": (20e-6, 1 / 12e9)}
ASSUMED_STAGING_COPY = (10e-6, 1 / 10e9)
ASSUMED_HOST_ALL_REDUCE = (8e-6, 1 / 1e9)


def transport_seconds(transport: str, nbytes: float, cost: CostModel | None = None) -> float:
    """Predicted seconds of an all_reduce of nbytes per rank of a device's tensors by
    `transport`: "host" (staged: two copies and MPI's all-reduce, the calibrated `cost`'s
    best algorithm where given) or a device library of ASSUMED_DEVICE_LIBRARIES."""
    if transport == "host":
        copy_alpha, copy_beta = ASSUMED_STAGING_COPY
        if cost is None:
            alpha, beta = ASSUMED_HOST_ALL_REDUCE
            host = alpha + beta * nbytes
        else:
            host = cost.predict("all_reduce", cost.choose(nbytes), nbytes)
        return 2 * (copy_alpha + copy_beta * nbytes) + host
    try:
        alpha, beta = ASSUMED_DEVICE_LIBRARIES[transport]
    except KeyError:
        raise HalError(f"transport_seconds: no figures for transport {transport!r}; known: "
                       f"host, {', '.join(ASSUMED_DEVICE_LIBRARIES)}") from None
    return alpha + beta * nbytes


def run(algorithm: str, comm: MPI.Comm, x: np.ndarray, node: MPI.Comm | None = None
        ) -> np.ndarray:
    """The elementwise sum of x over comm's ranks, on every rank, computed by `algorithm`.

    `node` (for "hierarchical") is a communicator of the ranks of comm on this node; by
    default it is comm.Split_type(COMM_TYPE_SHARED), built once per comm. Every algorithm
    gives the same values: exactly for integers, to rounding for floats.
    """
    x = np.require(x, requirements="C")  # contiguous, 0-d kept 0-d
    _check_dtype(x.dtype)
    if algorithm == "allreduce":
        out = np.empty_like(x)
        comm.Allreduce(x, out, op=MPI.SUM)
        return out
    if algorithm == "rs_ag":
        return _rs_ag(comm, x)
    if algorithm == "hierarchical":
        return _hierarchical(comm, x, node)
    raise HalError(f"cost.run: unknown all-reduce algorithm {algorithm!r}; use one of "
                   f"{', '.join(ALGORITHMS)}")


@functools.cache
def _check_dtype(dtype: np.dtype) -> None:
    try:
        dtlib.from_numpy_dtype(dtype)
        summable = dtype.kind in "iufc"
    except ValueError:
        summable = False
    if not summable:
        raise HalError(f"cost.run: MPI cannot sum dtype {dtype}; cast to a dtype it can "
                       "(float32 for bfloat16, an integer for bool) and back")


def _rs_ag(comm: MPI.Comm, x: np.ndarray) -> np.ndarray:
    flat = x.reshape(-1)
    pad = -flat.size % comm.size
    if pad:
        flat = np.concatenate([flat, np.zeros(pad, x.dtype)])
    out, count = np.empty_like(flat), flat.size // comm.size
    # this rank's chunk lands in place, so the allgather needs no other buffer
    comm.Reduce_scatter_block(flat, out[comm.rank * count:(comm.rank + 1) * count], op=MPI.SUM)
    comm.Allgather(MPI.IN_PLACE, out)
    return out[:x.size].reshape(x.shape)


def _hierarchical(comm: MPI.Comm, x: np.ndarray, node: MPI.Comm | None) -> np.ndarray:
    node, leaders = node_comms(comm, node)
    out = np.empty_like(x)
    node.Reduce(x, out, op=MPI.SUM, root=0)
    if leaders != MPI.COMM_NULL:
        leaders.Allreduce(MPI.IN_PLACE, out, op=MPI.SUM)
    node.Bcast(out, root=0)
    return out


def _free_cached(comm, keyval, cached):
    for node, leaders in cached.values():
        for c in (node, leaders):
            if c != MPI.COMM_NULL:
                c.Free()


_NODE_KEYVAL = MPI.Comm.Create_keyval(delete_fn=_free_cached)


def node_comms(comm: MPI.Comm, node: MPI.Comm | None = None) -> tuple[MPI.Comm, MPI.Comm]:
    """(node, leaders) for comm: the ranks of comm on this node (the given `node`, else
    comm.Split_type(COMM_TYPE_SHARED)) and, on each node's rank 0, the communicator of those
    leaders (COMM_NULL elsewhere). Collective the first time; cached on comm (an MPI attribute,
    freed with comm) per node communicator after that."""
    cached = comm.Get_attr(_NODE_KEYVAL)
    if cached is None:
        cached = {}
        comm.Set_attr(_NODE_KEYVAL, cached)
    key = None if node is None else node.py2f()
    if key not in cached:
        if node is None:
            node = comm.Split_type(MPI.COMM_TYPE_SHARED)
        else:
            _check_within(comm, node)
            node = node.Dup()
        color = 0 if node.rank == 0 else MPI.UNDEFINED
        cached[key] = (node, comm.Split(color, comm.rank))
    return cached[key]


def _check_within(comm: MPI.Comm, node: MPI.Comm) -> None:
    ranks = MPI.Group.Translate_ranks(node.Get_group(), list(range(node.size)), comm.Get_group())
    if MPI.UNDEFINED in ranks:
        raise HalError(f"cost: the node communicator ({node.size} ranks) holds ranks outside "
                       f"the communicator ({comm.size} ranks); pass the ranks of that "
                       "communicator on this node, e.g. comm.Split_type(MPI.COMM_TYPE_SHARED)")


class CostModel:
    """Fitted T = alpha + beta * n (seconds, n in bytes) per (collective, algorithm).

    `fits` maps (collective, algorithm) to (alpha, beta); `samples` optionally to the measured
    [(n, seconds)] the fit came from; `context` says where it was measured (ranks, nodes,
    hosts, date, MPI library, environment). `choose` goes by the measured medians where
    every algorithm was measured at the same sizes: between two calibrated sizes each
    algorithm's time is the line through its two medians (T = alpha + beta n per size band:
    MPI libraries switch their own algorithms by size, which one line over all sizes cannot
    follow); otherwise by the fitted lines. The crossover points are computed once, so
    `choose` is a bisection.
    """

    def __init__(self, fits: dict[tuple[str, str], tuple[float, float]],
                 context: dict | None = None,
                 samples: dict[tuple[str, str], list[tuple[int, float]]] | None = None):
        for (collective, algorithm), (alpha, beta) in fits.items():
            if algorithm not in COLLECTIVES.get(collective, ()):
                raise HalError(f"CostModel: ({collective!r}, {algorithm!r}) is not a "
                               f"collective and algorithm; known: {_known()}")
            if not (np.isfinite(alpha) and np.isfinite(beta) and alpha >= 0 and beta >= 0):
                raise HalError(f"CostModel: ({collective}, {algorithm}) has alpha={alpha}, "
                               f"beta={beta}; both must be finite and non-negative")
        self.fits = {key: (float(a), float(b)) for key, (a, b) in fits.items()}
        self.context = dict(context or {})
        self.samples = {key: [(int(n), float(t)) for n, t in s]
                        for key, s in (samples or {}).items()}
        self._crossovers = {}
        for c in {c for c, _ in self.fits}:
            mine = {a: fit for (c2, a), fit in self.fits.items() if c2 == c}
            measured = {a: self.samples.get((c, a), []) for a in mine}
            self._crossovers[c] = _measured_envelope(measured) or _lower_envelope(mine)

    def predict(self, collective: str, algorithm: str, nbytes: float) -> float:
        """Predicted seconds for `collective` by `algorithm` on a buffer of nbytes."""
        try:
            alpha, beta = self.fits[collective, algorithm]
        except KeyError:
            raise HalError(f"CostModel.predict: no fit for ({collective!r}, {algorithm!r}); "
                           f"this model has {', '.join(map(str, self.fits))}") from None
        return alpha + beta * nbytes

    def choose(self, nbytes: float, collective: str = "all_reduce") -> str:
        """The algorithm with the least predicted time for a buffer of nbytes."""
        try:
            starts, algorithms = self._crossovers[collective]
        except KeyError:
            raise HalError(f"CostModel.choose: no fit for collective {collective!r}; this "
                           f"model has {', '.join(sorted(self._crossovers))}") from None
        return algorithms[bisect.bisect_right(starts, nbytes)]

    def crossovers(self, collective: str = "all_reduce") -> list[tuple[float, str]]:
        """[(from nbytes, algorithm)]: which algorithm `choose` picks from which size on."""
        starts, algorithms = self._crossovers[collective]
        return list(zip([0.0, *starts], algorithms))

    def table(self) -> list[dict]:
        """One row per fit: collective, algorithm, alpha (us), bandwidth 1/beta (GB/s), the
        number of sizes measured and the fit's largest relative error on them."""
        rows = []
        for (collective, algorithm), (alpha, beta) in self.fits.items():
            measured = self.samples.get((collective, algorithm), [])
            errors = [abs(alpha + beta * n - t) / t for n, t in measured if t > 0]
            rows.append({"collective": collective, "algorithm": algorithm,
                         "alpha_us": alpha * 1e6, "GB/s": 1 / beta / 1e9 if beta else np.inf,
                         "sizes": len(measured),
                         "max_rel_err": max(errors) if errors else None})
        return rows

    def to_json(self) -> dict:
        """The model as a JSON-ready dict (schema `hal.parallel.cost_model`, version 1)."""
        return {"schema": SCHEMA, "version": VERSION, "context": copy.deepcopy(self.context),
                "fits": [{"collective": c, "algorithm": a, "alpha_s": alpha,
                          "beta_s_per_byte": beta,
                          "samples": [list(s) for s in self.samples.get((c, a), [])]}
                         for (c, a), (alpha, beta) in self.fits.items()]}

    @classmethod
    def from_json(cls, data: dict, source: str = "cost model") -> CostModel:
        """The model a `to_json` dict describes; HalError naming `source` if it is not one."""
        redo = "delete it and recalibrate (mpiexec -n N python -m frontends.parallel.cost)"
        if not isinstance(data, dict) or data.get("schema") != SCHEMA:
            raise HalError(f"{source} is not a hal cost model (no \"schema\": \"{SCHEMA}\"); "
                           f"{redo}")
        if data.get("version") != VERSION:
            raise HalError(f"{source} has version {data.get('version')!r}, this hal reads "
                           f"version {VERSION}; {redo}")
        try:
            fits, samples = {}, {}
            for entry in data["fits"]:
                key = (entry["collective"], entry["algorithm"])
                fits[key] = (float(entry["alpha_s"]), float(entry["beta_s_per_byte"]))
                samples[key] = [(n, t) for n, t in entry.get("samples", [])]
            return cls(fits, dict(data.get("context", {})), samples)
        except HalError as e:
            raise HalError(f"{source}: {e}; {redo}") from None
        except (KeyError, TypeError, ValueError) as e:
            raise HalError(f"{source} is malformed ({type(e).__name__}: {e}); {redo}") from None

    def save(self, path: str | os.PathLike) -> Path:
        """Write the model as JSON to path (atomically; parent folders made); returns path."""
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        partial = path.with_name(f".{path.name}.{os.getpid()}")
        partial.write_text(json.dumps(self.to_json(), indent=1), encoding="utf-8")
        os.replace(partial, path)
        return path

    @classmethod
    def load(cls, path: str | os.PathLike) -> CostModel:
        """The model stored at path; HalError naming the file if it is missing or not one."""
        try:
            data = json.loads(Path(path).read_text(encoding="utf-8"))
        except FileNotFoundError:
            raise HalError(f"cost model {path}: no such file; calibrate one with `mpiexec -n N "
                           f"python -m frontends.parallel.cost --out {path}`") from None
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
            raise HalError(f"cost model {path} cannot be read ({e}); delete it and recalibrate "
                           "(mpiexec -n N python -m frontends.parallel.cost)") from None
        return cls.from_json(data, f"cost model {path}")


def _known() -> str:
    return "; ".join(f"{c}: {', '.join(a)}" for c, a in COLLECTIVES.items())


def _lower_envelope(lines: dict[str, tuple[float, float]]) -> tuple[list[float], list[str]]:
    """(starts, algorithms): algorithms[i] is the cheapest from starts[i - 1] (0 for i = 0)
    up to starts[i]; ties go to the algorithm listed first."""
    cuts = sorted({(a1 - a2) / (b2 - b1) for (a1, b1), (a2, b2) in combinations(lines.values(), 2)
                   if b1 != b2 and (a1 - a2) / (b2 - b1) > 0})
    probes = [m / 2 for m in cuts[:1]] + [(lo + hi) / 2 for lo, hi in pairwise(cuts)]
    probes += [2 * cuts[-1] if cuts else 1.0]  # beyond the last cut (any n > 0 if none)
    picks = [min(lines, key=lambda a, n=n: lines[a][0] + lines[a][1] * n) for n in probes]
    starts, algorithms = [], picks[:1]
    for cut, pick in zip(cuts, picks[1:]):
        if pick != algorithms[-1]:
            starts.append(cut)
            algorithms.append(pick)
    return starts, algorithms


def _measured_envelope(samples: dict[str, list[tuple[int, float]]]
                       ) -> tuple[list[float], list[str]] | None:
    """`_lower_envelope` of the per-band lines through the measured medians (the first and
    last bands' lines continue below and above the sizes measured); None unless every
    algorithm was measured at the same two or more sizes."""
    sizes = sorted(set.intersection(*(set(n for n, _ in s) for s in samples.values())))
    if len(sizes) < 2 or any(len(s) != len(sizes) for s in samples.values()):
        return None
    table = {a: dict(s) for a, s in samples.items()}
    starts: list[float] = []
    algorithms: list[str] = []
    for i, (lo, hi) in enumerate(pairwise(sizes)):
        lines = {a: (t[lo] - lo * (t[hi] - t[lo]) / (hi - lo), (t[hi] - t[lo]) / (hi - lo))
                 for a, t in table.items()}
        band_lo = 0.0 if i == 0 else float(lo)
        band_hi = math.inf if hi == sizes[-1] else float(hi)
        cuts, picks = _lower_envelope(lines)
        for start, pick in zip([0.0, *cuts], picks):
            end = next((c for c in cuts if c > start), math.inf)
            if end <= band_lo or start >= band_hi:
                continue
            if not algorithms:
                algorithms.append(pick)
            elif pick != algorithms[-1]:
                starts.append(max(start, band_lo))
                algorithms.append(pick)
    return starts, algorithms


LATENCY_BYTES = 1024  # at or below: a message's time is its latency
BANDWIDTH_BYTES = 64 * 2**10  # at or above: its time is mostly bytes over bandwidth


def fit(samples: list[tuple[float, float]]) -> tuple[float, float]:
    """(alpha, beta) >= 0 of T = alpha + beta * n fitted to [(n, T)], Hockney's way: alpha
    from the messages of at most LATENCY_BYTES (the median of T - beta n), beta the
    least-squares slope of T - alpha over those of at least BANDWIDTH_BYTES (absolute
    error, so the large messages, where the choice of algorithm matters, set it), the two
    alternated to their fixed point. Without sizes in both ranges: least squares on the
    relative error, sum(((alpha + beta n - T) / T)^2), non-negative by scipy's NNLS."""
    n, t = np.array(samples, dtype=np.float64).T
    small, large = n <= LATENCY_BYTES, n >= BANDWIDTH_BYTES
    if small.any() and large.any():
        alpha = beta = 0.0
        for _ in range(50):
            before = (alpha, beta)
            beta = max(float(np.sum((t[large] - alpha) * n[large]) / np.sum(n[large] ** 2)), 0.0)
            alpha = max(float(np.median(t[small] - beta * n[small])), 0.0)
            if np.allclose(before, (alpha, beta), rtol=1e-12, atol=0):
                break
        return alpha, beta
    (alpha, beta), _ = nnls(np.stack([1 / t, n / t], axis=1), np.ones_like(t))
    return float(alpha), float(beta)


def _timed(collective: str, algorithm: str, comm: MPI.Comm, x: np.ndarray, node) -> float:
    comm.Barrier()
    start = time.perf_counter()
    if collective == "all_reduce":
        run(algorithm, comm, x, node)
    elif collective == "all_gather":
        comm.Allgather(x[:x.size // comm.size], np.empty_like(x))
    elif collective == "reduce_scatter":
        comm.Reduce_scatter_block(x, np.empty(x.size // comm.size, x.dtype), op=MPI.SUM)
    else:
        comm.Alltoall(x, np.empty_like(x))
    return time.perf_counter() - start


def calibrate(comm: MPI.Comm, node: MPI.Comm | None = None, sizes=None, repeats: int = 3
              ) -> CostModel:
    """Time every (collective, algorithm) at each size (bytes; default 8 B .. 32 MiB by
    factors of 4) and fit alpha, beta to each (`fit`). Collective over comm.

    After one untimed warm-up round, each sample follows a barrier; the algorithms take
    turns within each repeat so that interference from other work spreads over all of them.
    Per size, the median over `repeats` on each rank, then the maximum over the ranks: every
    rank gets the same model. Sizes are float32 buffers rounded up to a multiple of the
    ranks; the bytes recorded are those actually moved. About 1-1.5 s at 2 ranks on an idle
    2-core machine.
    """
    keys = [(c, a) for c, algorithms in COLLECTIVES.items() for a in algorithms]
    sizes = DEFAULT_SIZES if sizes is None else sizes
    counts = sorted({-(-int(s) // 4 // comm.size) * comm.size for s in sizes})
    node_comms(comm, node)  # split once, outside the timings
    for c, a in keys:  # a warm-up round: first calls set up connections and buffers
        _timed(c, a, comm, np.ones(counts[0], np.float32), node)
    medians = np.empty((len(counts), len(keys)))
    for i, count in enumerate(counts):
        x = np.ones(count, np.float32)
        times = [[_timed(c, a, comm, x, node) for c, a in keys] for _ in range(repeats)]
        medians[i] = [statistics.median(column) for column in zip(*times)]
    comm.Allreduce(MPI.IN_PLACE, medians, op=MPI.MAX)
    samples = {key: [(4 * count, medians[i, j]) for i, count in enumerate(counts)]
               for j, key in enumerate(keys)}
    return CostModel({key: fit(s) for key, s in samples.items()}, context(comm, node), samples)


def context(comm: MPI.Comm, node: MPI.Comm | None = None) -> dict:
    """Where a calibration runs: ranks, nodes, host names, date, mpi4py and MPI library
    versions, and the environment variables that steer MPI. Collective over comm."""
    node, _ = node_comms(comm, node)
    return {
        "ranks": comm.size,
        "nodes": comm.allreduce(int(node.rank == 0)),
        "hosts": sorted(set(comm.allgather(MPI.Get_processor_name()))),
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "mpi4py": mpi4py.__version__,
        "mpi_library": " ".join(MPI.Get_library_version().splitlines()[0].split()),
        "env": {k: v for k, v in sorted(os.environ.items()) if k.startswith(ENV_PREFIXES)},
    }


def default_path(ctx: dict) -> Path:
    """The cache file for a context: <hal cache dir>/parallel/cost-<host>-<ranks>r<nodes>n.json."""
    return (settings.cache_dir / "parallel"
            / f"cost-{ctx['hosts'][0]}-{ctx['ranks']}r{ctx['nodes']}n.json")


def load_or_calibrate(comm: MPI.Comm, node: MPI.Comm | None = None,
                      path: str | os.PathLike | None = None, sizes=None, repeats: int = 3
                      ) -> CostModel:
    """The model stored at path (default `default_path`) if rank 0 finds one whose context
    matches this one in ranks, nodes, hosts, versions and MPI environment; else a fresh
    `calibrate(comm, node, sizes, repeats)`, which rank 0 stores there. Collective over comm;
    every rank gets rank 0's model, and an unreadable file is recalibrated over."""
    here = context(comm, node)
    path = Path(path) if path is not None else default_path(here)
    stored = None
    if comm.rank == 0 and path.exists():
        try:
            model = CostModel.load(path)
            if all(model.context.get(k) == here[k] for k in MATCHED_CONTEXT):
                stored = model.to_json()
        except HalError:
            pass
    stored = comm.bcast(stored, root=0)
    if stored is not None:
        return CostModel.from_json(stored, f"cost model {path}")
    model = calibrate(comm, node, sizes, repeats)
    if comm.rank == 0:
        model.save(path)
    return model


def main(argv=None) -> None:
    """Calibrate over MPI.COMM_WORLD, store the model, print the fits and choices (rank 0)."""
    parser = argparse.ArgumentParser(prog="python -m frontends.parallel.cost",
                                     description=main.__doc__)
    parser.add_argument("--out", type=Path, help="JSON file (default: the hal cache)")
    parser.add_argument("--repeats", type=int, default=3, help="samples per size (median)")
    args = parser.parse_args(argv)
    comm = MPI.COMM_WORLD
    model = calibrate(comm, repeats=args.repeats)
    if comm.rank:
        return
    path = model.save(args.out or default_path(model.context))
    ctx = model.context
    print(f"{ctx['ranks']} ranks on {ctx['nodes']} node(s) {', '.join(ctx['hosts'])}, "
          f"{ctx['mpi_library']}, env {ctx['env']}; stored in {path}")
    print(tabulate(model.table(), headers="keys", floatfmt=".3g"))
    measured = {a: dict(model.samples["all_reduce", a]) for a in ALGORITHMS}
    print(tabulate([{"bytes": n, **{f"{a} us": measured[a][n] * 1e6 for a in ALGORITHMS},
                     "fastest measured": min(ALGORITHMS, key=lambda a: measured[a][n]),
                     "chosen": model.choose(n)} for n in measured["allreduce"]],
                   headers="keys", floatfmt=".4g"))
    print("all_reduce choice by size: " + ", ".join(f"from {n:.0f} B {a}"
                                                    for n, a in model.crossovers()))


if __name__ == "__main__":
    main()
