"""Rank-3 tensors and batched matmul: operand roles by the einsum rule on dimension names
(tiles.matmul_roles), checked on a GQA decode over all KV heads against closed forms."""

import re

import pytest

from loopsim.targets import hardware
from loopsim.frontends import spec
from loopsim.base.errors import SpecError
from loopsim.ir.kernel import Matmul
from loopsim.model.pipeline import analyze_kernel as analyze
from loopsim.ir.tiles import matmul_roles

TRN2 = hardware.load("trn2-core")


def _analysis(kernel, policy="as-written"):
    """The one place these tests analyse a kernel (switch to loopsim.model.pipeline when it lands)."""
    return analyze(kernel, TRN2, policy=policy)


def _matmuls(kernel):
    return [s for s, _ in kernel.statements() if isinstance(s, Matmul)]


def test_gqa_score_roles():
    # s[h, :, st] += q[h, :, :] @ k[h, :, st], q [H, Dh, G], k [H, Dh, S], s [H, G, S]:
    # h in all three: batch; ':' over Dh in both inputs only: K; ':' over G in q and s: M;
    # st in k and s: N
    k = spec.load_kernel("gqa_decode")
    score, pv = _matmuls(k)
    r = matmul_roles(score, k)
    assert (r.k_stationary, r.m_stationary, r.k_moving, r.n_moving, r.m_out, r.n_out) == (1, 2, 1, 2, 1, 2)
    assert r.batch == ((0, 0, 0),)
    # o[h, :, :] += pT[h, sp, :] @ v[h, sp, :]: sp is K, G is M, Dh is N, h batch
    r = matmul_roles(pv, k)
    assert (r.k_stationary, r.m_stationary, r.k_moving, r.n_moving, r.m_out, r.n_out) == (1, 2, 1, 2, 1, 2)


@pytest.mark.parametrize("G", [4, 8, 16])
def test_gqa_decode_w_q_and_column_fill(G):
    H, Dh, S, TS, TP = 8, 128, 4096, 512, 128
    rep = _analysis(spec.load_kernel("gqa_decode", {"G": G}))
    # W: scores 2 H G Dh S plus PV 2 H G S Dh; one instruction per head and key tile
    assert rep.counts.flops == 4 * H * G * Dh * S
    assert rep.counts.instructions == H * (S // TS + S // TP)
    # Q: q, the K and V caches read once, o written once (bf16); scores and probabilities on chip
    assert rep.counts.Q == 2 * (H * Dh * G + 2 * H * S * Dh + H * G * Dh)
    # every instruction's stationary free size is G query heads: G of 128 PE columns
    cf = rep.ceilings.get("column_fill")
    assert cf.factor == G / 128
    assert cf.T == pytest.approx(rep.counts.flops / (TRN2.P("bf16") * G / 128), rel=1e-12)
    for policy in ("lru", "opt"):
        assert _analysis(spec.load_kernel("gqa_decode", {"G": G}), policy).counts.Q == \
            rep.counts.Q


def test_a_batch_tile_of_several_heads(tmp_path):
    # the same kernel with two heads per tile (h by 2): the same W, one instruction per head still,
    # and twice the score accumulators open at once in PSUM (2 heads x S/TS tiles of one bank)
    text = spec.locate("gqa_decode").read_text().replace("for h in H by 1:", "for h in H by 2:")
    p = tmp_path / "g2.toml"
    p.write_text(text)
    H, G, Dh, S, TS, TP = 8, 4, 128, 4096, 512, 128
    one = _analysis(spec.load_kernel("gqa_decode", {"S": 2048}))
    two = _analysis(spec.load_kernel(str(p), {"S": 2048}))
    assert two.counts.flops == one.counts.flops == 4 * H * G * Dh * 2048
    assert two.counts.instructions == one.counts.instructions == H * (2048 // TS + 2048 // TP)
    assert (one.ceilings.psum.live, two.ceilings.psum.live) == (2048 // TS, 2 * 2048 // TS)


def _nest(tmp_path, tensors, body):
    p = tmp_path / "mm.toml"
    p.write_text(f'[kernel]\nname = "mm"\n[params]\nM = 256\nN = 512\nK = 256\n[tensors]\n{tensors}\n'
                 f'[nest]\nbody = """\n{body}\n"""\n')
    return str(p)


def test_colon_names_the_dimension_it_spans(tmp_path):
    # C[m, :] += A[k, m] @ B[k, :]: ':' over N in B and C makes N the moving free dimension
    k = spec.load_kernel(_nest(tmp_path, 'A = { shape = ["K", "M"] }\nB = { shape = ["K", "N"] }\n'
                               'C = { shape = ["M", "N"], output = true }',
                               "for m in M by 128:\n  for k in K by 128:\n    load A[k, m]\n"
                               "    load B[k, :]\n    matmul C[m, :] += A[k, m] @ B[k, :]\n  store C[m, :]"))
    r = matmul_roles(_matmuls(k)[0], k)
    assert (r.k_stationary, r.m_stationary, r.k_moving, r.n_moving, r.m_out, r.n_out) == (0, 1, 0, 1, 0, 1)
    assert _analysis(k).counts.flops == 2 * 256 * 512 * 256


def test_unnamed_roles_say_how_to_name_them(tmp_path):
    # every dimension named "M": ':' cannot tell K, M and N apart
    tensors = ('A = { shape = ["M", "M"] }\nB = { shape = ["M", "M"] }\n'
               'C = { shape = ["M", "M"], output = true }')
    path = _nest(tmp_path, tensors.replace('"M"', '"K"'), "load A[:, :]\nload B[:, :]\n"
                 "matmul C[:, :] += A[:, :] @ B[:, :]\nstore C[:, :]")
    with pytest.raises(SpecError, match=re.escape("names two of them; index each dimension with the "
                                                  "loop variable that walks it, or give the tensors' "
                                                  "shapes distinct names")):
        _analysis(spec.load_kernel(path))
    # a dimension in one input only has no role
    path = _nest(tmp_path, 'A = { shape = ["K", "M"] }\nB = { shape = ["K", "N"] }\n'
                 'C = { shape = ["M", "N"], output = true }',
                 "for m in M by 128:\n  for n in N by 512:\n    for k in K by 128:\n      load A[k, m]\n"
                 "      load B[k, n]\n      matmul C[m, n] += A[k, m] @ B[k, :]\n    store C[m, n]")
    with pytest.raises(SpecError, match="appear.s. in one tensor only; index each dimension"):
        _analysis(spec.load_kernel(path))
