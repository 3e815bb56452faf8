"""The cpu backend's FFT kernels: FFTW through pyfftw, with plans made once per transform.

A plan holds FFTW's plans of one (transform, shape, dtype, axes, norm, output length), one
per thread count `threads_for` may choose, measured (FFTW_MEASURE: 2-D 1024^2 runs 5x
faster than an estimated plan) and cached; FFTW's wisdom is kept in `settings.cache_dir`
so the next process skips the measuring. A call points the plan at its arrays
(`update_arrays`) and executes it: about 0.4 us over FFTW itself, where `pyfftw.builders`
and `pyfftw.interfaces` re-check and copy. Each kernel takes `out=`, so under `hal.jit`
it writes into the executable's preallocated buffer. Where pyfftw does not import,
scipy's pocketfft runs instead.

Below the threaded size a kernel offers `for_shape`: each node of a jitted graph and
each bound eager call (hal.dispatch) gets a plan of its own, called directly. A node's
plan keeps pointing at the executable's buffers, so a call is FFTW's execute alone (a
KdV step of 8 transforms: 22 -> 14 us); one plan shared by the nodes re-pointed itself
at every node. ducc0 0.42 measured beside it (one thread, same arrays) was 1.9-7x slower
than a planned FFTW (1024-point c64, 256-point real, 4096 x 1024 batched, 1024^2 2-D):
not used.

Threads: a transform of `THREADED_POINTS` points or more runs on `settings.threads`
threads, fewer where other tasks keep cores busy now (FFTW's threads wait for each other
at every pass: on 2 cores with one taken, 2 threads ran 3x (1024^2) to 400x (128^2)
slower than one; with both free they ran 1.5-2x faster from 2^14 points). The count is a
power of two, and a transform is planned for every count at once, so a change of load
between calls picks a ready plan (planned on demand, a new count was planned, and the
wisdom file written, inside the call that met it: 2-9 ms in 4-25 ms calls of a 4096 x 1024
c64 transform on 2 shared cores).
"""

from __future__ import annotations

import functools
import math
import os
import threading

import numpy as np

import hal

THREADED_POINTS = 1 << 14  # below this, a second thread costs more than it gains (FFTW, 2 cores)
_CACHED_PLANS = 64
_WISDOM_FILE = "fftw-wisdom-{}.bin"
# pocketfft's normalisation code (0: none, 1: 1/sqrt(n), 2: 1/n) per norm, (inverse, forward)
_INORM = {None: (2, 0), "backward": (2, 0), "ortho": (1, 1), "forward": (0, 2)}
_FORWARD = {"fftn": True, "rfftn": True, "ifftn": False, "irfftn": False}


@functools.cache
def pyfftw_module():
    """pyfftw, or None where it is not installed (the kernels then run pocketfft)."""
    try:
        import pyfftw
    except ImportError:
        return None
    _load_wisdom(pyfftw)
    return pyfftw


def thread_counts() -> tuple[int, ...]:
    """The thread counts `threads_for` chooses from: the powers of two up to
    `settings.threads` and the usable cores."""
    return tuple(1 << k for k in range(min(hal.settings.threads, _usable_cores()).bit_length()))


def threads_for(points: int) -> int:
    """FFT threads for a transform of `points` points: 1 below THREADED_POINTS, else the
    largest of `thread_counts()` within the cores no other running task holds now."""
    most = thread_counts()[-1]
    if points < THREADED_POINTS or most == 1:
        return 1
    free = max(1, _usable_cores() - _others_running())
    return min(most, 1 << (free.bit_length() - 1))


@functools.cache
def _usable_cores() -> int:
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()


@functools.cache
def _loadavg_fd() -> int | None:
    try:
        return os.open("/proc/loadavg", os.O_RDONLY)
    except OSError:  # not Linux: no count of running tasks, every core counts as free
        return None


def _others_running() -> int:
    """Tasks running or runnable now besides this caller (Linux's /proc/loadavg, 0.4 us)."""
    fd = _loadavg_fd()
    if fd is None:
        return 0
    return int(os.pread(fd, 64, 0).split()[3].split(b"/")[0]) - 1


class Plan:
    """One transform planned with FFTW for each of `threads` (thread counts):
    `plan(x, out, threads)` writes it into out (or a new array)."""

    takes_out = True  # a graph node running its own plan gets a preallocated buffer

    def __init__(self, pyfftw, name: str, shape: tuple, dtype: np.dtype, axes: tuple,
                 norm, n, threads: tuple[int, ...]):
        forward = _FORWARD[name]
        in_shape, out_shape = list(shape), list(shape)
        in_dtype, out_dtype = dtype, dtype
        if name == "rfftn":
            out_shape[axes[-1]] = shape[axes[-1]] // 2 + 1
            out_dtype = np.result_type(dtype, np.complex64)
        elif name == "irfftn":
            out_shape[axes[-1]] = n
            out_dtype = np.finfo(dtype).dtype
        self.out_shape, self.out_dtype = tuple(out_shape), np.dtype(out_dtype)
        points = math.prod((out_shape if name == "irfftn" else in_shape)[a] for a in axes)
        self.scale = _scale(norm, forward, points)
        # FFTW's multi-axis c2r overwrites its input (pyfftw keeps it for one axis): such a
        # plan runs on a copy, which it may destroy
        self.copies_input = name == "irfftn" and len(axes) > 1
        flags = ["FFTW_MEASURE", "FFTW_DESTROY_INPUT"] if self.copies_input else ["FFTW_MEASURE"]
        planned_on = np.zeros(in_shape, in_dtype), np.zeros(out_shape, out_dtype)
        self.fftw = {count: pyfftw.FFTW(
            *planned_on, axes=axes, direction="FFTW_FORWARD" if forward else "FFTW_BACKWARD",
            flags=flags, threads=count) for count in threads}
        self._lock = threading.Lock()  # update_arrays + execute are one step per plan
        _save_wisdom(pyfftw)

    def __call__(self, x: np.ndarray, out: np.ndarray | None = None,
                 threads: int = 1) -> np.ndarray:
        target = np.empty(self.out_shape, self.out_dtype) if out is None else out
        if self.copies_input:
            x = x.copy()
        fftw = self.fftw[threads]
        with self._lock:
            # a jitted graph passes the same buffers each call: the plan points at them already
            if x is not fftw.input_array or target is not fftw.output_array:
                try:
                    fftw.update_arrays(x, target)
                except ValueError:  # strides or alignment other than the plan's
                    return self._on_copies(fftw, x, out)
            fftw.execute()
        if self.scale != 1.0:
            target *= self.scale
        return target

    def _on_copies(self, fftw, x: np.ndarray, out: np.ndarray | None) -> np.ndarray:
        """The transform by `fftw` of a C-ordered copy of x into a new array, copied to out
        if given."""
        result = np.empty(self.out_shape, self.out_dtype)
        fftw.update_arrays(np.array(x, order="C"), result)
        fftw.execute()
        if self.scale != 1.0:
            result *= self.scale
        if out is None:
            return result
        np.copyto(out, result)
        return out


