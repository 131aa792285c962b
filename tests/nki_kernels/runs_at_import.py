"""A kernel file that runs its own test at import, outside ``if __name__ == "__main__"``, the way
contributed/pipelined_attention.py does: a numpy array cast to an NKI dtype (a string since NKI
0.2, so numpy refuses it) and the kernel called on it."""

import numpy as np

import nki
import nki.isa as nisa
import nki.language as nl


@nki.jit
def copy_rows(x):
    """HBM -> SBUF -> HBM in 128-row tiles."""
    rows, cols = x.shape
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    for i in nl.affine_range(rows // 128):
        t = nl.ndarray((128, cols), dtype=x.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=t, src=x[i * 128:(i + 1) * 128, :])
        nisa.dma_copy(dst=out[i * 128:(i + 1) * 128, :], src=t)
    return out


x = np.zeros((256, 512)).astype(nl.bfloat16)
copy_rows(x)


@nki.jit
def defined_after(x):
    return x
