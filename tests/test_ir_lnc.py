"""LNC=2 as SPMD: each physical core runs the kernel on its slice of the split dimension.
The curriculum's Day 6 projection on one LNC=2 logical core, D = F = 4096 bf16: x and y have the
token dimension B (each core moves its half), W does not (each core loads all of it: it crosses
HBM twice)."""

import pytest

from loopsim.targets import hardware
from loopsim.count import lnc
from loopsim.frontends import spec
from loopsim.base.errors import SpecError
from loopsim.model.pipeline import analyze_kernel as analyze

LNC2 = hardware.load("trn2-lnc2")


def _analysis(kernel, policy="as-written"):
    """The one place these tests analyse a kernel (switch to loopsim.model.pipeline when it lands)."""
    return analyze(kernel, LNC2, policy=policy)


@pytest.mark.parametrize("B", [1, 2048])
def test_day6_projection_lnc2(B):
    D = F = 4096
    W = 2 * B * D * F
    # Day 6: x and y split by token across the two cores, W loaded unconditionally by both
    Q = 2 * (B * D + 2 * D * F + B * F)
    k = lnc.with_split(spec.load_kernel("projection", {"B": B}), 2)
    assert lnc.split_loop(k).var == "b"
    for policy in ("as-written", "lru", "opt"):
        rep = _analysis(k, policy)
        assert (rep.counts.flops, rep.counts.Q) == (W, Q)
        assert rep.entitlement.I == W / Q
    # decode B = 1: Q = 2 (4096 + 2 * 16,777,216 + 4096) = 67,125,248, I = 0.4999 (one core alone:
    # 33,570,816 and 1.0); prefill B = 2048: Q = 100,663,296, I = 682.7 (one core: 67,108,864, 1024)
    assert (Q, round(W / Q, 4)) == {1: (67_125_248, 0.4999), 2048: (100_663_296, 682.6667)}[B]


def test_a_whole_tensor_load_loads_the_cores_slice():
    # as written, each core holds its half of x (x[:, :] outside the b loop): per partition
    # D/128 x B/2 x 2 bytes, beside one W panel (D/128 x TF x 2) and a staged y tile (TF x 2)
    k = lnc.with_split(spec.load_kernel("projection"), 2)
    B, D, TF = 2048, 4096, 512
    rep = _analysis(k)
    assert rep.counts.residency.peak_cost == (D // 128) * (B // 2) * 2 + (D // 128) * TF * 2 + TF * 2
    assert rep.counts.tensor_map["x"].read_bytes == B * D * 2


def test_ragged_split_slices_every_tensor_of_the_dimension():
    # B = 384 (3 token tiles) over 2 cores: shares of 2 and 1 tiles (256 and 128 tokens); the
    # slices still cover x once, W is loaded by both cores
    B, D, F = 384, 1024, 1024
    k = lnc.with_split(spec.load_kernel("projection", {"B": B, "D": D, "F": F}), 2)
    t = _analysis(k).counts.tensor_map
    assert (t["x"].read_bytes, t["W"].read_bytes, t["y"].write_bytes) == (2 * B * D, 2 * 2 * D * F, 2 * B * F)


def test_another_loop_over_the_split_dimension_is_refused(tmp_path):
    text = spec.locate("projection").read_text().replace(
        "load x[:, :]\n", "for b2 in B by TB:\n  load x[b2, :]\n")
    p = tmp_path / "p.toml"
    p.write_text(text)
    k = lnc.with_split(spec.load_kernel(str(p)), 2)
    with pytest.raises(SpecError, match="which loop b splits across cores, with b2"):
        _analysis(k)


def test_sibling_loops_over_the_split_dimension_split_together():
    # the tutorial's fully optimized kernel walks M twice: the compute loop (by BLOCK_M) and the
    # store loop (by TILE_M). Split on m, each core takes M/2 = 2048 rows in both: lhsT and result
    # are sliced (lhsT still read N/BLOCK_N = 2 times), rhs has no M and is loaded by both cores
    M, N, K, BLOCK_N, BLOCK_K, TIBK = 4096, 2048, 1024, 1024, 1024, 8
    k = lnc.with_split(spec.load_kernel("nki_tutorial/4_fully_optimized"), 2)
    rep = _analysis(k)
    t = rep.counts.tensor_map
    assert (t["lhsT"].read_bytes, t["rhs"].read_bytes, t["result"].write_bytes) == \
        (2 * M * K * (N // BLOCK_N), 2 * 2 * K * N, 2 * M * N)
    # per core, per partition: the rhs block (TIBK x BLOCK_N), the core's lhsT block (TIBK x M/2)
    # and its result accumulators (M/2/128 tiles x BLOCK_N), bf16
    assert rep.counts.residency.peak_cost == 2 * (TIBK * BLOCK_N + TIBK * M // 2 + (M // 2 // 128) * BLOCK_N)
    assert rep.ceilings.psum.live == 1


def test_sibling_splits_must_give_the_same_slices(tmp_path):
    # a second loop over B (1536 of the 2048 tokens) would give each core 768 tokens, not 1024
    text = spec.locate("projection").read_text().replace(
        "    store y[b, f]\n", "  for b in 1536 by TB:\n    store y[b, f]\n")
    p = tmp_path / "p.toml"
    p.write_text(text)
    with pytest.raises(SpecError, match="different slices"):
        _analysis(lnc.with_split(spec.load_kernel(str(p)), 2))
