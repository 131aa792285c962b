"""Kernels written for loopsim's tests in the idioms of the 2026 NKI API (``import nki``): access
patterns, reshapes, broadcasts, NKIObject configuration, NKI dtypes, isa constants, collectives and
instructions loopsim costs without a tensor of their own. Each test states its hand count."""

import numpy as np

import nki
import nki.collectives as ncc
import nki.isa as nisa
import nki.language as nl
from nki.isa import constants


class CopyCfg(nl.NKIObject):
    def __init__(self, tile_p: int, tile_f: int):
        self.tile_p = tile_p
        self.tile_f = tile_f


def _cfg_for_this_core():
    wide = nisa.get_nc_version() >= nisa.nc_version.gen3
    return CopyCfg(128, 512 if wide else 256)


@nki.jit
def ap_copy(x):
    """HBM -> SBUF -> HBM through .ap access patterns, 128-row blocks."""
    assert x.dtype == nl.bfloat16 and str(x.dtype) == "bfloat16"
    rows, cols = x.shape
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    for i in nl.affine_range(rows // 128):
        t = nl.ndarray((128, cols), dtype=x.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=t, src=x.ap(pattern=[[cols, 128], [1, cols]], offset=i * 128 * cols),
                      dge_mode=constants.dge_mode.hwdge)
        nisa.dma_copy(dst=out.ap(pattern=[[cols, 128], [1, cols]], offset=i * 128 * cols), src=t)
    return out


@nki.jit
def config_copy(x):
    """Tile width from an NKIObject config chosen by the core generation (gen3: 512)."""
    cfg = _cfg_for_this_core()
    rows, cols = x.shape
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    for i in nl.affine_range(rows // cfg.tile_p):
        for j in nl.affine_range(cols // cfg.tile_f):
            t = nl.ndarray((cfg.tile_p, cfg.tile_f), dtype=x.dtype, buffer=nl.sbuf)
            nisa.dma_copy(dst=t, src=x[nl.ds(i * cfg.tile_p, cfg.tile_p), nl.ds(j * cfg.tile_f, cfg.tile_f)])
            nisa.dma_copy(dst=out[nl.ds(i * cfg.tile_p, cfg.tile_p), nl.ds(j * cfg.tile_f, cfg.tile_f)], src=t)
    return out


@nki.jit
def bad_config(x):
    cfg = CopyCfg(128, 512, 3)
    return x


@nki.jit
def reshape_store(x):
    """A (P, F) tensor reshaped in HBM before use, its tile stored through an SBUF reshape."""
    p, a, b = x.shape
    flat = x.reshape((p, a * b))
    out = nl.ndarray((p, a, b), dtype=x.dtype, buffer=nl.shared_hbm)
    t = nl.ndarray((p, a * b), dtype=x.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=flat)
    nisa.dma_copy(dst=out, src=t.reshape((p, a, b)))
    return out


@nki.jit
def bias_broadcast(x, bias):
    """out = x + bias broadcast along the free axis (bias is one column)."""
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    xt = nl.load(x)
    bt = nl.load(bias)
    nl.store(out, value=nl.add(xt, bt.broadcast_to(xt.shape)))
    return out


@nki.jit
def identity_matmul(x):
    """A matmul against an identity placed in HBM with nl.shared_constant."""
    ident = nl.shared_constant(np.identity(128, dtype=np.int8), dtype=nl.bfloat16)
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    i_sb = nl.ndarray((128, 128), dtype=nl.bfloat16, buffer=nl.sbuf)
    nisa.dma_copy(dst=i_sb, src=ident)
    x_sb = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=x_sb, src=x)
    for j in nl.affine_range(x.shape[1] // 512):
        ps = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.psum)
        for k in nl.affine_range(x.shape[0] // 128):
            nisa.nc_matmul(dst=ps, stationary=i_sb[nl.ds(k * 128, 128), :],
                           moving=x_sb[nl.ds(k * 128, 128), nl.ds(j * 512, 512)])
        res = nl.ndarray((128, 512), dtype=x.dtype, buffer=nl.sbuf)
        nisa.tensor_copy(dst=res, src=ps)
        nisa.dma_copy(dst=out[:, nl.ds(j * 512, 512)], src=res)
    return out


@nki.jit
def loop_reduce_matmul(a, b):
    """Z[M, N] = A.T @ B with K in 2 blocks of 2 tiles; the block sums added in SBUF by
    nl.loop_reduce over the block loop."""
    K, M = a.shape
    _, N = b.shape
    z = nl.ndarray((M, N), dtype=a.dtype, buffer=nl.shared_hbm)
    z_sb = nl.ndarray((M, N), dtype=a.dtype, buffer=nl.sbuf)
    for k2 in nl.affine_range(K // 256):
        ps = nl.zeros((M, N), dtype=nl.float32, buffer=nl.psum)
        for k1 in nl.affine_range(2):
            at = nl.load(a[nl.ds(k2 * 256 + k1 * 128, 128), :])
            bt = nl.load(b[nl.ds(k2 * 256 + k1 * 128, 128), :])
            ps += nisa.nc_matmul(at, bt)
        z_sb[...] = nl.loop_reduce(ps, op=np.add, loop_indices=[k2], dtype=z.dtype)
    nl.store(z, value=z_sb)
    return z


@nki.jit
def row_softmax(x):
    """Per 512-column block: row max into a column of row_max, then exp(x - max) stored."""
    rows, cols = x.shape
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    row_max = nl.ndarray((128, cols // 512), dtype=nl.float32, buffer=nl.sbuf)
    for i in nl.affine_range(cols // 512):
        s = nl.load(x[:, nl.ds(i * 512, 512)])
        row_max[:, i] = nisa.tensor_reduce(np.max, data=s, axis=1, negate=True)
        rsum = nl.ndarray((128, 1), dtype=nl.float32, buffer=nl.sbuf)
        scaled = nisa.tensor_scalar_reduce(data=s, op0=np.multiply, operand0=1.0,
                                           reduce_op=np.add, reduce_res=rsum)
        p = nisa.activation(op=nl.exp, data=scaled, bias=row_max[:, i])
        nl.store(out[:, nl.ds(i * 512, 512)], value=p)
    return out


@nki.jit
def transpose_load(x):
    """A (256, 128) tensor read once, transposed by the DMA into a (128, 256) tile."""
    r, c = x.shape
    out = nl.ndarray((c, r), dtype=x.dtype, buffer=nl.shared_hbm)
    t = nl.ndarray((c, r), dtype=x.dtype, buffer=nl.sbuf)
    nisa.dma_transpose(dst=t, src=x)
    nisa.dma_copy(dst=out, src=t)
    return out


@nki.jit
def masked_copy(x):
    """An iota index tile (GpSimd) and a causal affine_select (GpSimd) on each 128 x 512 block."""
    rows, cols = x.shape
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    for i in nl.affine_range(rows // 128):
        t = nl.load(x[nl.ds(i * 128, 128), :])
        idx = nl.ndarray((128, cols), dtype=nl.int32, buffer=nl.sbuf)
        nisa.iota(dst=idx, pattern=[[1, cols]], offset=0, channel_multiplier=-1)
        sel = nl.ndarray((128, cols), dtype=x.dtype, buffer=nl.sbuf)
        nisa.affine_select(dst=sel, pattern=[[-1, cols]], offset=0, channel_multiplier=1,
                           on_true_tile=t, on_false_value=-9984.0)
        nl.store(out[nl.ds(i * 128, 128), :], value=sel)
    return out


@nki.jit
def exchange(x):
    """Each of two cores sends its tile to the other (sendrecv) and all-gathers a half."""
    half = nl.num_programs(axes=0)
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    t = nl.load(x)
    peer = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.sbuf)
    nisa.sendrecv(src=t, dst=peer, send_to_rank=1, recv_from_rank=1, pipe_id=0)
    gathered = nl.ndarray((128, x.shape[1] * half), dtype=x.dtype, buffer=nl.sbuf)
    ncc.all_gather(dsts=[gathered], srcs=[t], replica_group=ncc.ReplicaGroup([[0, 1]]),
                   collective_dim=1)
    nl.store(out, value=peer)
    both = nl.ndarray(gathered.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    nl.store(both, value=gathered)
    return out


@nki.jit
def unmodelled_calls(x):
    """nisa.dropout (keeps its input's shape) and nisa.max8 into a dst: neither is modelled,
    both are costed as generic Vector Engine work and listed as ASSUMED."""
    rows, cols = x.shape
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    for i in nl.affine_range(rows // 128):
        t = nl.load(x[nl.ds(i * 128, 128), :])
        d = nisa.dropout(t, prob=0.5)
        top = nl.ndarray((128, 8), dtype=x.dtype, buffer=nl.sbuf)
        nisa.max8(dst=top, src=t)
        nl.store(out[nl.ds(i * 128, 128), :], value=d)
    return out


@nki.jit
def mx_dtypes(w):
    """Packed MX weights: the kernel checks its argument's dtype as NKI names it."""
    assert w.dtype == nl.float8_e4m3fn_x4, w.dtype
    assert w.dtype != nl.float8_e5m2_x4
    out = nl.ndarray(w.shape, dtype=w.dtype, buffer=nl.shared_hbm)
    t = nl.ndarray(w.shape, dtype=w.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=w)
    nisa.dma_copy(dst=out, src=t)
    return out


@nki.jit
def hbm_window(x):
    """Overlapping rows (a stride-1 pooling window) read straight from HBM: 3 DMAs, one per
    window row offset."""
    i_p, i_k, i_f = nl.mgrid[0:128, 0:3, 0:64]
    t = nl.load(x[i_p + i_k, i_f])
    return t


@nki.jit
def strided_view(x):
    """On chip, a stride-2 index tile covers its box; its shape is the index grid's."""
    t = nl.load(x)
    i_p, i_f = nl.mgrid[0:128, 0:256]
    v = t[i_p, 2 * i_f]
    assert v.shape == (128, 256), v.shape
    return v


@nki.jit
def mx_matmul(st_x4, mv_x4, st_scale, mv_scale):
    """One MX matmul (nc_matmul_mx, not modelled): costed on the Tensor Engine, one multiply-add
    per output element per contraction value (4 per packed x4 element of a stationary column)."""
    out = nl.ndarray((st_x4.shape[1], mv_x4.shape[1]), dtype=nl.bfloat16, buffer=nl.shared_hbm)
    st = nl.ndarray(st_x4.shape, dtype=st_x4.dtype, buffer=nl.sbuf)
    mv = nl.ndarray(mv_x4.shape, dtype=mv_x4.dtype, buffer=nl.sbuf)
    ss = nl.ndarray(st_scale.shape, dtype=nl.uint8, buffer=nl.sbuf)
    ms = nl.ndarray(mv_scale.shape, dtype=nl.uint8, buffer=nl.sbuf)
    nisa.dma_copy(dst=st, src=st_x4)
    nisa.dma_copy(dst=mv, src=mv_x4)
    nisa.dma_copy(dst=ss, src=st_scale)
    nisa.dma_copy(dst=ms, src=mv_scale)
    ps = nl.ndarray((st_x4.shape[1], mv_x4.shape[1]), dtype=nl.float32, buffer=nl.psum)
    nisa.nc_matmul_mx(dst=ps, stationary=st, moving=mv, stationary_scale=ss, moving_scale=ms)
    res = nl.ndarray(ps.shape, dtype=nl.bfloat16, buffer=nl.sbuf)
    nisa.tensor_copy(dst=res, src=ps)
    nisa.dma_copy(dst=out, src=res)
    return out


@nki.jit
def dma_combine(x, y):
    """out = x + y with the add done by the DMA (nisa.dma_compute reading x from HBM), the
    (128, 1, 512) SBUF tile filled from a (128, 512) HBM tile (shapes equal up to size-1 dims),
    and loops written with nl.range / nl.dynamic_range(int)."""
    rows, cols = x.shape
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    for i in nl.range(rows // 128):
        for _ in nl.dynamic_range(1):
            yt = nl.ndarray((128, 1, cols), dtype=y.dtype, buffer=nl.sbuf)
            nisa.dma_copy(dst=yt, src=y[nl.ds(i * 128, 128), :])
            acc = nl.ndarray((128, cols), dtype=x.dtype, buffer=nl.sbuf)
            nisa.dma_compute(dst=acc, srcs=[x[nl.ds(i * 128, 128), :], yt[:, 0, :]], reduce_op=nl.add)
            nisa.dma_copy(dst=out[nl.ds(i * 128, 128), :], src=acc)
    return out


@nki.jit
def dma_combine_hbm(x):
    """x[0] + x[1] into out, HBM to HBM: nisa.dma_compute with an access pattern of an HBM tensor
    as its dst, a block of 128 rows at a time."""
    _, rows, cols = x.shape
    out = nl.ndarray((rows, cols), dtype=x.dtype, buffer=nl.shared_hbm)
    for i in nl.affine_range(rows // 128):
        nisa.dma_compute(dst=out.ap(pattern=[[cols, 128], [1, cols]], offset=i * 128 * cols),
                         srcs=[x.ap(pattern=[[cols, 128], [1, cols]], offset=i * 128 * cols),
                               x.ap(pattern=[[cols, 128], [1, cols]], offset=(rows + i * 128) * cols)],
                         scales=[1.0, 1.0], reduce_op=nl.add)
    return out


@nki.jit
def register_loop(x, n_tiles):
    """A loop whose trip count is read into a register at run time: refused (data-dependent)."""
    reg = nisa.register_alloc()
    nisa.register_load(reg, n_tiles)
    for _ in nl.dynamic_range(reg):
        t = nl.load(x)
    return x


@nki.jit
def helper_calls(x, refuse=False):
    """Unmodelled calls made inside a helper module: the listing and the refusal name the
    helper's own file and line."""
    from api_helpers import find8, top8

    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    t = nl.load(x)
    top8(t)
    if refuse:
        find8(t)
    nl.store(out, value=t)
    return out


@nki.jit
def misc_calls(x):
    """x in two halves, each through an SBUF access pattern into a buffer placed by
    nki.compiler.sbuf.mod_alloc; a static_cast copy; an all-reduce over 4 ranks; program_id of
    a kernel launched without a grid."""
    import nki.compiler as ncomp

    rows, cols = x.shape
    half = cols // 2
    assert nl.program_id(0) == 0 and nl.num_programs(axes=0) == 1
    out = nl.ndarray((rows, cols), dtype=x.dtype, buffer=nl.shared_hbm)
    t = nl.ndarray((rows, cols), dtype=x.dtype, buffer=ncomp.sbuf.mod_alloc(base_addr=0))
    assert t.buffer == nl.sbuf and x.buffer != nl.sbuf and t.itemsize == 2
    for j in nl.affine_range(2):
        part = t.ap(pattern=[[cols, rows], [1, half]], offset=j * half)
        nisa.dma_copy(dst=part, src=x[:, nl.ds(j * half, half)])
        wide = nl.static_cast(part, nl.float32)
        assert wide.dtype == nl.float32 and wide.shape == (rows, half)
        summed = nl.ndarray((rows, half), dtype=nl.float32, buffer=nl.sbuf)
        ncc.all_reduce(dsts=[summed], srcs=[wide], op=nl.add,
                       replica_group=ncc.ReplicaGroup([[0, 1, 2, 3]]))
        nisa.dma_copy(dst=out[:, nl.ds(j * half, half)], src=part)
    return out


@nki.jit
def ap_forms(x, bias):
    """Access patterns beyond one run per axis: each row block read through a run-of-runs
    pattern at a scalar_offset, a (128, 1) bias repeated along the free axis by a stride-0
    pattern; out = x + bias."""
    rows, cols = x.shape
    assert nl.tile_size.psum_fmax == 512 and nl.tile_size.pmax == 128
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    b = nl.ndarray((128, 1), dtype=bias.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=b, src=bias)
    for i in nl.affine_range(rows // 128):
        t = nl.ndarray((128, cols), dtype=x.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=t, src=x.ap(pattern=[[cols, 128], [128, cols // 128], [1, 128]], offset=0,
                                      scalar_offset=i * 128, indirect_dim=0))
        s = nl.ndarray((128, cols), dtype=x.dtype, buffer=nl.sbuf)
        nisa.tensor_tensor(dst=s, data1=t, data2=b.ap(pattern=[[1, 128], [0, cols]]), op=nl.add)
        nisa.dma_copy(dst=out[nl.ds(i * 128, 128), :], src=s)
    return out


@nki.jit
def pe_transpose(x):
    """x (128, 64) transposed on the PE array (nc_matmul is_transpose=True against an identity
    from nl.shared_identity_matrix), then permuted to the next rank."""
    out = nl.ndarray((x.shape[1], x.shape[0]), dtype=x.dtype, buffer=nl.shared_hbm)
    ident = nl.shared_identity_matrix(128, dtype=nl.bfloat16)
    t = nl.load(x)
    ps = nl.ndarray((x.shape[1], x.shape[0]), dtype=nl.float32, buffer=nl.psum)
    nisa.nc_matmul(dst=ps, stationary=t, moving=ident, is_transpose=True)
    res = nl.ndarray(ps.shape, dtype=x.dtype, buffer=nl.sbuf)
    nisa.tensor_copy(dst=res, src=ps)
    sent = nl.ndarray(res.shape, dtype=x.dtype, buffer=nl.sbuf)
    assert ncc.rank_id() == 0
    ncc.collective_permute_implicit(srcs_by_channel=[[res]], dsts_by_channel=[[sent]],
                                    replica_group=ncc.ReplicaGroup([[0, 1]]), channel_ids=[0])
    nl.store(out, value=res)
    return out


@nki.jit
def reshaping_dmas(vec, col):
    """A flat (1024,) vector DMA'd into a (128, 8) tile; a (1, 128) row read again through a
    (1, 128, 1) reshape after its first access; an fp32 tile read as bf16 halves through an
    access pattern of the other element size."""
    out = nl.ndarray((128, 8), dtype=vec.dtype, buffer=nl.shared_hbm)
    t = nl.ndarray((128, 8), dtype=vec.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=vec)
    nisa.dma_copy(dst=out, src=t)
    row = nl.ndarray((1, 128), dtype=col.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=row, src=col)
    again = nl.ndarray((1, 128, 1), dtype=col.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=again, src=col.reshape((1, 128, 1)))
    wide = nl.ndarray((128, 256), dtype=nl.float32, buffer=nl.sbuf)
    halves = wide.ap(pattern=[[512, 128], [1, 512]], dtype=nl.bfloat16)
    assert halves.shape == (128, 512) and halves.dtype == nl.bfloat16
    return out


@nki.jit
def shuffled_store(x):
    """x (128, 4, 64) interleaved on chip into (128, 64, 4) by a permuting access pattern, then
    stored flat as (128, 256): the reshape merges axes holding different dimensions of x."""
    p, a, f = x.shape
    out = nl.ndarray((p, a * f), dtype=x.dtype, buffer=nl.shared_hbm)
    t = nl.ndarray((p, a, f), dtype=x.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=x)
    mixed = nl.ndarray((p, f, a), dtype=x.dtype, buffer=nl.sbuf)
    nisa.tensor_copy(dst=mixed, src=t.ap(pattern=[[a * f, p], [1, f], [f, a]]))
    nisa.dma_copy(dst=out, src=mixed.reshape((p, f * a)))
    return out


@nki.jit
def split_rows(x):
    """A (512, 128) tensor read into a (128, 4, 128) tile: partition p, block b holds row
    b * 128 + p (the pattern walks the row axis in two pieces, in the other order)."""
    r, c = x.shape
    out = nl.ndarray((128, r // 128, c), dtype=x.dtype, buffer=nl.shared_hbm)
    t = nl.ndarray((128, r // 128, c), dtype=x.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=x.ap(pattern=[[c, 128], [128 * c, r // 128], [1, c]], offset=0))
    nisa.dma_copy(dst=out, src=t)
    return out


@nki.jit
def vector_twice(vec):
    """A (1024,) vector read whole as a (1, 1024) row, then again into a (128, 8) tile (its one
    axis walked in two pieces)."""
    out = nl.ndarray((128, 8), dtype=vec.dtype, buffer=nl.shared_hbm)
    row = nl.ndarray((1, 1024), dtype=vec.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=row, src=vec)
    t = nl.ndarray((128, 8), dtype=vec.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=vec)
    nisa.dma_copy(dst=out, src=t)
    return out


@nki.jit
def gather_rows(table, idx):
    """Rows of a table gathered by index tiles (an indirect DMA, vector_offset=), a block of 128
    per iteration: the bytes of the rows are known, which rows are data."""
    rows_n, cols = table.shape
    out = nl.ndarray(table.shape, dtype=table.dtype, buffer=nl.shared_hbm)
    for g in nl.affine_range(rows_n // 128):
        ids = nl.load(idx[nl.ds(g * 128, 128), :])
        rows = nl.ndarray((128, cols), dtype=table.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=rows, src=table.ap(pattern=[[cols, 128], [1, cols]], offset=g * 128 * cols,
                                             vector_offset=ids, indirect_dim=0))
        nl.store(out[nl.ds(g * 128, 128), :], value=rows)
    return out


@nki.jit
def window_scale(x):
    """Each row's pairs (2 * i + j) scaled on chip through a window index view of rank 3, the
    (128, 256, 2) result stored: the op's output runs along x's columns in the view's steps."""
    p, f = x.shape
    out = nl.ndarray((p, f // 2, 2), dtype=x.dtype, buffer=nl.shared_hbm)
    t = nl.load(x)
    i_p, i_y, i_x = nl.mgrid[0:p, 0:f // 2, 0:2]
    s = nl.exp(t[i_p, 2 * i_y + i_x])
    nl.store(out, value=s)
    return out


@nki.jit
def language_unknown(x, y):
    """nl.where (not modelled) on two tiles: an elementwise language call, costed as ASSUMED
    Vector work of its output's elements; its output holds x's tile."""
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    a = nl.load(x)
    b = nl.load(y)
    w = nl.where(nl.greater(a, b), a, b)
    nl.store(out, value=w)
    return out


@nki.jit
def column_scale(x):
    """Each column of an SBUF tile, read with an integer index (t[0:128, j], one axis fewer),
    scaled into a [128, 1] tile and stored back: the op's output and input differ only by an axis
    of one element."""
    p, f = x.shape
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    t = nl.ndarray((p, f), dtype=x.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=x)
    for j in nl.affine_range(f):
        col = nl.ndarray((p, 1), dtype=x.dtype, buffer=nl.sbuf)
        nisa.tensor_scalar(dst=col, data=t[0:p, j], op0=nl.multiply, operand0=3.0)
        nisa.dma_copy(dst=out[0:p, nl.ds(j, 1)], src=col)
    return out


@nki.jit
def repeated_columns(x):
    """Each element of an SBUF tile repeated 4 times along a new last axis by an on-chip access
    pattern with a stride-0 entry ([[f, p], [1, f], [0, 4]]), scaled into a [p, f, 4] tile and
    stored: the op's output has the pattern's rank, one axis more than the box it reads."""
    p, f = x.shape
    out = nl.ndarray((p, f, 4), dtype=x.dtype, buffer=nl.shared_hbm)
    t = nl.ndarray((p, f), dtype=x.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=x)
    r = nl.ndarray((p, f, 4), dtype=x.dtype, buffer=nl.sbuf)
    nisa.tensor_scalar(dst=r, data=t.ap(pattern=[[f, p], [1, f], [0, 4]], offset=0),
                       op0=nl.multiply, operand0=4.0)
    nisa.dma_copy(dst=out, src=r)
    return out


@nki.jit
def viewed_copies(x):
    """An SBUF tile read back through ``.view``: as float16 (the same element size) into one
    output and as int32 (two bf16 per element, half as many columns) into another."""
    p, f = x.shape
    out16 = nl.ndarray((p, f), dtype=nl.float16, buffer=nl.shared_hbm)
    out32 = nl.ndarray((p, f // 2), dtype=nl.int32, buffer=nl.shared_hbm)
    t = nl.ndarray((p, f), dtype=x.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=x)
    h = t.view(nl.float16)
    assert h.dtype == nl.float16 and h.shape == (p, f)
    nisa.dma_copy(dst=out16, src=h)
    w = t.view(nl.int32)
    assert w.dtype == nl.int32 and w.shape == (p, f // 2)
    nisa.dma_copy(dst=out32, src=w)
    return out16, out32


@nki.jit
def rows_in_pieces(x):
    """x [512, 64] read and written through one access pattern that walks its rows in pieces
    (tile [128, 4, 64]: row p + 128 t), exponentiated on chip in between."""
    s, d = x.shape
    n = s // 128
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    t = nl.ndarray((128, n, d), dtype=x.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=x.ap(pattern=[[d, 128], [128 * d, n], [1, d]], offset=0))
    e = nl.ndarray((128, n, d), dtype=x.dtype, buffer=nl.sbuf)
    nisa.activation(dst=e, op=nl.exp, data=t)
    nisa.dma_copy(dst=out.ap(pattern=[[d, 128], [128 * d, n], [1, d]], offset=0), src=e)
    return out
