"""Kernels written for loopsim's tests of tiles at constant offsets, fixed slices, one loop moving
two tensors by different strides, and windows with a halo (the idioms of attention, MoE and conv
kernels). Shapes in the docstrings; tests/test_offsets.py holds the hand counts."""

import nki.language as nl

P = 128


def shifted_add(q, k):
    """out[:, t] = q[:, t + 1] + k[:, t] per 128-column tile: q's tiles start one tile in
    (``q[:, 128*t + 128]``, the attention tutorials' next-tile reads)."""
    R, C = q.shape
    n = C // P - 1
    out = nl.ndarray((R, n * P), dtype=q.dtype, buffer=nl.shared_hbm)
    for t in nl.affine_range(n):
        a = nl.load(q[:, (t + 1) * P:(t + 2) * P])
        b = nl.load(k[:, t * P:(t + 1) * P])
        nl.store(out[:, t * P:(t + 1) * P], value=nl.add(a, b))
    return out


def fixed_slice_bias(x, y):
    """out[i] = y[i] + x[128:256, :] for every 128-row tile i of y: the slice of x is loaded
    once, outside any loop."""
    R, C = y.shape
    out = nl.ndarray((R, C), dtype=y.dtype, buffer=nl.shared_hbm)
    bias = nl.load(x[P:2 * P, :])
    for i in nl.affine_range(R // P):
        t = nl.load(y[i * P:(i + 1) * P, :])
        nl.store(out[i * P:(i + 1) * P, :], value=nl.add(t, bias))
    return out


def two_strides(x, s):
    """One loop b over blocks: x's 128-row block b and s's one row b (strides 128 and 1), each
    copied out."""
    R, C = x.shape
    out_x = nl.ndarray((R, C), dtype=x.dtype, buffer=nl.shared_hbm)
    out_s = nl.ndarray(s.shape, dtype=s.dtype, buffer=nl.shared_hbm)
    for b in nl.affine_range(R // P):
        nl.store(out_x[b * P:(b + 1) * P, :], value=nl.load(x[b * P:(b + 1) * P, :]))
        nl.store(out_s[b:b + 1, :], value=nl.load(s[b:b + 1, :]))
    return out_x, out_s


def halo_windows(x, n=4, w=256, halo=2):
    """Window t of x is columns 256*t + 1 .. 256*t + 259 (its 256 columns and a halo of 2, at
    offset 1), copied to columns 258*t .. 258*t + 258 of out."""
    R = x.shape[0]
    out = nl.ndarray((R, n * (w + halo)), dtype=x.dtype, buffer=nl.shared_hbm)
    for t in nl.affine_range(n):
        win = nl.load(x[:, t * w + 1:t * w + 1 + w + halo])
        nl.store(out[:, t * (w + halo):(t + 1) * (w + halo)], value=win)
    return out


def sliced_contraction(lhsT, rhs):
    """out = lhsT[128:256, :].T @ rhs[128:256, :]: one matmul contracting over a fixed 128-row
    slice of K, outside any loop (a qkv-style fused-weight slice)."""
    N = rhs.shape[1]
    out = nl.ndarray((lhsT.shape[1], N), dtype=lhsT.dtype, buffer=nl.shared_hbm)
    a = nl.load(lhsT[P:2 * P, :])
    b = nl.load(rhs[P:2 * P, :])
    nl.store(out, value=nl.matmul(a, b, transpose_x=True))
    return out
