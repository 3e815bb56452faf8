"""FFT: batched complex transforms along any axes, float and double, and rfft/irfft on top.

A 1-d transform of length n along one axis sees the array as (outer, n, inner) and does
one row per (outer, inner) pair. Smooth n (factors 2, 3, 5) runs the Stockham autosort
algorithm in mixed radix 8/4/2/3/5: the whole row in local memory in one kernel when it
fits, else one kernel per pass through global memory. Other n (primes) run Bluestein's
chirp-z algorithm: a cyclic convolution of power-of-two length m >= 2n - 1 done with two
Stockham transforms. Twiddles come from a table computed in double on the host. Plans
(tables, Bluestein filters, kernels) are cached per device, length and dtype. rfft and
irfft of a row that fits local memory are one kernel each: the transform loads real
input or the Hermitian half and stores the half spectrum or the real part. pyvkfft, when
installed, takes complex transforms along the last axis (the `vkfft` extra).
"""

from __future__ import annotations

import functools
import math

import numpy as np

from hal import dtypes as dt

from . import cltypes, vkfft
from .elementwise import map_arrays
from .movement import slice_
from .table import kernels

FORWARD, INVERSE = -1.0, 1.0


def factor(n: int) -> list[int] | None:
    """Stockham radices for n (8s, then 4, 2, 3, 5), or None when n has another prime factor."""
    radices = []
    for r in (8, 4, 2, 3, 5):
        while n % r == 0 and n > 1:
            radices.append(r)
            n //= r
    return radices if n == 1 else None


# -- butterflies: C statements over complex variables, sign `sgn` (-1 forward) --------------
class _Names:
    def __init__(self):
        self.count = 0

    def __call__(self) -> str:
        self.count += 1
        return f"t{self.count}"


def _const(real: str, value: float) -> str:
    return f"{value!r}f" if real == "float" else repr(value)