def _scale(norm, forward: bool, points: int) -> float:
    """numpy's normalisation: the factor on the unnormalised FFTW result."""
    code = _INORM[norm][forward]
    return (1.0, 1 / math.sqrt(points), 1 / points)[code]


@functools.lru_cache(maxsize=_CACHED_PLANS)
def plan(name: str, shape: tuple, dtype: np.dtype, axes: tuple, norm, n,
         threads: tuple[int, ...]) -> Plan:
    """The cached FFTW plans of one transform on each of `threads` (pyfftw must be
    installed)."""
    return Plan(pyfftw_module(), name, shape, dtype, axes, norm, n, threads)


def _wisdom_path(pyfftw):
    return hal.settings.cache_dir / _WISDOM_FILE.format(pyfftw.__version__)


def _load_wisdom(pyfftw) -> None:
    try:
        pyfftw.import_wisdom(tuple(_wisdom_path(pyfftw).read_bytes().split(b"\0\0\n")))
    except (OSError, ValueError, TypeError):  # none yet, or unreadable: plans measure anew
        pass


def _save_wisdom(pyfftw) -> None:
    path = _wisdom_path(pyfftw)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        partial = path.with_suffix(f".{os.getpid()}.tmp")
        partial.write_bytes(b"\0\0\n".join(pyfftw.export_wisdom()))
        os.replace(partial, path)
    except OSError:  # a read-only cache: the next process measures again
        pass


def kernel(name: str):
    """The kernel of one FFT op (fftn, ifftn, rfftn, irfftn): FFTW, else pocketfft."""

    def fft_kernel(x, *, axes, norm=None, n=None, out=None):
        size = x.size
        if pyfftw_module() is None or size == 0:
            result = _pocketfft(name, x, axes, norm, n)
            if out is None:
                return result
            np.copyto(out, result)
            return out
        if 2 * size < THREADED_POINTS:  # irfftn's output has at most twice its input's points
            return plan(name, x.shape, x.dtype, axes, norm, n, (1,))(x, out)
        planned = plan(name, x.shape, x.dtype, axes, norm, n, thread_counts())
        return planned(x, out, threads_for(_points(name, x, axes, n)))

    def for_shape(shapes, dtypes, *, axes, norm=None, n=None):
        """A plan of its own for one input shape and dtype (what a graph node or a bound
        eager call keeps: it stays pointed at the arrays of its last call), or None where
        the kernel must decide per call (pocketfft, no points, threads by the load now)."""
        (shape,), (dtype,) = shapes, dtypes
        points = math.prod(shape)
        if pyfftw_module() is None or points == 0 or 2 * points >= THREADED_POINTS:
            return None
        return Plan(pyfftw_module(), name, shape, dtype, axes, norm, n, (1,))

    fft_kernel.takes_out = True
    fft_kernel.for_shape = for_shape
    return fft_kernel


def _points(name: str, x, axes: tuple, n) -> int:
    """Points of a transform: its input's, or for irfftn its output's."""
    return x.size if name != "irfftn" else x.size // max(1, x.shape[axes[-1]]) * n


@functools.cache
def _pocketfft_module():
    """scipy's private pocketfft binding, or None where a scipy release has moved it."""
    try:
        from scipy.fft._pocketfft import pypocketfft
    except ImportError:
        return None
    return pypocketfft


def _pocketfft(name: str, x, axes: tuple, norm, n):
    """scipy's pocketfft binding called directly: scipy.fft's wrappers re-check and re-plan
    what hal.fft already settled, ~8 us per call (3.4 against 11.5 us for a 256-point rfft).
    The binding is private: without it the public scipy.fft functions run instead."""
    pocketfft = _pocketfft_module()
    if pocketfft is None:
        import scipy.fft

        if name == "irfftn":
            s = [x.shape[a] for a in axes[:-1]] + [n]
            return scipy.fft.irfftn(x, s=s, axes=axes, norm=norm)
        return getattr(scipy.fft, name)(x, axes=axes, norm=norm)
    threads = threads_for(_points(name, x, axes, n))
    inorm = _INORM[norm][_FORWARD[name]]
    if name == "rfftn":
        return pocketfft.r2c(x, axes, True, inorm, None, threads)
    if name == "irfftn":
        return pocketfft.c2r(x, axes, n, False, inorm, None, threads)
    return pocketfft.c2c(x, axes, _FORWARD[name], inorm, None, threads)
