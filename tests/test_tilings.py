"""Every shipped spec loads and runs, each with one hand-derived traffic number beside it."""

import pytest

from loopsim.frontends import spec
from loopsim.model import pipeline
from loopsim.targets import hardware

TRN2 = hardware.load("trn2-core")
p = 2  # bf16 bytes
MiB = 1 << 20

# name -> hand-derived as-written Q in bytes on trn2-core, at the spec's own parameters
EXPECTED = {
    # r_A = N/TN = 2, r_B = M/TM = 8, C written once
    "matmul": p * (2 * 1024 * 1024 + 8 * 1024 * 1024 + 1024 * 1024),
    # A once (hoisted out of n), B once per m: r_B = M/TM = 8
    "matmul_hoisted": p * (1024 * 1024 + 8 * 1024 * 1024 + 1024 * 1024),
    # panels: r_A = N/BN = 2, r_B = M/BM = 4 (M = N = 2048, K = 1024)
    "matmul_blocked": p * (2 * 2048 * 1024 + 4 * 1024 * 2048 + 2048 * 2048),
    # A once, B once per m (8), C stored K/TK = 8 times and read back 7 times
    "matmul_kouter": p * (1024 * 1024 + 8 * 1024 * 1024 + (8 + 7) * 1024 * 1024),
    # r_A = N/TN = 1024/128 = 8, r_B = M/TM = 8
    "matmul_small_tiles": p * (8 * 1024 * 1024 + 8 * 1024 * 1024 + 1024 * 1024),
    # M = N = K = 4096: B once (one panel per nb), A once per (nb, ni): N/BN * BN/TN = 8, C once
    "matmul_panel": p * (8 * 4096 * 4096 + 4096 * 4096 + 4096 * 4096),
    # x, W read once and y written once at B = 2048, D = F = 4096
    "projection": p * (2048 * 4096 + 4096 * 4096 + 2048 * 4096),
    # R = C = 4096: every byte read once and written once
    "copy": p * 2 * 4096 * 4096,
    # B = 2048, D = 4096: x read and y written once, gamma and beta (D each) once
    "layernorm": p * (2 * 2048 * 4096 + 2 * 4096),
    # L = 2048, d = 128: q, k, v read once, o written once; scores stay on chip (k = 0)
    "attention_fused": p * 4 * 2048 * 128,
    # as fused, plus S (L x L) and P (L x L) each written once and read once (k = 2)
    "attention_unfused": p * (4 * 2048 * 128 + 4 * 2048 * 2048),
    # H = 8 KV heads, G = 4, Dh = 128, S = 4096: the KV cache once (2 H S Dh), q and o (H Dh G each)
    "gqa_decode": p * (2 * 8 * 4096 * 128 + 2 * 8 * 128 * 4),
    # B = 2048, D = 1024, F = 4096: W_up and W_down once (D F each), x and y once (B D each)
    "mlp_fused": p * (2 * 1024 * 4096 + 2 * 2048 * 1024),
    # as fused, plus h and g (B F each) written once and read once between the three kernels
    "mlp_unfused": p * (2 * 1024 * 4096 + 2 * 2048 * 1024 + 4 * 2048 * 4096),
    # B = 2048, D = 1024, F = 2048: W_gate, W_up, W_down once (D F each), x and y once (B D each)
    "swiglu_mlp": p * (3 * 1024 * 2048 + 2 * 2048 * 1024),
    # M = 4096, N = 2048, K = 1024, tiles 128 x 512 x 128: lhsT once per n tile (N/512 = 4),
    # rhs once per m tile (M/128 = 32), result once
    "nki_tutorial/1_tiled": p * (4 * 1024 * 4096 + 32 * 1024 * 2048 + 4096 * 2048),
    # lhsT hoisted out of n: once; rhs still once per m tile (32)
    "nki_tutorial/2_hoist_load": p * (1024 * 4096 + 32 * 1024 * 2048 + 4096 * 2048),
    # blocks of M = 256: rhs once per M block (4096/256 = 16); lhsT once
    "nki_tutorial/3_block_free_dimension": p * (1024 * 4096 + 16 * 1024 * 2048 + 4096 * 2048),
    # blocks 2048 x 1024 x 1024: rhs once, lhsT once per N block (2048/1024 = 2), result once
    "nki_tutorial/4_fully_optimized": p * (1024 * 2048 + 2 * 1024 * 4096 + 4096 * 2048),
}


def test_every_bundled_spec_has_a_hand_derived_q():
    assert set(EXPECTED) == set(spec.bundled_names())
    assert EXPECTED["attention_fused"] == 2 * MiB  # the spec's about: Q = 2·4·L·d bytes


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_hand_derived_q(name):
    # single nests and programs of several kernels alike, through the one pipeline
    rep = pipeline.analyze(pipeline.load(name), TRN2)
    assert rep.Q == EXPECTED[name]
    assert rep.counts.residency.fits and rep.feasible
