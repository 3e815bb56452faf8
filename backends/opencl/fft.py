"""FFT: batched complex transforms along any axes, float and double, and rfft/irfft on top.

A 1-d transform of length n along one axis sees the array as (outer, n, inner) and does
one row per (outer, inner) pair. Smooth n (factors 2, 3, 5) runs the Stockham autosort
algorithm in mixed radix 8/4/2/3/5: the whole row in local memory in one kernel when it
fits, else one kernel per pass through global memory. Other n (primes) run Bluestein's
chirp-z algorithm: a cyclic convolution of power-of-two length m >= 2n - 1 done with two
Stockham transforms. Twiddles come from a table computed in double on the host. Plans
(tables, Bluestein filters) are cached per device, length and dtype. pyvkfft, when
installed, takes complex transforms along the last axis (the `vkfft` extra).
"""

from __future__ import annotations

import math

import numpy as np

from hal import dtypes as dt
from hal import ops

from . import cltypes, vkfft
from .elementwise import map_arrays
from .movement import slice_
from .table import kernels, supported

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


def local_source(d, n: int, radices: list[int], group: int) -> str:
    """All passes of a length-n transform on one row in local memory (one work-group per row)."""
    head, real, vec = _header(d)
    lines = ["const long row = get_group_id(0);", "const int lid = get_local_id(0);", _ROW,
             f"__local {vec} bufa[{n}], bufb[{n}];",
             f"for (int j = lid; j < {n}; j += {group}) bufa[j] = x[x_off + base + j * inner];",
             "barrier(CLK_LOCAL_MEM_FENCE);"]
    src, dst, ns = "bufa", "bufb", 1
    for r in radices:
        body = _pass_body(r, n, real, vec, lambda i, s=src: f"{s}[{i}]",
                          lambda i, v, t=dst: f"{t}[{i}] = {v};", str(ns))
        lines += [f"for (long j = lid; j < {n // r}; j += {group}) {{",
                  *["  " + b for b in body], "}", "barrier(CLK_LOCAL_MEM_FENCE);"]
        src, dst, ns = dst, src, ns * r
    lines.append(f"for (int j = lid; j < {n}; j += {group}) "
                 f"y[y_off + base + j * inner] = {src}[j] * scale;")
    params = (f"__global const {vec} *x, long x_off, __global {vec} *y, long y_off, long inner, "
              f"__global const {vec} *tw, {real} sgn, {real} scale")
    return (head + f"#define N {n}L\n__kernel __attribute__((reqd_work_group_size({group}, 1, 1)))"
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
    """A length-n complex transform of one dtype on one device, direction given per call."""

    def __init__(self, device, n: int, d: np.dtype):
        self.device, self.n, self.d = device, n, d
        self.radices = factor(n)
        self.bluestein = None
        self._post: dict = {}  # Bluestein's output chirp times the norm, per (sign, scale)
        if self.radices is None:
            m = 1 << (2 * n - 2).bit_length()
            self.bluestein = {sign: self._chirps(sign, m) for sign in (FORWARD, INVERSE)}
            self.inner_plan = plan(device, m, d)
            return
        roots = np.exp(2j * np.pi * np.arange(n) / n).astype(d)
        self.twiddles = device.upload(roots)
        self.local = 2 * n * d.itemsize <= device.local_mem // 2
        self.group = device.group_size(max(1, n // min(self.radices or [1])))

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

    def run(self, x, axis: int, sign: float, scale: float):
        """A new array: the transform of x along axis, times scale."""
        out = self.device.empty(x.shape, self.d)
        if out.size == 0:
            return out
        inner = math.prod(x.shape[axis + 1:])
        rows = x.size // self.n
        if self.bluestein is not None:
            self._bluestein(x, out, inner, rows, sign, scale)
        else:
            self._stockham(x, out, inner, rows, sign, scale)
        return out

    def _real(self, value):
        return (np.float64 if self.d == dt.complex128 else np.float32)(value)

    def _stockham(self, x, out, inner, rows, sign, scale):
        dev, n, d = self.device, self.n, self.d
        xo, yo = x.offset // d.itemsize, out.offset // d.itemsize
        if self.local:
            kernel = dev.build("fft", local_source(d, n, self.radices, self.group), "fft")
            dev.run(kernel, (rows * self.group,), (self.group,), x.base_data, np.int64(xo),
                    out.base_data, np.int64(yo), np.int64(inner), self.twiddles.base_data,
                    self._real(sign), self._real(scale))
            return
        temps = [dev.empty(x.shape, d), dev.empty(x.shape, d)]
        src, ns = x, 1
        for i, r in enumerate(self.radices):
            last = i == len(self.radices) - 1
            dst = out if last else temps[i % 2]
            kernel = dev.build("fft", global_source(d, n, r), "fft")
            dev.run_items(kernel, rows * (n // r), src.base_data,
                    np.int64(src.offset // d.itemsize), dst.base_data,
                    np.int64(dst.offset // d.itemsize), np.int64(inner),
                    self.twiddles.base_data, self._real(sign),
                    self._real(scale if last else 1.0), np.int64(ns))
            src, ns = dst, ns * r

    def _bluestein(self, x, out, inner, rows, sign, scale):
        dev, n, d = self.device, self.n, self.d
        chirp, filt, c = self.bluestein[sign]
        m = self.inner_plan.n
        post = self._post.get((sign, scale))
        if post is None:
            post = self._post[(sign, scale)] = dev.upload((c * scale).astype(d))
        work = dev.empty((rows, m), d)
        kernel = dev.build("fft", chirp_source(d), "chirp")

        def step(src, s_n, s_inner, dst, d_n, d_inner, vec, valid):
            dev.run_items(kernel, rows * d_n, src.base_data,
                    np.int64(src.offset // d.itemsize), np.int64(s_n), np.int64(s_inner),
                    dst.base_data, np.int64(dst.offset // d.itemsize), np.int64(d_n),
                    np.int64(d_inner), vec.base_data, np.int64(valid))

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


def transform(device, x, axes, sign: float, norm):
    """Complex transform of x along each of axes in turn (last-axis ones by VkFFT if enabled)."""
    for a in axes:
        n = x.shape[a]
        scale = _scale(n, norm, sign == INVERSE)
        if a == x.ndim - 1 and n > 1 and x.size and device.use_vkfft and vkfft.available():
            x = vkfft.run(device, x, sign, scale)
        else:
            x = plan(device, n, x.dtype).run(x, a, sign, scale)
    return x


@kernels.register("fftn", supported("fftn"))
def fftn(device, x, *, axes, norm=None):
    """N-d forward DFT over axes."""
    return transform(device, x, [a % x.ndim for a in axes], FORWARD, norm)


@kernels.register("ifftn", supported("ifftn"))
def ifftn(device, x, *, axes, norm=None):
    """N-d inverse DFT over axes."""
    return transform(device, x, [a % x.ndim for a in axes], INVERSE, norm)


@kernels.register("rfftn", supported("rfftn"))
def rfftn(device, x, *, axes, norm=None):
    """Real-input transform: complex transform of the last axis, kept to n//2 + 1, then the rest."""
    axes = [a % x.ndim for a in axes]
    cd = dt.complex_dtype(x.dtype)
    z = map_arrays(device, "rfftn", f"{cltypes.cprefix(cd)}_new(a0, 0)", [x], cd)
    last = axes[-1]
    z = transform(device, z, [last], FORWARD, norm)
    bounds = [(0, 1, n) for n in z.shape]
    bounds[last] = (0, 1, x.shape[last] // 2 + 1)
    z = slice_(device, z, bounds=bounds)
    return transform(device, z, axes[:-1], FORWARD, norm)


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


@kernels.register("irfftn", supported("irfftn"))
def irfftn(device, x, *, axes, n, norm=None):
    """Inverse of rfftn: inverse transforms of the other axes, then the Hermitian last axis."""
    axes = [a % x.ndim for a in axes]
    last = axes[-1]
    z = transform(device, x, axes[:-1], INVERSE, norm)
    shape = list(z.shape)
    shape[last] = n
    full = device.empty(shape, z.dtype)
    inner = math.prod(shape[last + 1:])
    rows = full.size // n
    if rows:
        kernel = device.build("irfftn", hermitian_source(z.dtype), "hermitian")
        device.run_items(kernel, rows * n, z.base_data, np.int64(z.offset // z.dtype.itemsize),
                         np.int64(z.shape[last]), full.base_data, np.int64(n), np.int64(inner))
    full = transform(device, full, [last], INVERSE, norm)
    return map_arrays(device, "irfftn", "a0.real", [full], ops.spec("irfftn").meta(x, axes=axes,
                      n=n, norm=norm)[1])


