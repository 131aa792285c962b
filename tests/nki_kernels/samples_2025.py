"""Kernels in idioms of the older neuronxcc.nki samples (nl.load_transpose2d, reshape(shape=),
nki.language.constants.sizeinbytes, bn_stats/bn_aggr statistics, a multi_buffer loop directive),
written for loopsim's tests."""

import neuronxcc.nki as nki
import neuronxcc.nki.compiler as ncc
import neuronxcc.nki.isa as nisa
import neuronxcc.nki.language as nl
from nki.language.constants import sizeinbytes


@nki.jit
def load_t2d(x):
    """out[128, 64] = the [64, 128] top-left block of x, transposed by the load."""
    out = nl.ndarray((128, 64), dtype=x.dtype, buffer=nl.shared_hbm)
    t = nl.load_transpose2d(x[0:64, 0:128])
    nl.store(out, value=t)
    return out


@nki.jit
def reshape_kw(x):
    """x [B, 128, C] read as [B * 128, C] (reshape(shape=...)), copied 128 rows at a time."""
    B, P, C = x.shape
    flat = x.reshape(shape=(B * P, C))
    out = nl.ndarray((B * P, C), dtype=x.dtype, buffer=nl.shared_hbm)
    for i in nl.sequential_range(B, directives=ncc.multi_buffer(2)):
        t = nl.load(flat[i * P:(i + 1) * P, :])
        nl.store(out[i * P:(i + 1) * P, :], value=t)
    return out


@nki.jit
def head_kib(x):
    """The first KiB of each row of x (1024 // sizeinbytes(dtype) columns) copied out."""
    n = 1024 // sizeinbytes(x.dtype)
    out = nl.ndarray((x.shape[0], n), dtype=x.dtype, buffer=nl.shared_hbm)
    nl.store(out, value=nl.load(x[:, 0:n]))
    return out


@nki.jit
def row_mean_var(x):
    """Per row of x [128, F] (F a multiple of 512): bn_stats of each 512-column tile into one
    statistics tile, bn_aggr of it: the mean and variance, stored [128, 2] fp32."""
    P, F = x.shape
    n = F // 512
    xt = nl.load(x)
    stats = nl.ndarray((P, 6 * n), dtype=nl.float32, buffer=nl.sbuf)
    for j in nl.affine_range(n):
        stats[:, j * 6:(j + 1) * 6] = nisa.bn_stats(xt[:, j * 512:(j + 1) * 512], dtype=nl.float32)
    mv = nisa.bn_aggr(stats)
    out = nl.ndarray((P, 2), dtype=nl.float32, buffer=nl.shared_hbm)
    nl.store(out, value=mv)
    return out


@nki.jit
def numpy_bounds(x):
    """Row tiles of x [R, C] copied out, their count and offsets numpy integers (as kernels that
    compute them from numpy arrays have them)."""
    import numpy as np

    starts = np.arange(0, x.shape[0], 128)
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    for i in nl.sequential_range(np.int64(len(starts))):
        t = nl.load(x[i * 128:(i + 1) * 128, np.int32(0):x.shape[1]])
        nl.store(out[i * 128:(i + 1) * 128, :], value=t)
    return out


def _fill_first(col, src):
    """A helper indexing the [P] column it is given as [P, 1], as the older NKI kept it."""
    col[:, 0] = nl.load(src)


@nki.jit
def kept_column(x):
    """x [128, C] gathered column by column into an SBUF tile through a helper that receives
    acc[:, j] (an integer-indexed column) and indexes it [:, 0]; stored whole."""
    P, C = x.shape
    acc = nl.ndarray((P, C), dtype=x.dtype, buffer=nl.sbuf)
    for j in nl.affine_range(C):
        _fill_first(acc[:, j], x[:, j:j + 1])
    out = nl.ndarray((P, C), dtype=x.dtype, buffer=nl.shared_hbm)
    nl.store(out, value=acc)
    return out


@nki.jit
def floor_max(x):
    """max(x, the dtype's lowest value) (nl.finfo(dtype).min a fill value) of a [128, F] tile,
    loaded through a 4-D nl.mgrid (its .p .x .y .z fields) of x [128, 2, 3, F / 6]."""
    P, A, B, C = x.shape
    g = nl.mgrid[0:P, 0:A, 0:B, 0:C]
    t = nl.load(x[g.p, g.x, g.y, g.z])
    lo = nl.full((P, A, B, C), fill_value=nl.finfo(x.dtype).min, dtype=x.dtype, buffer=nl.sbuf)
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    nl.store(out, value=nl.maximum(t, lo))
    return out


@nki.jit
def gather_rows(table, ids):
    """Per block of 128 ids: the ids loaded [128, 1], their rows of table [N, H] gathered by
    indexing table with the id tile (table[idx, cols]), stored."""
    n, h = table.shape
    out = nl.ndarray((ids.shape[0], h), dtype=table.dtype, buffer=nl.shared_hbm)
    for b in nl.affine_range(ids.shape[0] // 128):
        idx = nl.load(ids[b * 128:(b + 1) * 128, :])
        ip, jf = nl.mgrid[0:128, 0:h]
        rows = nl.load(table[idx[ip, 0], jf])
        nl.store(out[b * 128:(b + 1) * 128, :], value=rows)
    return out


@nki.jit
def pick_slab(w, which):
    """One [128, C] slab of w [E, 128, C], the expert number a loaded scalar (which[0] -> a
    one-element tile indexed [0, 0], the older NKI's [1, 1]), stored."""
    e = nl.load(which[0])
    slab = nl.load(w[e[0, 0], :, :])
    out = nl.ndarray(w.shape[1:], dtype=w.dtype, buffer=nl.shared_hbm)
    nl.store(out, value=slab)
    return out


@nki.jit
def masked_operand(a, b):
    """a [128, 128] and b [128, 512] loaded; a matmul whose stationary operand is written
    a_tile[ip, jf][mask] (the older masked-tile spelling; the mask holds everywhere here)."""
    at, bt = nl.load(a), nl.load(b)
    ip, jf = nl.mgrid[0:128, 0:128]
    acc = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.psum)
    acc[...] = nisa.nc_matmul(at[ip, jf][jf < 128], bt)
    out = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.shared_hbm)
    nl.store(out, value=nl.copy(acc))
    return out


