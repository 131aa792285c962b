"""Kernels in the older NKI style (neuronxcc imports, instructions that return their result,
``res[...] += nisa.nc_matmul(a, b)``, nl.mgrid index tiles with masks), written for loopsim's tests."""

import neuronxcc.nki as nki
import neuronxcc.nki.isa as nisa
import neuronxcc.nki.language as nl


@nki.jit
def matmul_gelu(lhsT, rhs):
    """y = gelu(lhsT.T @ rhs), one 128-row band of y per m, all N columns at once (N <= 512)."""
    K, M = lhsT.shape
    N = rhs.shape[1]
    y = nl.ndarray((M, N), dtype=lhsT.dtype, buffer=nl.shared_hbm)
    for m in nl.affine_range(M // 128):
        h = nl.zeros((128, N), nl.float32, buffer=nl.psum)
        for k in nl.affine_range(K // 128):
            a = nl.load(lhsT[k * 128:(k + 1) * 128, m * 128:(m + 1) * 128])
            b = nl.load(rhs[k * 128:(k + 1) * 128, :])
            h[...] += nisa.nc_matmul(a, b)
        nl.store(y[m * 128:(m + 1) * 128, :], value=nisa.activation(op=nl.gelu, data=h))
    return y


@nki.jit
def ragged_exp(x):
    """exp of a tensor whose row count is not a multiple of 128: the last tile is masked."""
    R, C = x.shape
    out = nl.ndarray((R, C), dtype=x.dtype, buffer=nl.shared_hbm)
    ix = nl.mgrid[0:128, 0:C]
    for r in nl.affine_range((R + 127) // 128):
        t = nl.load(x[r * 128 + ix.p, ix.x], mask=(r * 128 + ix.p < R))
        nl.store(out[r * 128 + ix.p, ix.x], value=nl.exp(t), mask=(r * 128 + ix.p < R))
    return out
