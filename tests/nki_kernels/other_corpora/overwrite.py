"""A row stored whole, then part of it rewritten from another op's value (the partial-RoPE
kernels of model code: the normalised head stored, its first columns stored again rotated)."""

import nki
import nki.isa as nisa
import nki.language as nl


@nki.jit
def store_then_rewrite(x, c):
    """x [128, 2 * 256] (tokens, heads x 256), c [128, 32] bf16; out [2, 128, 256] (heads,
    tokens, 256): per head h, y = 2 x[:, h] stored to out[h], then
    out[h, :, 0:32] = y[:, 0:32] * c + y[:, 32:64] * c (a rotation of a half)."""
    heads = x.shape[1] // 256
    out = nl.ndarray((heads, 128, 256), dtype=x.dtype, buffer=nl.shared_hbm)
    for h in nl.affine_range(heads):
        t = nl.ndarray((128, 256), dtype=x.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=t, src=x[:, nl.ds(h * 256, 256)])
        ct = nl.ndarray((128, 32), dtype=c.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=ct, src=c)
        y = nl.ndarray((128, 256), dtype=nl.float32, buffer=nl.sbuf)
        nisa.tensor_scalar(dst=y, data=t, op0=nl.multiply, operand0=2.0)
        nisa.dma_copy(dst=out[h, :, :], src=y)
        lo = nl.ndarray((128, 32), dtype=nl.float32, buffer=nl.sbuf)
        hi = nl.ndarray((128, 32), dtype=nl.float32, buffer=nl.sbuf)
        r = nl.ndarray((128, 32), dtype=nl.float32, buffer=nl.sbuf)
        nisa.tensor_tensor(dst=lo, data1=y[:, 0:32], data2=ct, op=nl.multiply)
        nisa.tensor_tensor(dst=hi, data1=y[:, 32:64], data2=ct, op=nl.multiply)
        nisa.tensor_tensor(dst=r, data1=lo, data2=hi, op=nl.add)
        nisa.dma_copy(dst=out[h, :, 0:32], src=r)
    return out
