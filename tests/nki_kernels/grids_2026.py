"""Kernels written for loopsim's tests in the idioms of the late-2026 NKI language: tile grids,
block grids, stream buffers, compiled loops (nl.fori_loop, nl.if_else) and per-kernel compile
configuration. Each test states its hand count."""

import nki
import nki.collectives as ncc
import nki.isa as nisa
import nki.language as nl
from nki.compiler import Allocation, CompileConfig


@nki.jit
def grid_scale(x):
    """Each (128, 256) tile of x in, times 3 on the Vector Engine, out."""
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    xg = nl.tiles(x, tile_shape=(128, 256))
    og = nl.tiles(out, tile_shape=(128, 256))
    for r in range(xg.shape[0]):
        for c in range(xg.shape[1]):
            t = nl.empty_like(xg[r, c], buffer=nl.sbuf)
            nisa.dma_copy(dst=t.data, src=xg[r, c].data)
            nisa.tensor_scalar(dst=t.data, data=t.data, op0=nl.multiply, operand0=3.0)
            nisa.dma_copy(dst=og[r, c].data, src=t.data)
    return out


@nki.jit
def block_copy(x):
    """Blocks of 2 x 1 tiles of (128, 256); the last block row and tile column are partial."""
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    xb = nl.blocks(x, tile_shape=(128, 256), block_shape=(2, 1))
    ob = nl.blocks(out, tile_shape=(128, 256), block_shape=(2, 1))
    for i in range(xb.shape[0]):
        for j in range(xb.shape[1]):
            blk = nl.empty_like(xb[i, j], buffer=nl.sbuf)
            nisa.dma_copy(dst=blk.data, src=xb[i, j].data)
            nisa.dma_copy(dst=ob[i, j].data, src=blk.data)
    return out


@nki.jit
def grid_matmul(lhs_t, rhs):
    """out = lhs_t.T @ rhs, K walked in tiles of 128 through two tile grids, PSUM accumulated."""
    k_total, m = lhs_t.shape
    n = rhs.shape[1]
    lg = nl.tiles(lhs_t, tile_shape=(128, m))
    rg = nl.tiles(rhs, tile_shape=(128, n))
    acc = nl.alloc_tiles(tile_shape=(m, n), element_shape=(m, n), buffer=nl.psum,
                         dtype=nl.float32)
    for k in range(lg.shape[0]):
        a = nl.empty_like(lg[k, 0], buffer=nl.sbuf)
        b = nl.empty_like(rg[k, 0], buffer=nl.sbuf)
        nisa.dma_copy(dst=a.data, src=lg[k, 0].data)
        nisa.dma_copy(dst=b.data, src=rg[k, 0].data)
        nisa.nc_matmul(dst=acc.data, stationary=a.data, moving=b.data)
    res = nl.ndarray((m, n), dtype=lhs_t.dtype, buffer=nl.sbuf)
    nisa.tensor_copy(dst=res, src=acc.data)
    out = nl.ndarray((m, n), dtype=lhs_t.dtype, buffer=nl.shared_hbm)
    nisa.dma_copy(dst=out, src=res)
    return out


@nki.jit
def stream_copy(x, slots=2):
    """x streamed through `slots` rotating SBUF slots, one (128, cols) row band per step."""
    rows, cols = x.shape
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    xg = nl.tiles(x, tile_shape=(128, cols))
    og = nl.tiles(out, tile_shape=(128, cols))
    pool = nl.alloc_stream_buffers(xg, buffer=nl.sbuf, dim=0, num_slots=slots)
    for s in range(xg.shape[0]):
        nisa.dma_copy(dst=pool[s].data, src=xg[s, 0].data)
        nisa.dma_copy(dst=og[s, 0].data, src=pool[s].data)
    return out


@nki.jit
def stream_slabs(x):
    """A (S, 128, F) tensor streamed slab by slab through three slots, each slab exp'd."""
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    pool = nl.alloc_stream_buffers(x, buffer=nl.sbuf, dim=0, num_slots=3)
    for s in range(x.shape[0]):
        slab = pool[s]
        nisa.dma_copy(dst=slab, src=x[s])
        nisa.activation(dst=slab, op=nl.exp, data=slab)
        nisa.dma_copy(dst=out[s], src=slab)
    return out


