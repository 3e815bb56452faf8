"""Scientific workloads on hal Tensors: FFT, KdV, 2-D Navier-Stokes, multigrid, MPI.

Every solver runs on any backend (`device=`); the numbers are hal ops, setup constants
are computed on the host once. Each module holds one workload:

- `kdv`: u_t + 6 u u_x + u_xxx = 0, Fourier ETDRK4, against the exact 2-soliton; the
  residual of the exact solution by autodiff (`kdv.residual`).
- `navier_stokes`: 2-D vorticity, rfft2 pseudo-spectral, 2/3 dealiasing, IF-RK4.
- `multigrid`: geometric V-cycles for the 2-D Poisson problem.
- `distributed`, `schwarz`, `mpi_run`: row-block domain decomposition over mpi4py
  (Jacobi, distributed multigrid, additive-Schwarz CG); `mpiexec -n P python -m
  frontends.science.mpi_run CASE` (`--serve` runs it per command, for the `science`
  benchmark suite to time from outside).
- `peers`: the same algorithms in numpy, scipy.fft, pyfftw, torch and jax (optional).

Their figures side by side come from `hal bench --suite science` and its report.

Unstable time steps raise `UnstableError` (a hal.HalError); sizes a method cannot take
raise hal.ShapeError naming the workload and a size that works.
"""

from .checks import UnstableError

__all__ = ["UnstableError"]
