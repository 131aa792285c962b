"""A matmul operand placed by a copy through another shape (a [P, 4, 32] tile read as [P, 128]),
as production attention kernels lay out q and k on chip."""

import nki
import nki.isa as nisa
import nki.language as nl


@nki.jit
def permuted_operand_matmul(x, w):
    """x [128, 4, 32], w [128, 256] bf16: xs = x's tile read as [128, 128] (a reshaped view);
    out = xs.T @ w."""
    out = nl.ndarray((128, 256), dtype=w.dtype, buffer=nl.shared_hbm)
    xt = nl.ndarray((128, 4, 32), dtype=x.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=xt, src=x)
    xs = nl.ndarray((128, 128), dtype=x.dtype, buffer=nl.sbuf)
    nisa.tensor_copy(dst=xs, src=xt.reshape((128, 128)))
    wt = nl.ndarray((128, 256), dtype=w.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=wt, src=w)
    ps = nl.ndarray((128, 256), dtype=nl.float32, buffer=nl.psum)
    nisa.nc_matmul(dst=ps, stationary=xs, moving=wt)
    res = nl.ndarray((128, 256), dtype=w.dtype, buffer=nl.sbuf)
    nisa.tensor_copy(dst=res, src=ps)
    nisa.dma_copy(dst=out, src=res)
    return out
