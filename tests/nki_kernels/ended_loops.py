"""Lists of tiles filled by one loop and read by a later one, written for loopsim's tests in the
idiom of a mixture-of-experts block (gate and up projections into PSUM tiles kept in a list, an
activation pass over the list, then a down projection reading the list): every op reads a tile
that a loop which has ended made.

Shapes: x is H x T (H = 128 n_h hidden rows on the partitions, T tokens, T <= 512), w_g and
w_u are H x I (I = 128 n_i), w_d is I x H; out is T x H (T <= 128)."""

import nki
import nki.isa as nisa
import nki.language as nl

P = 128


@nki.jit
def ended_mlp(x, w_g, w_u, w_d):
    H, T = x.shape
    I = w_d.shape[0]
    NH, NI = H // P, I // P
    out = nl.ndarray((T, H), dtype=x.dtype, buffer=nl.shared_hbm)
    x_sb = []
    for h in range(NH):
        t = nl.ndarray((P, T), dtype=x.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=t, src=x[h * P:(h + 1) * P, 0:T])
        x_sb.append(t)
    # gate and up projections: one PSUM tile per (gate or up, I tile), kept in a list
    gate = [nl.ndarray((P, T), dtype=nl.float32, buffer=nl.psum) for _ in range(NI)]
    up = [nl.ndarray((P, T), dtype=nl.float32, buffer=nl.psum) for _ in range(NI)]
    for i in range(NI):
        for h in range(NH):
            wg = nl.ndarray((P, P), dtype=w_g.dtype, buffer=nl.sbuf)
            nisa.dma_copy(dst=wg, src=w_g[h * P:(h + 1) * P, i * P:(i + 1) * P])
            nisa.nc_matmul(dst=gate[i], stationary=wg, moving=x_sb[h])
            wu = nl.ndarray((P, P), dtype=w_g.dtype, buffer=nl.sbuf)
            nisa.dma_copy(dst=wu, src=w_u[h * P:(h + 1) * P, i * P:(i + 1) * P])
            nisa.nc_matmul(dst=up[i], stationary=wu, moving=x_sb[h])
    # the activation pass: reads the PSUM tiles a loop that has ended made
    inter = [nl.ndarray((P, T), dtype=x.dtype, buffer=nl.sbuf) for _ in range(NI)]
    tmp = [nl.ndarray((P, T), dtype=x.dtype, buffer=nl.sbuf) for _ in range(NI)]
    for i in range(NI):
        nisa.activation(op=nl.silu, data=gate[i], dst=tmp[i])
        nisa.tensor_tensor(dst=inter[i], data1=tmp[i], data2=up[i], op=nl.multiply)
    # the down projection: reads the intermediate tiles the activation loop made
    for h in range(NH):
        o_ps = nl.ndarray((T, P), dtype=nl.float32, buffer=nl.psum)
        for i in range(NI):
            wd = nl.ndarray((P, P), dtype=w_d.dtype, buffer=nl.sbuf)
            nisa.dma_copy(dst=wd, src=w_d[i * P:(i + 1) * P, h * P:(h + 1) * P])
            nisa.nc_matmul(dst=o_ps, stationary=inter[i], moving=wd)
        o_sb = nl.ndarray((T, P), dtype=x.dtype, buffer=nl.sbuf)
        nisa.tensor_copy(dst=o_sb, src=o_ps)
        nisa.dma_copy(dst=out[0:T, h * P:(h + 1) * P], src=o_sb)
    return out


@nki.jit
def ended_scaled(x, w):
    """x: K x T (K = 128 on the partitions), w: K x M (M = 128 m); out: M x T. Per tile m, a
    scaled copy of the projection's PSUM tile is made in one loop and kept in a list (a derived
    value of the accumulator, not yet an instruction of its own), squared by a later loop, and the
    square stored by a third."""
    K, T = x.shape
    M = w.shape[1]
    NM = M // P
    out = nl.ndarray((M, T), dtype=x.dtype, buffer=nl.shared_hbm)
    x_sb = nl.ndarray((P, T), dtype=x.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=x_sb, src=x)
    ps = [nl.ndarray((P, T), dtype=nl.float32, buffer=nl.psum) for _ in range(NM)]
    scaled = [nl.ndarray((P, T), dtype=nl.float32, buffer=nl.sbuf) for _ in range(NM)]
    for m in range(NM):
        w_sb = nl.ndarray((P, P), dtype=w.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=w_sb, src=w[0:P, m * P:(m + 1) * P])
        nisa.nc_matmul(dst=ps[m], stationary=w_sb, moving=x_sb)
        nisa.tensor_scalar(dst=scaled[m], data=ps[m], op0=nl.multiply, operand0=0.5)
    sq = [nl.ndarray((P, T), dtype=x.dtype, buffer=nl.sbuf) for _ in range(NM)]
    for m in range(NM):
        nisa.tensor_tensor(dst=sq[m], data1=scaled[m], data2=scaled[m], op=nl.multiply)
    for m in range(NM):
        nisa.dma_copy(dst=out[m * P:(m + 1) * P, 0:T], src=sq[m])
    return out
