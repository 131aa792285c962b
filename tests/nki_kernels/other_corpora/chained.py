"""Idioms of NKI kernels written outside nki-samples/nki-library (model code: DeltaNet-style
recurrences, attention variants), written for loopsim's tests."""

import nki
import nki.isa as nisa
import nki.language as nl


@nki.jit
def chained_matmul(a, b, c):
    """out = (a^T b)^T-free chain: ab = a.T @ b in PSUM, copied to SBUF, then used as the
    stationary operand of a second matmul with c. a, b, c: [128, 128] fp32."""
    out = nl.ndarray((128, 128), dtype=nl.float32, buffer=nl.shared_hbm)
    at = nl.ndarray((128, 128), dtype=nl.float32, buffer=nl.sbuf)
    bt = nl.ndarray((128, 128), dtype=nl.float32, buffer=nl.sbuf)
    ct = nl.ndarray((128, 128), dtype=nl.float32, buffer=nl.sbuf)
    nisa.dma_copy(dst=at, src=a)
    nisa.dma_copy(dst=bt, src=b)
    nisa.dma_copy(dst=ct, src=c)
    ab_psum = nl.ndarray((128, 128), dtype=nl.float32, buffer=nl.psum)
    nisa.nc_matmul(dst=ab_psum, stationary=at, moving=bt)
    ab = nl.ndarray((128, 128), dtype=nl.float32, buffer=nl.sbuf)
    nisa.tensor_copy(dst=ab, src=ab_psum)
    abc_psum = nl.ndarray((128, 128), dtype=nl.float32, buffer=nl.psum)
    nisa.nc_matmul(dst=abc_psum, stationary=ab, moving=ct)
    res = nl.ndarray((128, 128), dtype=nl.float32, buffer=nl.sbuf)
    nisa.tensor_copy(dst=res, src=abc_psum)
    nisa.dma_copy(dst=out, src=res)
    return out


@nki.jit
def matmul_recurrence(a):
    """p = 1 * a (on chip), then three times p = a.T @ p (a loop-carried value, as a
    power-doubling solve does): each round's matmul reads the previous round's result.
    a: [128, 128] fp32."""
    out = nl.ndarray((128, 128), dtype=nl.float32, buffer=nl.shared_hbm)
    at = nl.ndarray((128, 128), dtype=nl.float32, buffer=nl.sbuf)
    nisa.dma_copy(dst=at, src=a)
    p = nl.ndarray((128, 128), dtype=nl.float32, buffer=nl.sbuf)
    nisa.tensor_scalar(dst=p, data=at, op0=nl.multiply, operand0=1.0)  # made on chip
    for _round in nl.sequential_range(3):
        p_psum = nl.ndarray((128, 128), dtype=nl.float32, buffer=nl.psum)
        nisa.nc_matmul(dst=p_psum, stationary=at, moving=p)
        nisa.tensor_copy(dst=p, src=p_psum)
    nisa.dma_copy(dst=out, src=p)
    return out


@nki.jit
def long_chain(a, rounds=40):
    """p = a, then ``rounds`` times p = a.T @ p, unrolled by Python (a list, not a range): each
    matmul a statement of its own. a: [128, 128] fp32."""
    out = nl.ndarray((128, 128), dtype=nl.float32, buffer=nl.shared_hbm)
    at = nl.ndarray((128, 128), dtype=nl.float32, buffer=nl.sbuf)
    nisa.dma_copy(dst=at, src=a)
    p = at
    for _ in [0] * rounds:
        ps = nl.ndarray((128, 128), dtype=nl.float32, buffer=nl.psum)
        nisa.nc_matmul(dst=ps, stationary=at, moving=p)
        p = nl.ndarray((128, 128), dtype=nl.float32, buffer=nl.sbuf)
        nisa.tensor_copy(dst=p, src=ps)
    nisa.dma_copy(dst=out, src=p)
    return out
