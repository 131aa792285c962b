"""Kernels written for loopsim's tests in idioms the production NKI library uses (2026 API,
``import nki``): HBM bytes viewed with another element size, an indirect read whose row stride is
not the tensor's. Each test states its hand count."""

import nki
import nki.isa as nisa
import nki.language as nl


@nki.jit
def tail_index(x):
    """x [T, H + 2] bf16: H values then one int32 per row in its last two bf16 columns. The int32
    column is read through ``.ap(dtype=nl.int32)`` (the tensor seen as int32 [T, H/2 + 1]), then
    the values through bf16 handles: an access pattern and a slice."""
    T, HP = x.shape
    H = HP - 2
    out = nl.ndarray((T, H), dtype=x.dtype, buffer=nl.shared_hbm)
    ids = nl.ndarray((T, 1), dtype=nl.int32, buffer=nl.sbuf)
    nisa.dma_copy(dst=ids, src=x.ap(pattern=[[HP // 2, T], [1, 1]], offset=H // 2, dtype=nl.int32))
    body = nl.ndarray((T, H), dtype=x.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=body, src=x.ap(pattern=[[HP, T], [1, H]], offset=0))
    again = nl.ndarray((T, H), dtype=x.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=again, src=x[0:T, 0:H])
    total = nl.ndarray((T, H), dtype=x.dtype, buffer=nl.sbuf)
    nisa.tensor_tensor(dst=total, data1=body, data2=again, op=nl.add)
    nisa.dma_copy(dst=out, src=total)
    return out


@nki.jit
def gather_by_tail_index(x):
    """The rows of x [T, H + 2] bf16 picked by the int32 in each row's tail, read with the row
    stride H (the values' width, not the tensor's H + 2): the rows are data."""
    T, HP = x.shape
    H = HP - 2
    out = nl.ndarray((T, H), dtype=x.dtype, buffer=nl.shared_hbm)
    ids = nl.ndarray((T, 1), dtype=nl.int32, buffer=nl.sbuf)
    nisa.dma_copy(dst=ids, src=x.ap(pattern=[[HP // 2, T], [1, 1]], offset=H // 2, dtype=nl.int32))
    rows = nl.ndarray((T, H), dtype=x.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=rows, src=x.ap(pattern=[[H, T], [1, H]], offset=0, vector_offset=ids,
                                     indirect_dim=0))
    nisa.dma_copy(dst=out, src=rows)
    return out


@nki.jit
def window_matmul(x, w):
    """A depthwise 1-D convolution as an implicit GEMM: x [C, L] bf16, w [C, K] taps. Per
    channel c, an im2col tile [K, L - K + 1] (element (s, q) = x[c, s + q]) loaded by one DMA
    of overlapping windows, contracted on the Tensor Engine with w[c] as a [K, 1] stationary."""
    C, L = x.shape
    _, K = w.shape
    Q = L - K + 1
    out = nl.ndarray((C, Q), dtype=x.dtype, buffer=nl.shared_hbm)
    for c in nl.affine_range(C):
        taps = nl.ndarray((K, 1), dtype=w.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=taps, src=w.ap(pattern=[[1, K], [1, 1]], offset=c * K))
        win = nl.ndarray((K, Q), dtype=x.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=win, src=x.ap(pattern=[[1, K], [1, Q]], offset=c * L))
        ps = nl.ndarray((1, Q), dtype=nl.float32, buffer=nl.psum)
        nisa.nc_matmul(dst=ps, stationary=taps, moving=win)
        res = nl.ndarray((1, Q), dtype=x.dtype, buffer=nl.sbuf)
        nisa.tensor_copy(dst=res, src=ps)
        nisa.dma_copy(dst=out.ap(pattern=[[Q, 1], [1, Q]], offset=c * Q), src=res)
    return out


@nki.jit
def drained_psum(a, b):
    """Attention-backward's shape: s = a.T @ b in PSUM, e = exp(s) on chip, then a.T @ e into
    PSUM drained by ``tensor_tensor(acc, acc, psum, add)`` into a zeroed SBUF sum, stored."""
    K, M = a.shape
    _, N = b.shape
    out = nl.ndarray((M, N), dtype=b.dtype, buffer=nl.shared_hbm)
    at = nl.ndarray((K, M), dtype=a.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=at, src=a)
    bt = nl.ndarray((K, N), dtype=b.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=bt, src=b)
    s = nl.ndarray((M, N), dtype=nl.float32, buffer=nl.psum)
    nisa.nc_matmul(dst=s, stationary=at, moving=bt)
    e = nl.ndarray((M, N), dtype=b.dtype, buffer=nl.sbuf)
    nisa.activation(dst=e, op=nl.exp, data=s)
    acc = nl.ndarray((M, N), dtype=nl.float32, buffer=nl.sbuf)
    nisa.memset(acc, 0.0)
    ps = nl.ndarray((M, N), dtype=nl.float32, buffer=nl.psum)
    nisa.nc_matmul(dst=ps, stationary=at, moving=e)
    nisa.tensor_tensor(dst=acc, data1=acc, data2=ps, op=nl.add)
    res = nl.ndarray((M, N), dtype=b.dtype, buffer=nl.sbuf)
    nisa.tensor_copy(dst=res, src=acc)
    nisa.dma_copy(dst=out, src=res)
    return out