@nki.jit
def stream_prefetch(x):
    """A software pipeline: step s + 1 is loaded before step s is computed and stored."""
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    xg = nl.tiles(x, tile_shape=(128, x.shape[1]))
    og = nl.tiles(out, tile_shape=(128, x.shape[1]))
    n = xg.shape[0]
    pool = nl.alloc_stream_buffers(xg, buffer=nl.sbuf, dim=0, num_slots=2)
    nisa.dma_copy(dst=pool[0].data, src=xg[0, 0].data)
    for s in range(n):
        if s + 1 < n:
            nisa.dma_copy(dst=pool[s + 1].data, src=xg[s + 1, 0].data)
        cur = pool[s].data
        nisa.activation(dst=cur, op=nl.exp, data=cur)
        nisa.dma_copy(dst=og[s, 0].data, src=cur)
    return out


@nki.jit
def fori_rows(x):
    """Row bands of 128 copied by a compiled loop's body."""
    rows, cols = x.shape
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)

    def body(i):
        t = nl.ndarray((128, cols), dtype=x.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=t, src=x[nl.ds(i * 128, 128), :])
        nisa.dma_copy(dst=out[nl.ds(i * 128, 128), :], src=t)

    nl.fori_loop(0, rows // 128, body)
    return out


@nki.jit
def fori_register_bound(x):
    """A compiled loop whose upper bound is a register holding a constant moved in (3)."""
    cols = x.shape[1]
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    n = nisa.register_alloc()
    nisa.register_move(n, 3)

    def body(i):
        t = nl.ndarray((128, cols), dtype=x.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=t, src=x[nl.ds(i * 128, 128), :])
        nisa.dma_copy(dst=out[nl.ds(i * 128, 128), :], src=t)

    nl.fori_loop(0, n, body)
    return out


@nki.jit
def if_else_scale(x, double=True):
    """One tile, scaled or negated by a compile-time choice through nl.if_else."""
    t = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=x)

    def scale():
        nisa.tensor_scalar(dst=t, data=t, op0=nl.multiply, operand0=2.0)

    def negate():
        nisa.activation(dst=t, op=nl.exp, data=t)

    nl.if_else(double, scale, negate)
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    nisa.dma_copy(dst=out, src=t)
    return out


@nki.jit(compile_config=CompileConfig(allocation=Allocation.LINEAR, prefetch_auto=True))
def configured_copy(x):
    """A copy compiled with NKI's own allocation and automatic prefetch."""
    rows, cols = x.shape
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    for i in range(rows // 128):
        t = nl.ndarray((128, cols), dtype=x.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=t, src=x[nl.ds(i * 128, 128), :])
        nisa.dma_copy(dst=out[nl.ds(i * 128, 128), :], src=t)
    return out


@nki.jit
def while_flag(flag, x):
    """Exp the tile while a flag read from HBM says so (nl.while_loop on a register)."""
    f = nl.ndarray((1, 1), dtype=nl.int32, buffer=nl.sbuf)
    nisa.dma_copy(dst=f, src=flag)
    go = nisa.register_alloc(f)
    t = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=x)

    def body(cond):
        nisa.activation(dst=t, op=nl.exp, data=t)
        return nisa.register_alloc(f)

    nl.while_loop(go, body)
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    nisa.dma_copy(dst=out, src=t)
    return out


@nki.jit
def view_methods(x):
    """Slabs picked with select / slice+squeeze_dim; the first half of each row band stored."""
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    for s in range(x.shape[0]):
        t = nl.ndarray(x.shape[1:], dtype=x.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=t, src=x.select(0, s))
        u = nl.ndarray(x.shape[1:], dtype=x.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=u.expand_dim(0), src=x.slice(0, s, s + 1))
        nisa.tensor_tensor(dst=t, data1=t, data2=u, op=nl.add)
        half = x.shape[2] // 2
        nisa.dma_copy(dst=out.select(0, s).slice(1, 0, half), src=t.slice(1, 0, half))
    return out


@nki.jit
def branch_on_flag(flag, x):
    """A branch chosen on the device by a flag read from HBM (nisa.scalar_load, nl.if_else)."""
    flag_sb = nl.ndarray((1, 1), dtype=nl.int32, buffer=nl.sbuf)
    nisa.dma_copy(dst=flag_sb, src=flag)
    t = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=x)

    def hot():
        nisa.tensor_scalar(dst=t, data=t, op0=nl.multiply, operand0=4.0)

    def cold():
        nisa.activation(dst=t, op=nl.exp, data=t)

    nl.if_else(nisa.scalar_load(flag_sb) != 0, hot, cold)
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    nisa.dma_copy(dst=out, src=t)
    return out