def _dft(inputs: list[str], real: str, vec: str, fresh: _Names, code: list[str]) -> list[str]:
    """Append C computing the DFT of `inputs`; return the variables holding the outputs."""
    r = len(inputs)
    if r == 1:
        return inputs
    if r % 2 == 0:
        even = _dft(inputs[0::2], real, vec, fresh, code)
        odd = _dft(inputs[1::2], real, vec, fresh, code)
        outs = [""] * r
        for q in range(r // 2):
            o = odd[q]
            if q:
                t = fresh()
                if 4 * q == r:  # multiply by sgn * i
                    code.append(f"const {vec} {t} = ({vec})(-{o}.y, {o}.x) * sgn;")
                else:
                    c = _const(real, math.cos(2 * math.pi * q / r))
                    s = _const(real, math.sin(2 * math.pi * q / r))
                    code.append(f"const {vec} {t} = cmul({o}, ({vec})({c}, sgn * {s}));")
                o = t
            a, b = fresh(), fresh()
            code.append(f"const {vec} {a} = {even[q]} + {o}, {b} = {even[q]} - {o};")
            outs[q], outs[q + r // 2] = a, b
        return outs
    outs = []
    for q in range(r):
        terms = [inputs[0]]
        for t in range(1, r):
            m = (t * q) % r
            if m == 0:
                terms.append(inputs[t])
            else:
                c = _const(real, math.cos(2 * math.pi * m / r))
                s = _const(real, math.sin(2 * math.pi * m / r))
                terms.append(f"cmul({inputs[t]}, ({vec})({c}, sgn * {s}))")
        name = fresh()
        code.append(f"const {vec} {name} = " + " + ".join(terms) + ";")
        outs.append(name)
    return outs


def _pass_body(r: int, n: int, real: str, vec: str, read, write, ns: str) -> list[str]:
    """One Stockham pass for work-item j: read r points, twiddle, butterfly, write."""
    code = ["const long k = j % " + ns + ";"]
    code += [f"{vec} v{t} = {read(f'j + {t * (n // r)}')};" for t in range(r)]
    code.append(f"const long step = {n} / ({ns} * {r});")
    for t in range(1, r):
        code.append(f"{{ const {vec} w = tw[({t} * k * step) % {n}]; "
                    f"v{t} = cmul(v{t}, ({vec})(w.x, sgn * w.y)); }}")
    fresh = _Names()
    outs = _dft([f"v{t}" for t in range(r)], real, vec, fresh, code)
    code.append(f"const long d = (j / {ns}) * {ns} * {r} + k;")
    code += [write(f"d + {t} * {ns}", outs[t]) for t in range(r)]
    return code


def _header(d) -> tuple[str, str, str]:
    real = "double" if d == dt.complex128 else "float"
    vec = f"{real}2"
    head = cltypes.preamble([d]) + (
        f"inline {vec} cmul({vec} a, {vec} b) "
        f"{{ return ({vec})(a.x * b.x - a.y * b.y, a.x * b.y + a.y * b.x); }}\n")
    return head, real, vec


_ROW = "const long base = (row / inner) * N * inner + row % inner;"


def local_source(d, n: int, radices: list[int], group: int, load: str = "complex",
                 store: str = "complex") -> str:
    """All passes of a length-n transform on one row in local memory (one work-group per row).

    load: "complex" (n points), "real" (n real points, imaginary parts 0: rfft's input) or
    "hermitian" (points 0..n//2, the rest their conjugates by symmetry: irfft's input);
    store: "complex" (n points), "half" (points 0..n//2: rfft's output) or "real" (the
    real parts: irfft's output).
    """
    head, real, vec = _header(d)
    xn = n // 2 + 1 if load == "hermitian" else n
    yn = n // 2 + 1 if store == "half" else n
    read = f"x[x_off + xbase + {'(j < XN ? j : N - j)' if load == 'hermitian' else 'j'} * inner]"
    if load == "real":
        read = f"({vec})({read}, 0)"
    fill = f"bufa[j] = {read};"
    if load == "hermitian":
        fill = f"{{ const {vec} v = {read}; bufa[j] = j < XN ? v : ({vec})(v.x, -v.y); }}"
    lines = ["const long row = get_group_id(0);", "const int lid = get_local_id(0);",
             "const long xbase = (row / inner) * XN * inner + row % inner;",
             "const long ybase = (row / inner) * YN * inner + row % inner;",
             f"__local {vec} bufa[{n}], bufb[{n}];",
             f"for (int j = lid; j < {n}; j += {group}) {fill}",
             "barrier(CLK_LOCAL_MEM_FENCE);"]
    src, dst, ns = "bufa", "bufb", 1
    for r in radices:
        body = _pass_body(r, n, real, vec, lambda i, s=src: f"{s}[{i}]",
                          lambda i, v, t=dst: f"{t}[{i}] = {v};", str(ns))
        lines += [f"for (long j = lid; j < {n // r}; j += {group}) {{",
                  *["  " + b for b in body], "}", "barrier(CLK_LOCAL_MEM_FENCE);"]
        src, dst, ns = dst, src, ns * r
    value = f"({src}[j] * scale).x" if store == "real" else f"{src}[j] * scale"
    lines.append(f"for (int j = lid; j < YN; j += {group}) y[y_off + ybase + j * inner] = {value};")
    x_t = real if load == "real" else vec
    y_t = real if store == "real" else vec
    params = (f"__global const {x_t} *x, long x_off, __global {y_t} *y, long y_off, long inner, "
              f"__global const {vec} *tw, {real} sgn, {real} scale")
    return (head + f"#define N {n}L\n#define XN {xn}L\n#define YN {yn}L\n"
            f"__kernel __attribute__((reqd_work_group_size({group}, 1, 1)))"
            f" void fft({params})\n{{\n  " + "\n  ".join(lines) + "\n}\n")


def global_source(d, n: int, r: int) -> str:
    """One radix-r Stockham pass of a length-n transform through global memory."""
    head, real, vec = _header(d)
    body = _pass_body(r, n, real, vec, lambda i: f"x[x_off + base + ({i}) * inner]",
                      lambda i, v: f"y[y_off + base + ({i}) * inner] = {v} * scale;", "ns")
    lines = ["const long g = get_global_id(0);",
             f"const long row = g / {n // r}, j = g % {n // r};", _ROW, *body]
    params = (f"__global const {vec} *x, long x_off, __global {vec} *y, long y_off, long inner, "
              f"__global const {vec} *tw, {real} sgn, {real} scale, long ns")
    return (head + f"#define N {n}L\n__kernel void fft({params})\n{{\n  " + "\n  ".join(lines)
            + "\n}\n")


def chirp_source(d) -> str:
    """y[row, j] = j < valid ? x[row, j] * v[j] : 0 for j < y's length (Bluestein's steps)."""
    head, _, vec = _header(d)
    return head + f"""__kernel void chirp(__global const {vec} *x, long x_off, long xn,
    long x_inner, __global {vec} *y, long y_off, long yn, long y_inner,
    __global const {vec} *v, long valid)
{{
  const long g = get_global_id(0);
  const long row = g / yn, j = g % yn;
  {vec} value = 0;
  if (j < valid)
    value = cmul(x[x_off + (row / x_inner) * xn * x_inner + row % x_inner + j * x_inner], v[j]);
  y[y_off + (row / y_inner) * yn * y_inner + row % y_inner + j * y_inner] = value;
}}
"""


# -- plans ----------------------------------------------------------------------------
class Plan:
    """A length-n complex transform of one dtype on one device, direction given per call:
    tables, Bluestein filters and kernels made once, output layouts once per input shape."""

    def __init__(self, device, n: int, d: np.dtype):
        self.device, self.n, self.d = device, n, d
        self.radices = factor(n)
        self.bluestein = None
        self.local = False
        self._post: dict = {}  # Bluestein's output chirp times the norm, per (sign, scale)
        self._kernels: dict = {}  # local kernels per (load, store)
        self._layouts: dict = {}  # (input shape, axis, load, store) -> output layout
        if self.radices is None:
            m = 1 << (2 * n - 2).bit_length()
            self.bluestein = {sign: self._chirps(sign, m) for sign in (FORWARD, INVERSE)}
            self.inner_plan = plan(device, m, d)
            self.chirp = device.build("fft", chirp_source(d), "chirp")
            return
        roots = np.exp(2j * np.pi * np.arange(n) / n).astype(d)
        self.twiddles = device.upload(roots)
        self.local = 2 * n * d.itemsize <= device.local_mem // 2
        self.group = device.group_size(max(1, n // min(self.radices or [1])))
        self._passes: list | None = None  # the global-memory kernels, built on first use

    def _chirps(self, sign: float, m: int):
        n = self.n
        k = np.arange(n)
        c = np.exp(sign * 1j * np.pi * ((k * k) % (2 * n)) / n)
        b = np.zeros(m, np.complex128)
        b[:n] = np.conj(c)
        b[m - n + 1:] = np.conj(c[1:])[::-1]
        filt = np.fft.fft(b) / m
        up = self.device.upload
        return up(c.astype(self.d)), up(filt.astype(self.d)), c

    def run(self, x, axis: int, sign: float, scale: float, load: str = "complex",
            store: str = "complex"):
        """A new array: the transform of x along axis, times scale. Loads and stores other
        than complex (see local_source) need a plan that runs in local memory (`local`)."""
        key = (x.shape, axis, load, store)
        layout = self._layouts.get(key)
        if layout is None:
            layout = self._layouts[key] = self._layout(x.shape, axis, load, store)
        shape, dtype, inner, rows = layout
        out = self.device.empty(shape, dtype)
        if rows == 0:
            return out
        if self.local:
            kernel = self._kernels.get((load, store))
            if kernel is None:
                kernel = self._kernels[(load, store)] = self.device.build(
                    "fft", local_source(self.d, self.n, self.radices, self.group, load, store),
                    "fft")
            kernel(self.device.queue, (rows * self.group,), (self.group,), x.base_data,
                   x.offset // x.dtype.itemsize, out.base_data, 0, inner,
                   self.twiddles.base_data, sign, scale)
        elif self.bluestein is not None:
            self._bluestein(x, out, inner, rows, sign, scale)
        else:
            self._stockham(x, out, inner, rows, sign, scale)
        return out

    def _layout(self, shape: tuple, axis: int, load: str, store: str) -> tuple:
        """(output shape, output dtype, inner size, rows) of a transform of this input."""
        out = list(shape)
        out[axis] = self.n // 2 + 1 if store == "half" else self.n
        dtype = dt.real_dtype(self.d) if store == "real" else self.d
        return tuple(out), dtype, math.prod(shape[axis + 1:]), math.prod(out) // out[axis]

    def _stockham(self, x, out, inner, rows, sign, scale):
        dev, d = self.device, self.d
        temps = [dev.empty(x.shape, d), dev.empty(x.shape, d)]
        if self._passes is None:
            self._passes = [dev.build("fft", global_source(d, self.n, r), "fft")
                            for r in self.radices]
        src, ns = x, 1
        for i, (r, kernel) in enumerate(zip(self.radices, self._passes)):
            last = i == len(self.radices) - 1
            dst = out if last else temps[i % 2]
            dev.run_items(kernel, rows * (self.n // r), src.base_data,
                          src.offset // d.itemsize, dst.base_data, dst.offset // d.itemsize,
                          inner, self.twiddles.base_data, sign, scale if last else 1.0, ns)
            src, ns = dst, ns * r

    def _bluestein(self, x, out, inner, rows, sign, scale):
        dev, n, d = self.device, self.n, self.d
        chirp, filt, c = self.bluestein[sign]
        m = self.inner_plan.n
        post = self._post.get((sign, scale))
        if post is None:
            post = self._post[(sign, scale)] = dev.upload((c * scale).astype(d))
        work = dev.empty((rows, m), d)

        def step(src, s_n, s_inner, dst, d_n, d_inner, vec, valid):
            dev.run_items(self.chirp, rows * d_n, src.base_data, src.offset // d.itemsize, s_n,
                          s_inner, dst.base_data, dst.offset // d.itemsize, d_n, d_inner,
                          vec.base_data, valid)

        step(x, n, inner, work, m, 1, chirp, n)
        spectrum = self.inner_plan.run(work, 1, FORWARD, 1.0)
        step(spectrum, m, 1, spectrum, m, 1, filt, m)
        conv = self.inner_plan.run(spectrum, 1, INVERSE, 1.0)
        step(conv, m, 1, out, n, inner, post, n)


def plan(device, n: int, d: np.dtype) -> Plan:
    """The cached plan for length n and dtype on the device."""
    key = ("fft", n, d)
    found = device.cache.get(key)
    if found is None:
        found = device.cache[key] = Plan(device, n, d)
    return found


def _scale(n: int, norm, inverse: bool) -> float:
    norm = norm or "backward"
    if norm == "ortho":
        return 1 / math.sqrt(n)
    return 1 / n if (norm == "backward") == inverse else 1.0


def _by_vkfft(device, shape: tuple, axis: int) -> bool:
    """True when VkFFT takes a transform along axis of an array of this shape (the last
    axis, enabled on the device)."""
    return (device.use_vkfft and axis == len(shape) - 1 and shape[axis] > 1
            and math.prod(shape) > 0 and vkfft.available())


def transform(device, x, axes, sign: float, norm):
    """Complex transform of x along each of axes in turn (last-axis ones by VkFFT if enabled)."""
    for a in axes:
        n = x.shape[a]
        scale = _scale(n, norm, sign == INVERSE)
        if _by_vkfft(device, x.shape, a):
            x = vkfft.run(device, x, sign, scale)
        else:
            x = plan(device, n, x.dtype).run(x, a, sign, scale)
    return x


@kernels.register("fftn")
def fftn(device, x, *, axes, norm=None):
    """N-d forward DFT over axes."""
    return transform(device, x, [a % x.ndim for a in axes], FORWARD, norm)


@kernels.register("ifftn")
def ifftn(device, x, *, axes, norm=None):
    """N-d inverse DFT over axes."""
    return transform(device, x, [a % x.ndim for a in axes], INVERSE, norm)


def _real_route(device, shape: tuple, d: np.dtype, axes, n, norm, inverse: bool):
    """(axes made non-negative, the plan that does the last axis in one local-memory
    kernel or None, its scale) of an rfftn (n None) or irfftn on complex dtype d:
    worked out once per signature."""
    key = ("real fft", shape, d, tuple(axes), n, norm)
    found = device.cache.get(key)
    if found is None:
        axes = [a % len(shape) for a in axes]
        last = axes[-1]
        full = list(shape)
        n = full[last] = shape[last] if n is None else n
        fused = None if _by_vkfft(device, full, last) else plan(device, n, d)
        found = device.cache[key] = (axes, fused if fused is not None and fused.local else None,
                                     _scale(n, norm, inverse))
    return found


@kernels.register("rfftn")
def rfftn(device, x, *, axes, norm=None):
    """Real-input transform: complex transform of the last axis, kept to n//2 + 1, then the rest.
    A plan in local memory does the last axis in one kernel (real loads, half the stores)."""
    cd = dt.complex_dtype(x.dtype)
    axes, fused, scale = _real_route(device, x.shape, cd, axes, None, norm, False)
    last = axes[-1]
    if fused is not None:
        z = fused.run(x, last, FORWARD, scale, "real", "half")
    else:
        z = map_arrays(device, "rfftn", f"{cltypes.cprefix(cd)}_new(a0, 0)", [x], cd)
        z = transform(device, z, [last], FORWARD, norm)
        bounds = [(0, 1, n) for n in z.shape]
        bounds[last] = (0, 1, x.shape[last] // 2 + 1)
        z = slice_(device, z, bounds=bounds)
    return transform(device, z, axes[:-1], FORWARD, norm)


@functools.cache
def hermitian_source(d) -> str:
    """y (length n along the axis) from its first n//2 + 1 points x by Hermitian symmetry."""
    head, _, vec = _header(d)
    return head + f"""__kernel void hermitian(__global const {vec} *x, long x_off, long m,
    __global {vec} *y, long n, long inner)
{{
  const long g = get_global_id(0);
  const long row = g / n, j = g % n;
  const long outer = row / inner, i = row % inner;
  const long src = j < m ? j : n - j;
  const {vec} v = x[x_off + (outer * m + src) * inner + i];
  y[(outer * n + j) * inner + i] = j < m ? v : ({vec})(v.x, -v.y);
}}
"""


@kernels.register("irfftn")
def irfftn(device, x, *, axes, n, norm=None, out_shape, out_dtype):
    """Inverse of rfftn: inverse transforms of the other axes, then the Hermitian last axis
    (one kernel when its plan runs in local memory: Hermitian loads, real stores)."""
    axes, fused, scale = _real_route(device, x.shape, x.dtype, axes, n, norm, True)
    last = axes[-1]
    z = transform(device, x, axes[:-1], INVERSE, norm)
    if fused is not None:
        return fused.run(z, last, INVERSE, scale, "hermitian", "real")
    shape = list(z.shape)
    shape[last] = n
    full = device.empty(shape, z.dtype)
    inner = math.prod(shape[last + 1:])
    rows = full.size // n
    if rows:
        kernel = device.build("irfftn", hermitian_source(z.dtype), "hermitian")
        device.run_items(kernel, rows * n, z.base_data, z.offset // z.dtype.itemsize,
                         z.shape[last], full.base_data, n, inner)
    full = transform(device, full, [last], INVERSE, norm)
    return map_arrays(device, "irfftn", "a0.real", [full], out_dtype)
