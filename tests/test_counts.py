"""Counting: W, per-tensor Q and r, compulsory Q, policies, residency — worked examples and
closed forms beside hypothesis properties."""

import math

import pytest
from hypothesis import assume, given, strategies as st

from loopsim.targets import hardware
from loopsim.frontends import spec
from loopsim.count.counts import count, live_peak, working_set
from loopsim.base.errors import CapacityError, SpecError
from loopsim.model.pipeline import analyze_kernel as analyze

from naive_nest import matmul_kernel, matmul_nests
from loopsim.targets import hardware as _hw_sheets
TRN = _hw_sheets.load("trn2-core")  # 128 SBUF partitions: costs per partition
FLAT = _hw_sheets.load("toy")  # a flat target: costs are bytes

TRN2 = hardware.load("trn2-core")


def _q(kernel, policy="as-written", capacity=None, target=FLAT):
    cap = capacity if capacity is not None else 10**12
    return count(kernel, policy=policy, capacity=cap, target=target)


# --- Day 2 of the curriculum: the 4096 x 4096 projection on one physical Trn2 core -------------

@pytest.mark.parametrize("B", [1, 2048])
def test_day2_projection_counts(B):
    D = F = 4096
    rep = analyze(spec.load_kernel("projection", {"B": B, "D": D, "F": F}), TRN2)
    # W = 2BDF; compulsory Q = p(BD + DF + BF) with p = 2 (bf16)
    assert rep.counts.flops == 2 * B * D * F
    assert rep.counts.compulsory_bytes == 2 * (B * D + D * F + B * F)
    # the careful tiling reads each input once: simulated Q equals the compulsory Q
    assert rep.counts.Q == rep.counts.compulsory_bytes
    assert rep.counts.residency.fits


def test_day2_decode_and_prefill_times():
    dec = analyze(spec.load_kernel("projection", {"B": 1}), TRN2).entitlement
    pre = analyze(spec.load_kernel("projection", {"B": 2048}), TRN2).entitlement
    # Q/BW = 33,570,816 / 0.375e12 = 89.5 us (memory-bound); W/P = 68.72e9 / 78.6e12 = 874 us
    assert dec.bound == "memory" and dec.T_best == pytest.approx(33_570_816 / 375e9)
    assert dec.T_best == pytest.approx(89.52e-6, rel=1e-3)
    assert pre.bound == "compute" and pre.T_best == pytest.approx(873.8e-6, rel=1e-3)
    assert pre.I == pytest.approx(1024)


# --- reuse in one op (Day 5): r_A and r_B of the tiled matmul ----------------------------------