@nki.jit
def language_views(x, col):
    """x loaded transposed by nl.load_transpose2d; a column broadcast by nl.broadcast_to."""
    t = nl.load_transpose2d(x)
    c = nl.load(col)
    s = nl.add(t, nl.broadcast_to(c, t.shape))
    out = nl.ndarray(t.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    nl.store(nl.expand_dims(out, 0)[0], s)
    return out


@nki.jit
def scatter_then_exchange(x):
    """Four ranks reduce-scatter a (512, 256) tile by rows, then exchange their quarter all-to-all."""
    ranks = ncc.ReplicaGroup([[0, 1, 2, 3]])
    t = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=x)
    part = nl.ndarray((x.shape[0] // 4, x.shape[1]), dtype=x.dtype, buffer=nl.sbuf)
    ncc.reduce_scatter([t], [part], ranks, 0, nl.add)
    mixed = nl.ndarray(part.shape, dtype=x.dtype, buffer=nl.sbuf)
    ncc.all_to_all(srcs=[part], dsts=[mixed], replica_group=ranks, collective_dim=0)
    out = nl.ndarray(part.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    nisa.dma_copy(dst=out, src=mixed)
    return out


@nki.jit
def streamed_matmul(lhs_t, rhs, slots=2):
    """out = lhs_t.T @ rhs with both operands' K tiles streamed through `slots` rotating slots."""
    m, n = lhs_t.shape[1], rhs.shape[1]
    lg = nl.tiles(lhs_t, tile_shape=(128, m))
    rg = nl.tiles(rhs, tile_shape=(128, n))
    lhs_pool = nl.alloc_stream_buffers(lg, buffer=nl.sbuf, dim=0, num_slots=slots)
    rhs_pool = nl.alloc_stream_buffers(rg, buffer=nl.sbuf, dim=0, num_slots=slots)
    acc = nl.ndarray((m, n), dtype=nl.float32, buffer=nl.psum)
    for k in range(lg.shape[0]):
        nisa.dma_copy(dst=lhs_pool[k].data, src=lg[k, 0].data)
        nisa.dma_copy(dst=rhs_pool[k].data, src=rg[k, 0].data)
        nisa.nc_matmul(dst=acc, stationary=lhs_pool[k].data, moving=rhs_pool[k].data)
    res = nl.ndarray((m, n), dtype=lhs_t.dtype, buffer=nl.sbuf)
    nisa.tensor_copy(dst=res, src=acc)
    out = nl.ndarray((m, n), dtype=lhs_t.dtype, buffer=nl.shared_hbm)
    nisa.dma_copy(dst=out, src=res)
    return out


@nki.jit
def block_stream(x):
    """Blocks of 2 x 1 tiles of (128, 512) streamed through two slots, one DMA per block in; each
    tile of a block exp'd and stored on its own."""
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    xb = nl.blocks(x, tile_shape=(128, 512), block_shape=(2, 1))
    og = nl.tiles(out, tile_shape=(128, 512))
    pool = nl.alloc_stream_buffers(xb, buffer=nl.sbuf, dim=0, num_slots=2)
    for b in range(xb.shape[0]):
        slot = pool[b]
        nisa.dma_copy(dst=slot.data, src=xb[b, 0].data)
        inner = nl.tiles(slot)
        for t in range(inner.shape[0]):
            tile = inner[t, 0].data
            nisa.activation(dst=tile, op=nl.exp, data=tile)
            nisa.dma_copy(dst=og[2 * b + t, 0].data, src=tile)
    return out


@nki.jit
def stream_pipeline_epilogue(x):
    """A prologue loads slot 0; iteration s loads step s + 1 and computes step s; an epilogue
    computes the last step (no branch in the loop)."""
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    xg = nl.tiles(x, tile_shape=(128, x.shape[1]))
    og = nl.tiles(out, tile_shape=(128, x.shape[1]))
    n = xg.shape[0]
    pool = nl.alloc_stream_buffers(xg, buffer=nl.sbuf, dim=0, num_slots=2)
    nisa.dma_copy(dst=pool[0].data, src=xg[0, 0].data)
    for s in range(n - 1):
        nisa.dma_copy(dst=pool[s + 1].data, src=xg[s + 1, 0].data)
        nisa.activation(dst=pool[s].data, op=nl.exp, data=pool[s].data)
        nisa.dma_copy(dst=og[s, 0].data, src=pool[s].data)
    nisa.activation(dst=pool[n - 1].data, op=nl.exp, data=pool[n - 1].data)
    nisa.dma_copy(dst=og[n - 1, 0].data, src=pool[n - 1].data)
    return out
