"""Kernels written for loopsim's tests in the idioms real NKI code uses where a loop index is a
Python value: lists and dicts of tiles indexed by loop variables, ``%`` buffer rotation, a branch
on the loop index, and a plain launcher function that builds the inputs and calls a kernel.
Shapes in the docstrings; the tests hold the hand counts."""

import nki
import nki.isa as nisa
import nki.language as nl

P = 128   # partitions per tile
F = 512   # free elements per tile


@nki.jit
def listed_matmul(lhsT, rhs):
    """C = lhsT.T @ rhs with the K x P column of lhsT kept in a Python list per m and the K x F
    column of rhs in a dict keyed by k: each loaded once per m (lhsT) and once per (m, n) (rhs)."""
    K, M = lhsT.shape
    N = rhs.shape[1]
    out = nl.ndarray((M, N), dtype=lhsT.dtype, buffer=nl.shared_hbm)
    for m in nl.affine_range(M // P):
        cols = []
        for k in nl.affine_range(K // P):
            t = nl.ndarray((P, P), dtype=lhsT.dtype, buffer=nl.sbuf)
            nisa.dma_copy(dst=t, src=lhsT[k * P:(k + 1) * P, m * P:(m + 1) * P])
            cols.append(t)
        for n in nl.affine_range(N // F):
            by_k = {}
            for k in range(K // P):
                b = nl.ndarray((P, F), dtype=rhs.dtype, buffer=nl.sbuf)
                nisa.dma_copy(dst=b, src=rhs[k * P:(k + 1) * P, n * F:(n + 1) * F])
                by_k[k] = b
            acc = nl.ndarray((P, F), dtype=nl.float32, buffer=nl.psum)
            for k in nl.affine_range(K // P):
                nisa.nc_matmul(dst=acc, stationary=cols[k], moving=by_k[k])
            res = nl.ndarray((P, F), dtype=lhsT.dtype, buffer=nl.sbuf)
            nisa.tensor_copy(dst=res, src=acc)
            nisa.dma_copy(dst=out[m * P:(m + 1) * P, n * F:(n + 1) * F], src=res)
    return out


@nki.jit
def rotated_copy(x):
    """out = x, row tile by row tile, through two SBUF buffers used in turn (``k % 2``)."""
    R, C = x.shape
    out = nl.ndarray((R, C), dtype=x.dtype, buffer=nl.shared_hbm)
    bufs = [nl.ndarray((P, C), dtype=x.dtype, buffer=nl.sbuf) for _ in range(2)]
    for k in nl.affine_range(R // P):
        b = bufs[k % 2]
        nisa.dma_copy(dst=b, src=x[k * P:(k + 1) * P, :])
        nisa.dma_copy(dst=out[k * P:(k + 1) * P, :], src=b)
    return out


@nki.jit
def first_tile_scaled(x):
    """out = x, except that the first row tile is exponentiated (``if k == 0``)."""
    R, C = x.shape
    out = nl.ndarray((R, C), dtype=x.dtype, buffer=nl.shared_hbm)
    for k in nl.affine_range(R // P):
        t = nl.load(x[k * P:(k + 1) * P, :])
        if k == 0:
            t = nl.exp(t)
        nl.store(out[k * P:(k + 1) * P, :], value=t)
    return out


def launch(rows=512, cols=1024):
    """A launcher, not a kernel: it builds its HBM inputs and calls ``rotated_copy``."""
    x = nl.ndarray((rows, cols), dtype=nl.bfloat16, buffer=nl.shared_hbm)
    return rotated_copy(x)


def _widest_tile(cols, widest=F):
    """The widest tile width up to ``widest`` that divides ``cols``: a search loop that returns
    from inside (its iterations record nothing)."""
    for w in range(widest, 0, -1):
        if cols % w == 0:
            return w
    return 1


@nki.jit
def searched_copy(x):
    """out = x in row tiles of P rows and the widest column tile that divides the columns."""
    R, C = x.shape
    W = _widest_tile(C)
    out = nl.ndarray((R, C), dtype=x.dtype, buffer=nl.shared_hbm)
    for r in nl.affine_range(R // P):
        for c in nl.affine_range(C // W):
            t = nl.load(x[r * P:(r + 1) * P, c * W:(c + 1) * W])
            nl.store(out[r * P:(r + 1) * P, c * W:(c + 1) * W], value=t)
    return out


@nki.jit
def cast_copy(x, dt=nl.bfloat16):
    """out = x cast to ``dt`` (an NKI dtype argument: ``--kwarg dt=float32``)."""
    R, C = x.shape
    out = nl.ndarray((R, C), dtype=dt, buffer=nl.shared_hbm)
    for r in nl.affine_range(R // P):
        t = nl.ndarray((P, C), dtype=dt, buffer=nl.sbuf)
        nisa.dma_copy(dst=t, src=x[r * P:(r + 1) * P, :])
        nisa.dma_copy(dst=out[r * P:(r + 1) * P, :], src=t)
    return out


@nki.jit
def first_program_exp(x):
    """An SPMD kernel whose programs each copy their share of rows; program 0 also
    exponentiates (a branch on ``nl.program_id``)."""
    R, C = x.shape
    out = nl.ndarray((R, C), dtype=x.dtype, buffer=nl.shared_hbm)
    pid = nl.program_id(0)
    rows = R // nl.num_programs(0)
    for r in nl.affine_range(rows // P):
        lo = pid * rows + r * P
        t = nl.load(x[lo:lo + P, :])
        if pid == 0:
            t = nl.exp(t)
        nl.store(out[lo:lo + P, :], value=t)
    return out
