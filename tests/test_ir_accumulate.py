"""SBUF accumulation (``acc C += PS``): the NKI tutorial's fully optimized matmul adds each PSUM
result tile into an SBUF result tile across K-blocks. Numbers are closed forms from the shapes."""

import re

import pytest

from loopsim.targets import hardware
from loopsim.frontends import spec
from loopsim.sim import trace
from loopsim.base.errors import SpecError
from loopsim.ir.kernel import PRODUCE, USE
from loopsim.model.pipeline import analyze_kernel as analyze
from loopsim.targets import hardware as _hw_sheets
TRN = _hw_sheets.load("trn2-core")  # 128 SBUF partitions: costs per partition
FLAT = _hw_sheets.load("toy")  # a flat target: costs are bytes

TRN2 = hardware.load("trn2-core")
FULL = "nki_tutorial/4_fully_optimized"


def _analysis(name, sets, policy="as-written"):
    """The one place these tests analyse a kernel (switch to loopsim.model.pipeline when it lands)."""
    return analyze(spec.load_kernel(name, sets), TRN2, policy=policy)


@pytest.mark.parametrize("tibn", [2, 4, 8])
def test_fully_optimized_4096_cubed(tibn):
    M = N = K = 4096
    TILE_M, TILE_N, TILE_K, TIBM, TIBK = 128, 512, 128, 16, 8
    BLOCK_N, BLOCK_M, BLOCK_K = TILE_N * tibn, TILE_M * TIBM, TILE_K * TIBK
    rep = _analysis(FULL, {"M": M, "N": N, "K": K, "TILES_IN_BLOCK_N": tibn})
    # Q unchanged by the SBUF accumulation: lhsT once per N-block, rhs once, result written once
    assert rep.counts.Q == 2 * (M * K * (N // BLOCK_N) + K * N + M * N)
    t = rep.counts.tensor_map
    assert t["ps"].read_bytes == t["ps"].write_bytes == 0 and t["result"].read_bytes == 0
    # PSUM: each acc drains its accumulator, so one 128 x 512 fp32 tile (one 2 KiB bank) is live,
    # where accumulating across K-blocks in PSUM held all M/TILE_M x BLOCK_N/TILE_N of them
    ps = rep.ceilings.psum
    assert (ps.live, ps.tile_banks, ps.needed_banks, ps.fits) == (1, 1, 1, True)
    # Vector Engine: one TILE_M x TILE_N add per (m-tile, n-tile, K-block)
    adds = (M // TILE_M) * (N // TILE_N) * (K // BLOCK_K) * TILE_M * TILE_N
    assert ps.added_elements == ps.evacuated_elements == adds == M * N * (K // BLOCK_K)
    vec = rep.ceilings.get("vector")
    assert vec.T == pytest.approx(adds / TRN2.engine_roof("vector", "fp32"), rel=1e-12)
    # SBUF per partition, as written: the rhs block (BLOCK_K on partitions, BLOCK_N free), the lhsT
    # block, and all of M's result tiles (M/128 partition tiles x BLOCK_N) held from the first add
    # to their store: fits for TILES_IN_BLOCK_N = 2, 4, not for 8 (224 KiB per partition)
    peak = 2 * (BLOCK_K // 128) * BLOCK_N + 2 * (BLOCK_K // 128) * BLOCK_M + 2 * (M // 128) * BLOCK_N
    res = rep.counts.residency
    assert res.peak_cost == peak
    assert res.fits == (tibn in (2, 4)) and res.capacity_cost == 224 * 1024


def test_fully_optimized_default_shapes_replay_agrees():
    # at the tutorial's shapes (M = 4096, N = 2048, K = 1024, one K-block) LRU and OPT read each
    # input once (SBUF holds everything: 8 + 4 MiB inputs); as written lhsT is read N/BLOCK_N = 2x
    M, N, K = 4096, 2048, 1024
    aw = _analysis(FULL, {})
    assert aw.counts.Q == 2 * (2 * M * K + K * N + M * N)
    for policy in ("lru", "opt"):
        assert _analysis(FULL, {}, policy).counts.Q == 2 * (M * K + K * N + M * N)


def _tiny(tmp_path, nest, extra=""):
    p = tmp_path / "acc.toml"
    p.write_text(f'''[kernel]
name = "acc"
[params]
M = 256
N = 512
K = 512
[tensors]
A = {{ shape = ["K", "M"] }}
B = {{ shape = ["K", "N"] }}
C = {{ shape = ["M", "N"], output = true }}
PS = {{ shape = ["M", "N"], dtype = "fp32" }}
{extra}
[nest]
body = """
{nest}
"""
''')
    return str(p)


NEST = """for kb in K by 256:
  for m in M by 128:
    for n in N by 512:
      for k in 256 by 128:
        load A[kb + k, m]
        load B[kb + k, n]
        matmul PS[m, n] += A[kb + k, m] @ B[kb + k, n]
      acc C[m, n] += PS[m, n]
for m in M by 128:
  store C[m, :]"""


def test_trace_of_acc(tmp_path):
    # events per acc execution: PS read (from PSUM: dropped), C read, C write; the first read of
    # each C tile reads the memset zeros and is dropped. 2 K-blocks x 2 m-tiles of C.
    k = spec.load_kernel(_tiny(tmp_path, NEST))
    tr = trace.build(k)
    c = tr.grids["C"]
    on_c = (tr.obj >= c.offset) & (tr.obj < c.offset + c.n_blocks)
    kinds = tr.kind[on_c].tolist()
    # each execution then holds its SBUF tile (USE, PRODUCE again: hits, see trace.requests).
    # kb = 0: (PRODUCE, USE, PRODUCE) x 2 tiles; kb = 1: (USE, PRODUCE, USE, PRODUCE) x 2 tiles;
    # then 2 stores
    assert kinds.count(PRODUCE) == 8 and kinds.count(USE) == 6 and len(kinds) == 16
    ps = tr.grids["PS"]
    assert not ((tr.obj >= ps.offset) & (tr.obj < ps.offset + ps.n_blocks)).any()


def test_acc_spills_under_a_small_sbuf(tmp_path):
    # LRU with SBUF for only the working tiles: A tile 128x128 (256 B per partition), B panel
    # 128 x 512 (1 KiB), one C tile 128 x 512 bf16 (1 KiB). With capacity for the working set of
    # one step (A + B + C = 2.25 KiB) the other C tile is evicted between K-blocks: its partial
    # sum is written back (dirty) and read again, so C moves more than its size; with room for
    # both C tiles it is written exactly once.
    k = spec.load_kernel(_tiny(tmp_path, NEST))
    from loopsim.count.counts import count
    tight = count(k, policy="lru", capacity=256 + 1024 + 1024, target=TRN)
    roomy = count(k, policy="lru", capacity=1 << 20, target=TRN)
    C = 256 * 512 * 2
    assert roomy.tensor_map["C"].write_bytes == C and roomy.tensor_map["C"].read_bytes == 0
    # tight (2.25 KiB; C has two 128 x 512 blocks C0, C1, 128 KiB each): per (kb, m) the k loop
    # brings 2 A tiles and 2 B panels (2.5 KiB), so the other m's C block is always evicted. kb=0:
    # C0 made, evicted dirty (write 1), C1 made, evicted (write 2); kb=1: C0 read back (read 1),
    # updated, evicted (write 3); C1 read back (read 2), updated; store C0 (absent: written
    # without a fetch, dirty), store C1; the end writes both (writes 4, 5)
    blk = C // 2
    assert tight.tensor_map["C"].read_bytes == 2 * blk and tight.tensor_map["C"].write_bytes == 5 * blk


@pytest.mark.parametrize("nest, match", [
    (NEST.replace("acc C[m, n] += PS[m, n]", "acc C[m, n] += B[kb, n]"),
     "must be the output of a matmul"),
    (NEST.replace("acc C[m, n] += PS[m, n]", "acc C[m, n] PS[m, n]"),
     re.escape("expected 'acc C[m, n] += PS[m, n]'")),
    (NEST.replace("acc C[m, n] += PS[m, n]", "acc C[:, n] += PS[m, n]"),
     "the two tiles must have the same shape"),
])
def test_acc_errors(tmp_path, nest, match):
    with pytest.raises(SpecError, match=match):
        spec.load_kernel(_tiny(tmp_path, nest))


# --- an instruction holds all its tiles at once (trace.requests) --------------------------------

def test_opt_keeps_both_matmul_operands_resident_together():
    # C = A.B, M = 256, N = 1024, K = 256 (TM = 128, TN = 512, TK = 128), A and B loaded whole
    # before the loops, flat SBUF of exactly one instruction's tiles (A 32 KiB + B 128 KiB). The
    # trace repeats each instruction's operands after it (the hold): under OPT none of those
    # repeats may miss, i.e. no operand was evicted to admit the other. A plain cache replay of the
    # same requests without the hold (Belady alone) evicts a just-used stationary tile to admit
    # the moving one, which the Tensor Engine cannot do, and so reports fewer bytes.
    import sys
    from pathlib import Path
    sys.path.insert(0, str(Path(__file__).parent))
    from naive import opt
    from naive_nest import interpret, matmul_kernel
    from loopsim.count.counts import working_set

    k = matmul_kernel(256, 1024, 256, 128, 512, 128, order="mnk", a_level=0, b_level=0)
    tr = trace.build(k)
    held = []
    events, _, _ = interpret(k, held)
    assert list(zip(tr.obj.tolist(), tr.kind.tolist())) == events
    cost = tr.object_cost(FLAT).tolist()
    cap = working_set(k, FLAT)
    assert cap == 128 * 128 * 2 + 128 * 512 * 2
    obj, write = tr.obj.tolist(), tr.write.tolist()
    miss, _, _ = opt(obj, write, cost, cap)
    assert not any(m for m, h in zip(miss, held) if h)
    plain = [i for i, h in enumerate(held) if not h]
    miss0, _, _ = opt([obj[i] for i in plain], [write[i] for i in plain], cost, cap)
    size = tr.obj_bytes.tolist()
    fetched = lambda o, w, m: sum(size[x] for x, wx, mx in zip(o, w, m) if mx and not wx)  # noqa: E731
    with_hold = fetched(obj, write, miss)
    without = fetched([obj[i] for i in plain], [write[i] for i in plain], miss0)
    assert without < with_hold
    from loopsim.count.counts import count
    t = count(k, policy="opt", capacity=cap, target=FLAT).tensor_map  # the tool's OPT is the held replay
    assert t["A"].read_bytes + t["B"].read_bytes + t["C"].read_bytes == with_hold
