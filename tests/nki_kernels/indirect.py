"""Indirect DMAs (rows chosen at run time by index data), written for loopsim's tests in the
2026 NKI idioms: a token gather by ``vector_offset=``, an expert's weight slab chosen by a
``scalar_offset=`` tile read from a table of experts, and an indirect pattern that is no box."""

import nki
import nki.isa as nisa
import nki.language as nl


@nki.jit
def token_gather(table, ids):
    """Per block of 128 tokens: their ids (128, 1) loaded, their rows of ``table`` gathered by
    one indirect DMA, scaled on chip twice (the gathered tile read twice, loaded once), stored."""
    n, h = table.shape
    out = nl.ndarray((ids.shape[0], h), dtype=table.dtype, buffer=nl.shared_hbm)
    for b in nl.affine_range(ids.shape[0] // 128):
        idx = nl.ndarray((128, 1), dtype=ids.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=idx, src=ids[nl.ds(b * 128, 128), :])
        rows = nl.ndarray((128, h), dtype=table.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=rows, src=table.ap(pattern=[[h, 128], [1, h]], offset=0,
                                             vector_offset=idx, indirect_dim=0))
        once = nl.ndarray((128, h), dtype=table.dtype, buffer=nl.sbuf)
        nisa.activation(dst=once, op=nl.exp, data=rows)
        twice = nl.ndarray((128, h), dtype=table.dtype, buffer=nl.sbuf)
        nisa.tensor_tensor(dst=twice, data1=once, data2=rows, op=nl.multiply)
        nisa.dma_copy(dst=out[nl.ds(b * 128, 128), :], src=twice)
    return out


@nki.jit
def expert_slab(w, expert_of):
    """Per block: its expert's id (a (1, 1) tile from ``expert_of``), then that expert's
    (k, n) slab of ``w`` [E, k, n] read in two column halves by ``scalar_offset=`` DMAs, stored
    side by side."""
    e, k, n = w.shape
    nb = expert_of.shape[0]
    out = nl.ndarray((nb * k, n), dtype=w.dtype, buffer=nl.shared_hbm)
    for b in nl.affine_range(nb):
        eid = nl.ndarray((1, 1), dtype=expert_of.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=eid, src=expert_of.ap(pattern=[[1, 1], [1, 1]], offset=0, scalar_offset=b,
                                                indirect_dim=0))
        slab = nl.ndarray((k, n), dtype=w.dtype, buffer=nl.sbuf)
        for half in range(2):
            nisa.dma_copy(dst=slab[:, half * (n // 2):(half + 1) * (n // 2)],
                          src=w.ap(pattern=[[n, k], [1, n // 2]], offset=half * (n // 2),
                                   scalar_offset=eid, indirect_dim=0))
        nisa.dma_copy(dst=out[nl.ds(b * k, k), :], src=slab)
    return out


@nki.jit
def strided_gather(table, ids):
    """Every other column of the gathered rows: an indirect pattern that is no box."""
    n, h = table.shape
    out = nl.ndarray((128, h // 2), dtype=table.dtype, buffer=nl.shared_hbm)
    idx = nl.ndarray((128, 1), dtype=ids.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=idx, src=ids[0:128, :])
    rows = nl.ndarray((128, h // 2), dtype=table.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=rows, src=table.ap(pattern=[[h, 128], [2, h // 2]], offset=0,
                                         vector_offset=idx, indirect_dim=0))
    nisa.dma_copy(dst=out, src=rows)
    return out


@nki.jit
def token_scatter(x, ids):
    """x's 128 rows written to the rows of ``out`` that ``ids`` names (an indirect store)."""
    n, h = x.shape
    out = nl.ndarray((4 * n, h), dtype=x.dtype, buffer=nl.shared_hbm)
    idx = nl.ndarray((128, 1), dtype=ids.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=idx, src=ids[0:128, :])
    t = nl.ndarray((128, h), dtype=x.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=x[0:128, :])
    nisa.dma_copy(dst=out.ap(pattern=[[h, 128], [1, h]], offset=0, vector_offset=idx, indirect_dim=0),
                  src=t)
    return out


@nki.jit
def reshaped_gather(table, ids):
    """Rows gathered through a handle of another shape after the table was read: rows of 128
    elements, no dimension of the [256, 64] table."""
    out = nl.ndarray((128, 128), dtype=table.dtype, buffer=nl.shared_hbm)
    first = nl.ndarray((128, 64), dtype=table.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=first, src=table[0:128, :])
    idx = nl.ndarray((128, 1), dtype=ids.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=idx, src=ids[0:128, :])
    rows = nl.ndarray((128, 128), dtype=table.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=rows, src=table.reshape((128, 128)).ap(pattern=[[128, 128], [1, 128]], offset=0,
                                                             vector_offset=idx, indirect_dim=0))
    nisa.dma_copy(dst=out, src=rows)
    return out