def test_tutorial_matmul_as_written_closed_form():
    M = N = K = 1024
    TM, TN = 128, 512
    c = _q(spec.load_kernel("matmul"))
    t = c.tensor_map
    # as written, A is reloaded for each n and B for each m: r_A = N/TN, r_B = M/TM
    assert t["A"].r == N / TN and t["B"].r == M / TM
    assert c.Q == 2 * (N // TN * M * K + M // TM * K * N + M * N)


def test_only_working_tiles_fit_lru():
    # 512 KiB of SBUF (4 KiB per partition) holds the working tiles but not a column of A
    # across n or a row of B across m: r_A = N/TN = 2 and r_B = M/TM = 8
    k = spec.load_kernel("matmul")
    c = count(k, policy="lru", capacity=524288 // 128, target=TRN)
    assert (c.tensor_map["A"].r, c.tensor_map["B"].r) == (2, 8)


@pytest.mark.parametrize("policy", ["lru", "opt"])
def test_everything_fits_r_is_one(policy):
    c = count(spec.load_kernel("matmul"), policy=policy, capacity=TRN2.sbuf_partition_bytes,
              target=TRN)
    assert all(t.r == 1 for t in c.tensors if not t.output)
    assert c.Q == c.compulsory_bytes == 2 * 3 * 1024 * 1024


def test_hoisting_a_load_changes_q():
    # the same loops with A's column hoisted out of n: r_A = 1, r_B still M/TM
    c = _q(spec.load_kernel("matmul_hoisted"))
    assert c.tensor_map["A"].r == 1 and c.tensor_map["B"].r == 1024 / 128


def test_blocked_matmul_closed_form():
    # panels of BM x K and K x BN loaded once per (mb, nb): r_A = N/BN, r_B = M/BM
    c = _q(spec.load_kernel("matmul_blocked"))
    M, N, K, BM, BN = 2048, 2048, 1024, 512, 1024
    assert c.tensor_map["A"].r == N / BN and c.tensor_map["B"].r == M / BM
    assert c.Q == 2 * (N // BN * M * K + M // BM * K * N + M * N)


def test_partial_sums_cost_a_write_and_a_later_read():
    c = _q(spec.load_kernel("matmul_kouter"))
    M = N = K = 1024
    steps = K // 128
    C = c.tensor_map["C"]
    assert C.write_bytes == steps * M * N * 2
    assert C.read_bytes == (steps - 1) * M * N * 2
    # with SBUF to spare, lru keeps the partial sums on chip: written once, never read back
    big = count(spec.load_kernel("matmul_kouter"), policy="lru", capacity=224 * 1024, target=TRN)
    assert big.tensor_map["C"].write_bytes == M * N * 2 and big.tensor_map["C"].read_bytes == 0


# --- properties over random nests ----------------------------------------------------------------

def _as_written_reference(kernel):
    """Sum of executed load/store tile bytes, from the plain interpreter."""
    from naive_nest import interpret
    from loopsim.sim import trace
    from loopsim.ir.kernel import ACC, LOAD, STORE
    events, _, _ = interpret(kernel)
    ob = trace.build(kernel).obj_bytes
    return sum(int(ob[o]) for o, k in events if k in (LOAD, STORE, ACC))


@given(matmul_nests())
def test_as_written_q_is_the_sum_of_executed_transfers(kernel):
    assert _q(kernel).Q == _as_written_reference(kernel)


@given(matmul_nests(), st.sampled_from(["as-written", "lru", "opt"]), st.integers(0, 6))
def test_simulated_q_at_least_compulsory(kernel, policy, extra):
    need = working_set(kernel, FLAT)
    from loopsim.sim import trace
    tr = trace.build(kernel)
    need = max(need, int(tr.obj_bytes.max()))
    c = count(kernel, policy=policy, capacity=need * (1 + extra), trace=tr, target=FLAT)
    assert c.Q >= c.compulsory_bytes
    assert c.flops == 2 * math.prod(kernel.tensor_map["C"].shape) * kernel.tensor_map["A"].shape[0]


@given(matmul_nests(), st.lists(st.integers(1, 8), min_size=2, max_size=4))
def test_lru_q_never_rises_with_capacity(kernel, factors):
    from loopsim.sim import trace
    tr = trace.build(kernel)
    base = max(working_set(kernel, FLAT), int(tr.obj_bytes.max()))
    qs = [count(kernel, policy="lru", capacity=base * f, trace=tr, target=FLAT).Q for f in sorted(factors)]
    assert qs == sorted(qs, reverse=True)


@given(st.integers(1, 4), st.integers(1, 4), st.integers(1, 4), st.integers(1, 3))
def test_k_innermost_reuse_closed_forms(mt, nt, kt, sbuf_tiles):
    # k-innermost tutorial nest with whole tiles (no raggedness): when only the working tiles
    # fit (capacity = one A tile + one B tile + one C tile), lru gives r_A = N/TN, r_B = M/TM;
    # when everything fits, r = 1.
    TM, TN, TK = 32, 64, 32
    M, N, K = mt * TM, nt * TN, kt * TK
    k = matmul_kernel(M, N, K, TM, TN, TK)
    tile = lambda r, c: r * c * 2
    small = tile(TK, TM) + tile(TK, TN)
    # the working tiles fit but not one more B tile, and A's column does not survive a pass of n
    assume(kt > 1 or nt > 1)
    c = count(k, policy="lru", capacity=small + tile(TM, TN), target=FLAT)
    if kt > 1:
        assert c.tensor_map["A"].r == nt
    if kt > 1 or nt > 1:
        assert c.tensor_map["B"].r == mt
    allfit = count(k, policy="opt", capacity=10 * (M * K + K * N + M * N) * 2, target=FLAT)
    assert allfit.tensor_map["A"].r == 1 and allfit.tensor_map["B"].r == 1


# --- residency ------------------------------------------------------------------------------------

def test_per_partition_residency_of_projection_prefill():
    # x^T: D/128 = 32 partition tiles x B = 2048 x 2 B = 128 KiB per partition; a W panel of
    # D x TF: 32 x 512 x 2 = 32 KiB; the y staging tile TB x TF with B on partitions: 1 KiB
    k = spec.load_kernel("projection", {"B": 2048})
    assert live_peak(k, TRN) == 128 * 1024 + 32 * 1024 + 1024


def test_fits_in_total_but_not_per_partition():
    # x^T with only D = 64 rows on the partitions: each of the 64 used partitions holds B x 2
    # bytes and the other 64 hold nothing. B = 131072 tokens: 16 MiB of x fits the 28 MiB SBUF
    # as a flat pool, but 256 KiB per partition exceeds the 224 KiB each partition has.
    B, D, F = 131072, 64, 512
    k = spec.load_kernel("projection", {"B": B, "D": D, "F": F, "TD": 64})
    flat = live_peak(k, FLAT)
    per_partition = live_peak(k, TRN)
    # flat: x (B*D*2) + a W panel (D*TF*2) + a y tile (TB*TF*2)
    assert flat == B * D * 2 + D * 512 * 2 + 128 * 512 * 2 <= TRN2.sbuf_bytes
    # per partition: x (B*2) + W panel (512*2) + y tile (512*2)
    assert per_partition == B * 2 + 512 * 2 + 512 * 2 > TRN2.sbuf_partition_bytes
    rep = analyze(k, TRN2)
    assert not rep.counts.residency.fits
    assert "does not fit" in rep.counts.residency.verdict()


def test_capacity_too_small_says_how_much_is_needed():
    # one instruction needs an A tile (256 B/partition) and a B tile (1 KiB/partition): a replay
    # cannot run in less, and says how much it needs
    with pytest.raises(CapacityError, match=r"needs 1,280 bytes per partition"):
        analyze(spec.load_kernel("matmul"), TRN2, sbuf_bytes=1000, policy="lru")
    # as written the nest is still counted; its verdict says it cannot run, naming the buffers
    # (1000 // 128 = 7 bytes per partition; B's 512-wide bf16 tile takes 1,024 of them)
    a = analyze(spec.load_kernel("matmul"), TRN2, sbuf_bytes=1000)
    assert not a.feasible
    (why,) = a.infeasible_reasons
    assert why.startswith("SBUF: needs ") and "has 7" in why and "B 1,024" in why


def test_loops_that_miss_part_of_the_product_are_refused():
    k = spec.load_kernel("matmul")
    from dataclasses import replace
    from loopsim.ir.kernel import Loop
    outer = k.body[0]
    half = replace(outer, extent=512)
    bad = replace(k, body=(half,))
    with pytest.raises(SpecError, match="shapes imply"):
        count(bad, capacity=10**9, target=FLAT)


@given(matmul_nests(max_dim=200), st.sampled_from(["lru", "opt"]), st.integers(0, 4))
def test_kernel_counts_match_the_reference_simulator(kernel, policy, extra):
    # the whole path (nest -> trace -> numba replay -> per-tensor bytes) against the plain-Python
    # LRU/Belady of tests/naive.py fed the same requests, on random small nests and capacities
    import naive
    from loopsim.sim import trace
    tr = trace.build(kernel)
    cost = tr.object_cost(FLAT)
    cap = max(working_set(kernel, FLAT), int(cost.max())) * (1 + extra)
    c = count(kernel, policy=policy, capacity=cap, trace=tr, target=FLAT)
    miss, writebacks, _ = getattr(naive, policy)(tr.obj.tolist(), tr.write.tolist(), cost.tolist(), cap)
    reads = {t.name: 0 for t in kernel.tensors}
    writes = dict(reads)
    for i, (o, w) in enumerate(zip(tr.obj.tolist(), tr.write.tolist())):
        if miss[i] and not w:
            reads[tr.tensor_names[tr.obj_tensor[o]]] += int(tr.obj_bytes[o])
    for o, n in enumerate(writebacks):
        writes[tr.tensor_names[tr.obj_tensor[o]]] += n * int(tr.obj_bytes[o])
    assert {t.name: t.read_bytes for t in c.tensors} == reads
    assert {t.name: t.write_bytes for t in c.tensors} == writes
