"""Element-wise z = x + y over an SPMD launch grid, written for loopsim's tests in both API
styles. Each program instance owns one 128-row band of the tensors."""

import nki
import nki.isa as nisa
import nki.language as nl


@nki.jit
def add_lang(x, y):
    """Grid (R/128) x (C/TC): program (r, c) adds one 128 x TC tile (nl.load / nl.add / nl.store)."""
    R, C = x.shape
    TC = C // nl.num_programs(1)
    z = nl.ndarray((R, C), dtype=x.dtype, buffer=nl.shared_hbm)
    r = nl.program_id(0)
    c = nl.program_id(1)
    xt = nl.load(x[r * 128:(r + 1) * 128, c * TC:(c + 1) * TC])
    yt = nl.load(y[r * 128:(r + 1) * 128, c * TC:(c + 1) * TC])
    nl.store(z[r * 128:(r + 1) * 128, c * TC:(c + 1) * TC], value=nl.add(xt, yt))
    return z


@nki.jit
def add_isa(x, y, TC=2048):
    """Grid (R/128): program r walks its band in TC-column tiles (dma_copy / tensor_tensor)."""
    R, C = x.shape
    z = nl.ndarray((R, C), dtype=x.dtype, buffer=nl.shared_hbm)
    r = nl.program_id(0)
    rows = nl.ds(r * nl.tile_size.pmax, nl.tile_size.pmax)
    for c in nl.affine_range(C // TC):
        xt = nl.ndarray((nl.par_dim(128), TC), dtype=x.dtype, buffer=nl.sbuf)
        yt = nl.ndarray((nl.par_dim(128), TC), dtype=y.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=xt, src=x[rows, nl.ds(c * TC, TC)])
        nisa.dma_copy(dst=yt, src=y[rows, nl.ds(c * TC, TC)])
        zt = nl.ndarray((nl.par_dim(128), TC), dtype=x.dtype, buffer=nl.sbuf)
        nisa.tensor_tensor(dst=zt, data1=xt, data2=yt, op=nl.add)
        nisa.dma_copy(dst=z[rows, nl.ds(c * TC, TC)], src=zt)
    return z
