"""Kernels written for loopsim's tests in the idioms of the attention tutorials and the production
library where a matmul's operands are not plain tiles of loaded tensors: a transpose on the
Tensor Engine feeding the next matmul, a PSUM tile reused per output tile, a tensor of tiles,
a second contraction dimension walked one element at a time, a prologue tile at a fixed index,
a sliding window. Shapes in the docstrings; tests/test_nki_matmul.py holds the hand counts."""

import nki
import nki.isa as nisa
import nki.language as nl
import numpy as np

P = 128   # partitions per tile


@nki.jit
def transposed_operand(x, w, how="identity"):
    """out = x @ w, x [128 (M), K] with M on the partitions: each 128-column block of x is
    transposed on the Tensor Engine into PSUM (``how``: a matmul with an identity constant,
    nc_transpose, or nc_matmul is_transpose=True), copied to SBUF and used as the stationary
    operand against the matching 128 rows of w [K, N]; the products accumulate in one PSUM tile."""
    M, K = x.shape
    N = w.shape[1]
    out = nl.ndarray((M, N), dtype=x.dtype, buffer=nl.shared_hbm)
    ident = nl.shared_constant(np.identity(P, dtype=np.int8), dtype=x.dtype)
    id_sb = nl.ndarray((nl.par_dim(P), P), dtype=x.dtype, buffer=nl.sbuf)
    id_sb[...] = nl.load(ident)
    x_sb = nl.load(x)
    acc = nl.zeros((P, N), dtype=nl.float32, buffer=nl.psum)
    for k in nl.affine_range(K // P):
        if how == "identity":
            xt_ps = nisa.nc_matmul(x_sb[:, nl.ds(k * P, P)], id_sb)
        elif how == "nc_transpose":
            xt_ps = nisa.nc_transpose(x_sb[:, nl.ds(k * P, P)])
        else:
            xt_ps = nisa.nc_matmul(x_sb[:, nl.ds(k * P, P)], id_sb, is_transpose=True)
        xt = nisa.tensor_copy(xt_ps, dtype=x.dtype)
        w_sb = nl.load(w[nl.ds(k * P, P), :])
        acc += nisa.nc_matmul(stationary=xt, moving=w_sb)
    res = nisa.tensor_copy(acc, dtype=x.dtype)
    nl.store(out, value=res)
    return out


@nki.jit
def tiles_of_tiles(at, b):
    """out = A @ B with A^T stored as a tensor of tiles at [KT, MT, 128, 128] (tile (k, m) holds
    rows k*128.. of K on its partitions, columns m*128.. of M) and B as b [KT, 128, N]; the PSUM
    tile is allocated inside the loop over m (one accumulator reused per output tile)."""
    KT, MT = at.shape[0], at.shape[1]
    N = b.shape[2]
    out = nl.ndarray((MT * P, N), dtype=at.dtype, buffer=nl.shared_hbm)
    for m in nl.affine_range(MT):
        ps = nl.zeros((P, N), dtype=nl.float32, buffer=nl.psum)
        for k in nl.affine_range(KT):
            a_t = nl.load(at[k, m, :, :])
            b_t = nl.load(b[k, :, :])
            ps += nisa.nc_matmul(stationary=a_t, moving=b_t)
        res = nisa.tensor_copy(ps, dtype=at.dtype)
        nl.store(out[nl.ds(m * P, P), :], value=res)
    return out


@nki.jit
def two_contractions(x, w):
    """out = sum over h of x[:, h, :].T @ w[:, h, :]: x [128 (K), H, M], w [128 (K), H, N]; the
    loop over h walks a second contraction dimension one element per instruction."""
    K, H, M = x.shape
    N = w.shape[2]
    out = nl.ndarray((M, N), dtype=x.dtype, buffer=nl.shared_hbm)
    x_sb = nl.load(x)
    w_sb = nl.load(w)
    ps = nl.zeros((M, N), dtype=nl.float32, buffer=nl.psum)
    for h in nl.affine_range(H):
        ps += nisa.nc_matmul(x_sb[:, h, :], w_sb[:, h, :])
    res = nisa.tensor_copy(ps, dtype=x.dtype)
    nl.store(out, value=res)
    return out


def _first_tile(q_sb, k_sb, i):
    """The product of q's i-th 128 columns with all of k (a pipeline's prologue step)."""
    return nisa.nc_matmul(q_sb[:, nl.ds(i * P, P)], k_sb)


@nki.jit
def prologue_tile(q, k):
    """out = q[:, 0:128].T @ k: q [128 (K), M], k [128 (K), N]; only the first 128 columns of q
    enter a matmul, through a helper called at the constant index 0."""
    N = k.shape[1]
    out = nl.ndarray((P, N), dtype=q.dtype, buffer=nl.shared_hbm)
    q_sb = nl.load(q)
    k_sb = nl.load(k)
    ps = _first_tile(q_sb, k_sb, 0)
    res = nisa.tensor_copy(ps, dtype=q.dtype)
    nl.store(out, value=res)
    return out


@nki.jit
def sliding_window(x, f):
    """A valid 1-D convolution as matmuls: x [128 (C_in), L], f [T, 128 (C_in), 128 (C_out)];
    tap t multiplies f[t] with the window x[:, t:t + L - T + 1] into one PSUM tile."""
    C, L = x.shape
    T = f.shape[0]
    W = L - T + 1
    out = nl.ndarray((P, W), dtype=x.dtype, buffer=nl.shared_hbm)
    x_sb = nl.load(x)
    f_sb = nl.ndarray((nl.par_dim(P), T, P), dtype=f.dtype, buffer=nl.sbuf)
    for t in nl.affine_range(T):
        f_sb[:, t, :] = nl.load(f[t, :, :])
    ps = nl.zeros((P, W), dtype=nl.float32, buffer=nl.psum)
    for t in nl.affine_range(T):
        ps += nisa.nc_matmul(f_sb[:, t, :], x_sb[:, t:t + W])
    res = nisa.tensor_copy(ps, dtype=x.dtype)
    nl.store(out, value=res)
    return out




@nki.jit
def unrolled_stages(x, w, v):
    """Two stages written out, as a software pipeline's prologue and epilogue are: stage i makes
    e_i = exp(x_i.T @ w) (x [128 (K), 256] in two 128-column tiles, w [128 (K), 128]) and adds
    e_i.T @ v_i into one PSUM tile (v [256, 128] in two 128-row tiles): out = sum_i e_i.T @ v_i,
    one output made from each stage's own on-chip value."""
    out = nl.ndarray((P, P), dtype=x.dtype, buffer=nl.shared_hbm)
    x_sb = nl.load(x)
    w_sb = nl.load(w)
    v0 = nl.load(v[0:P, :])
    v1 = nl.load(v[P:2 * P, :])
    g0 = nisa.nc_matmul(x_sb[:, 0:P], w_sb)
    e0 = nisa.activation(op=nl.exp, data=g0)
    g1 = nisa.nc_matmul(x_sb[:, P:2 * P], w_sb)
    e1 = nisa.activation(op=nl.exp, data=g1)
    ps = nl.zeros((P, P), dtype=nl.float32, buffer=nl.psum)
    ps += nisa.nc_matmul(e0, v0)
    ps += nisa.nc_matmul(e1, v1)
    nl.store(out, value=nisa.tensor_copy(ps, dtype=x.dtype))
    return out
