"""One attention head O = softmax(Q Kᵀ) V, fused with an online softmax, written for loopsim's
tests in both API styles. q and k arrive transposed (d x L: the head dimension on the
partitions), v as L x d. K and V are loaded once; per block of 128 queries the keys are walked in
blocks of TK, the scores live in PSUM, the running max and sum rescale the output accumulator,
and only O is written to HBM."""

import nki
import nki.isa as nisa
import nki.language as nl


@nki.jit
def flash_isa(q, k, v, TK=512):
    """nki.isa style: dma_copy, nc_matmul, tensor_reduce, activation_reduce, nc_transpose."""
    d, L = q.shape
    TQ, TJ, DC = 128, 128, 128  # query block, key sub-block of P·V, contraction chunk of d
    o = nl.ndarray((L, d), dtype=q.dtype, buffer=nl.shared_hbm)
    k_sb = nl.ndarray((d // DC, nl.par_dim(DC), L), dtype=k.dtype, buffer=nl.sbuf)
    for c in nl.affine_range(d // DC):
        nisa.dma_copy(dst=k_sb[c], src=k[c * DC:(c + 1) * DC, :])
    v_sb = nl.ndarray((L // TJ, nl.par_dim(TJ), d), dtype=v.dtype, buffer=nl.sbuf)
    for t in nl.affine_range(L // TJ):
        nisa.dma_copy(dst=v_sb[t], src=v[t * TJ:(t + 1) * TJ, :])
    for i in nl.affine_range(L // TQ):
        q_sb = nl.ndarray((d // DC, nl.par_dim(DC), TQ), dtype=q.dtype, buffer=nl.sbuf)
        for c in nl.affine_range(d // DC):
            nisa.dma_copy(dst=q_sb[c], src=q[c * DC:(c + 1) * DC, i * TQ:(i + 1) * TQ])
        run_max = nl.ndarray((nl.par_dim(TQ), 1), dtype=nl.float32, buffer=nl.sbuf)
        run_sum = nl.ndarray((nl.par_dim(TQ), 1), dtype=nl.float32, buffer=nl.sbuf)
        acc = nl.ndarray((nl.par_dim(TQ), d), dtype=nl.float32, buffer=nl.sbuf)
        nisa.memset(dst=run_max, value=-3.0e38)
        nisa.memset(dst=run_sum, value=0.0)
        nisa.memset(dst=acc, value=0.0)
        for j in nl.sequential_range(L // TK):
            s_ps = nl.ndarray((nl.par_dim(TQ), TK), dtype=nl.float32, buffer=nl.psum)
            for c in nl.affine_range(d // DC):
                nisa.nc_matmul(dst=s_ps, stationary=q_sb[c], moving=k_sb[c, :, j * TK:(j + 1) * TK])
            blk_max = nl.ndarray((nl.par_dim(TQ), 1), dtype=nl.float32, buffer=nl.sbuf)
            nisa.tensor_reduce(dst=blk_max, op=nl.max, data=s_ps, axis=1)
            new_max = nl.ndarray((nl.par_dim(TQ), 1), dtype=nl.float32, buffer=nl.sbuf)
            nisa.tensor_tensor(dst=new_max, data1=run_max, data2=blk_max, op=nl.maximum)
            shift = nl.ndarray((nl.par_dim(TQ), 1), dtype=nl.float32, buffer=nl.sbuf)
            nisa.tensor_tensor(dst=shift, data1=run_max, data2=new_max, op=nl.subtract)
            alpha = nl.ndarray((nl.par_dim(TQ), 1), dtype=nl.float32, buffer=nl.sbuf)
            nisa.activation(dst=alpha, op=nl.exp, data=shift)
            neg_max = nl.ndarray((nl.par_dim(TQ), 1), dtype=nl.float32, buffer=nl.sbuf)
            nisa.tensor_scalar(dst=neg_max, data=new_max, op0=nl.multiply, operand0=-1.0)
            p_sb = nl.ndarray((nl.par_dim(TQ), TK), dtype=q.dtype, buffer=nl.sbuf)
            blk_sum = nl.ndarray((nl.par_dim(TQ), 1), dtype=nl.float32, buffer=nl.sbuf)
            nisa.activation_reduce(dst=p_sb, op=nl.exp, data=s_ps, bias=neg_max,
                                   reduce_op=nl.add, reduce_res=blk_sum)
            nisa.scalar_tensor_tensor(dst=run_sum, data=run_sum, op0=nl.multiply, operand0=alpha,
                                      op1=nl.add, operand1=blk_sum)
            nisa.tensor_copy(dst=run_max, src=new_max)
            pv_ps = nl.ndarray((nl.par_dim(TQ), d), dtype=nl.float32, buffer=nl.psum)
            for e in nl.affine_range(d // DC):
                for jj in nl.affine_range(TK // TJ):
                    pT_ps = nl.ndarray((nl.par_dim(TJ), TQ), dtype=q.dtype, buffer=nl.psum)
                    nisa.nc_transpose(dst=pT_ps, data=p_sb[:, jj * TJ:(jj + 1) * TJ])
                    pT = nl.ndarray((nl.par_dim(TJ), TQ), dtype=q.dtype, buffer=nl.sbuf)
                    nisa.tensor_copy(dst=pT, src=pT_ps)
                    nisa.nc_matmul(dst=pv_ps[:, e * DC:(e + 1) * DC], stationary=pT,
                                   moving=v_sb[j * (TK // TJ) + jj, :, e * DC:(e + 1) * DC])
            nisa.scalar_tensor_tensor(dst=acc, data=acc, op0=nl.multiply, operand0=alpha,
                                      op1=nl.add, operand1=pv_ps)
        out = nl.ndarray((nl.par_dim(TQ), d), dtype=q.dtype, buffer=nl.sbuf)
        nisa.tensor_scalar(dst=out, data=acc, op0=nl.divide, operand0=run_sum)
        nisa.dma_copy(dst=o[i * TQ:(i + 1) * TQ, :], src=out)
    return o


@nki.jit
def flash_lang(q, k, v):
    """nki.language style: nl.load / nl.matmul / nl.max / nl.exp / operators / nl.store."""
    d, L = q.shape
    o = nl.ndarray((L, d), dtype=q.dtype, buffer=nl.shared_hbm)
    k_sb = nl.ndarray((d // 128, nl.par_dim(128), L), dtype=k.dtype, buffer=nl.sbuf)
    for c in nl.affine_range(d // 128):
        k_sb[c] = nl.load(k[nl.ds(c * 128, 128), :])
    v_sb = nl.ndarray((L // 128, nl.par_dim(128), d), dtype=v.dtype, buffer=nl.sbuf)
    for t in nl.affine_range(L // 128):
        v_sb[t] = nl.load(v[nl.ds(t * 128, 128), :])
    for i in nl.affine_range(L // 128):
        q_sb = nl.ndarray((d // 128, nl.par_dim(128), 128), dtype=q.dtype, buffer=nl.sbuf)
        for c in nl.affine_range(d // 128):
            q_sb[c] = nl.load(q[nl.ds(c * 128, 128), nl.ds(i * 128, 128)])
        m_run = nl.full((nl.par_dim(128), 1), -3.0e38, dtype=nl.float32)
        l_run = nl.zeros((nl.par_dim(128), 1), dtype=nl.float32)
        acc = nl.zeros((nl.par_dim(128), d), dtype=nl.float32)
        for j in nl.sequential_range(L // 512):
            s = nl.zeros((nl.par_dim(128), 512), dtype=nl.float32, buffer=nl.psum)
            for c in nl.affine_range(d // 128):
                s += nl.matmul(q_sb[c], k_sb[c, :, nl.ds(j * 512, 512)], transpose_x=True)
            m_new = nl.maximum(m_run, nl.max(s, axis=1, keepdims=True))
            alpha = nl.exp(m_run - m_new)
            p = nl.exp(s - m_new, dtype=q.dtype)
            l_run = l_run * alpha + nl.sum(p, axis=1, keepdims=True)
            pv = nl.zeros((nl.par_dim(128), d), dtype=nl.float32, buffer=nl.psum)
            for e in nl.affine_range(d // 128):
                for jj in nl.affine_range(4):
                    pv[:, nl.ds(e * 128, 128)] += nl.matmul(p[:, nl.ds(jj * 128, 128)],
                                                            v_sb[j * 4 + jj, :, nl.ds(e * 128, 128)])
            acc = acc * alpha + pv
            m_run = m_new
        nl.store(o[nl.ds(i * 128, 128), :], value=acc / l_run)
    return o