@nki.jit
def scale_bytes(x):
    """An fp32 [g, 128, 1] scale tile per group, stored as the 4 fp8 bytes of each scale
    (t.view(nl.float8_e4m3)[g, :, :4]) into out [g, 128, 4]."""
    G = x.shape[0]
    t = nl.ndarray((G, nl.par_dim(128), 1), dtype=nl.float32, buffer=nl.sbuf)
    out = nl.ndarray((G, 128, 4), dtype=nl.float8_e4m3, buffer=nl.shared_hbm)
    for g in nl.affine_range(G):
        t[g, :, :] = nl.load(x[g])
    for g in nl.affine_range(G):
        nl.store(out[g], value=t.view(nl.float8_e4m3)[g, :, 0:4])
    return out


@nki.jit
def tokens_t2d(ids):
    """The ids of one block of 4 x 128 tokens, ids[128 * i + j] (an index expression over a 1-D
    tensor, no box), loaded transposed as [128, 4]."""
    out = nl.ndarray((128, 4), dtype=ids.dtype, buffer=nl.shared_hbm)
    t = nl.load_transpose2d(ids[128 * nl.arange(4)[:, None] + nl.arange(128)[None, :]])
    nl.store(out, value=t)
    return out


@nki.jit
def qk_transposed(q, k):
    """S = Q K^T per 128-row tile of q [S, d] (d <= 128): Q^T tiles landed by load_transpose2d
    through index tiles naming the tile's axes (q[i * 128 + i_f, i_p]... as the SD attention
    samples write it), K^T one tile, one matmul per q tile."""
    S, d = q.shape
    qt = nl.ndarray((S // 128, nl.par_dim(d), 128), dtype=q.dtype, buffer=nl.sbuf)
    ip, jf = nl.arange(d)[:, None], nl.arange(128)[None, :]
    for i in nl.affine_range(S // 128):
        qt[i, ip, jf] = nl.load_transpose2d(q[i * 128 + nl.arange(128)[:, None], nl.arange(d)[None, :]])
    kt = nl.load_transpose2d(k[0:128, 0:d])
    out = nl.ndarray((S, 128), dtype=nl.float32, buffer=nl.shared_hbm)
    for i in nl.affine_range(S // 128):
        ps = nl.zeros((128, 128), dtype=nl.float32, buffer=nl.psum)
        ps[...] += nisa.nc_matmul(qt[i, ip, jf], kt)
        nl.store(out[i * 128:(i + 1) * 128, :], value=nl.copy(ps))
    return out


@nki.jit
def row_scaled(x):
    """x [128, F] times the reciprocal of its row sums: the [128] sum (a reduction without
    keepdims, the older NKI's [P] tile) broadcast to [128, F]; plus a one-element tile broadcast
    into 32 rows of a column, and a [128] result indexed [0:128, 0] (its size-1 dimension)."""
    P, F = x.shape
    t = nl.load(x)
    s = nisa.tensor_reduce(nl.add, data=t, axis=(1,))
    r = (1.0 / s).broadcast_to((P, F))
    y = nl.multiply(t, r)
    col = nl.ndarray((nl.par_dim(P), 1), dtype=nl.float32, buffer=nl.sbuf)
    one = nl.load(x[0, 0])
    for i in nl.static_range(4):
        col[32 * i:32 * (i + 1), 0] = one.broadcast_to([32, 1])
    z = nl.add(s, 1.0)
    y2 = nl.add(y, z[0:P, 0])
    out = nl.ndarray((P, F), dtype=x.dtype, buffer=nl.shared_hbm)
    nl.store(out, value=y2)
    return out


@nki.jit
def shuffled_tiles(x):
    """The four [128, 128] column tiles of x [128, 512] copied into one SBUF buffer in the order
    3, 0, 1, 2 ... no affine map (tile j to slot (j + 1) % 4), the buffer then stored whole."""
    buf = nl.ndarray((128, 512), dtype=x.dtype, buffer=nl.sbuf)
    for j in range(4):
        s = (j + 1) % 4
        nisa.dma_copy(dst=buf[:, s * 128:(s + 1) * 128], src=x[:, j * 128:(j + 1) * 128])
    out = nl.ndarray((128, 512), dtype=x.dtype, buffer=nl.shared_hbm)
    nl.store(out, value=nl.exp(buf))
    return out


@nki.jit
def scaled_product_stored_transposed(a, b, c):
    """out [N, M] = ((a^T b) * c)^T: a [K, M], b [K, N], c [M, N]; the product stored through
    index tiles naming its axes (out[i_f, i_p], as the SD attention samples store)."""
    at, bt, ct = nl.load(a), nl.load(b), nl.load(c)
    M, N = a.shape[1], b.shape[1]
    ps = nl.zeros((M, N), dtype=nl.float32, buffer=nl.psum)
    ps[...] += nisa.nc_matmul(at, bt)
    r = nl.copy(ps, dtype=nl.bfloat16) * ct
    ip, jf = nl.arange(M)[:, None], nl.arange(N)[None, :]
    out = nl.ndarray((N, M), dtype=nl.bfloat16, buffer=nl.shared_hbm)
    nl.store(out[jf, ip], value=r)
    return out
