"""Closed-form Q (loopsim.count.formula) against the curriculum, hand derivations and the simulator."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from loopsim.ir import expr
from loopsim.targets import hardware
from loopsim.frontends import spec
from loopsim.cli.main import main
from loopsim.count.counts import count
from loopsim.count.formula import as_written, derive, lru_regimes

TRN2 = hardware.load("trn2-core")
FAMILY = ["matmul", "matmul_hoisted", "matmul_kouter", "matmul_blocked", "matmul_small_tiles"]


def _sim(kernel, policy="as-written", capacity=2**62):
    c = count(kernel, policy=policy, capacity=capacity, target=TRN2)
    return {t.name: (t.read_bytes, t.write_bytes) for t in c.tensors}


def test_tutorial_matmul_formula_is_the_curriculum_one():
    # Day 5: Q = p(r_A*MK + r_B*KN + MN) with, for loops m, n, k and both loads inside k,
    # r_A = ceil(N/TN) and r_B = ceil(M/TM). At 1024^3, TM=128, TN=512: r_A = 2, r_B = 8,
    # Q = 2*(2 + 8 + 1)*1024^2 = 23,068,672 bytes.
    d = derive("matmul", {}, TRN2)
    t = {x.name: x for x in d.as_written.tensors}
    assert d.as_written.claimed
    assert t["A"].r_text == "ceil(N/TN)" and t["B"].r_text == "ceil(M/TM)"
    assert d.as_written.Q == 2 * 11 * 1024**2
    assert sum(r + w for r, w in d.simulated_as_written.values()) == 2 * 11 * 1024**2
    # the same text evaluates like the hand-written formula of the acceptance check, any shape
    hand = expr.parse("2*(ceil(N/TN)*M*K + ceil(M/TM)*K*N + M*N)")
    ours = expr.parse(d.as_written.q_text)
    for env in ({"M": 1000, "N": 700, "K": 300, "TM": 128, "TK": 128, "TN": 512},
                {"M": 1, "N": 513, "K": 7, "TM": 64, "TK": 32, "TN": 256}):
        assert ours.evaluate(env) == hand.evaluate(env)


@pytest.mark.parametrize("b,q", [
    # Day 2: decode B = 1: Q = 2*(1*4096 + 4096*4096 + 1*4096) = 33,570,816 bytes;
    # prefill B = 2048: Q = 2*(2048*4096 + 4096*4096 + 2048*4096) = 67,108,864 bytes.
    (1, 2 * (4096 + 4096 * 4096 + 4096)),
    (2048, 2 * (2048 * 4096 + 4096 * 4096 + 2048 * 4096)),
])
def test_projection_day2(b, q):
    d = derive("projection", {"B": b}, TRN2)
    assert d.as_written.claimed and d.as_written.Q == q
    assert d.as_written.q_text == "2*B*D + 2*D*F + 2*B*F"


def test_kouter_partial_sums_by_hand():
    # k outermost, C stored inside k: ceil(K/TK) stores per C tile and one partial-sum read-back
    # before each store but the first. K = 1000, TK = 128: 8 stores, 7 read-backs of all of C.
    d = derive("matmul_kouter", {"K": 1000}, TRN2)
    c = {t.name: t for t in d.as_written.tensors}["C"]
    assert c.write_bytes == 8 * 1024 * 1024 * 2
    assert c.read_bytes == 7 * 1024 * 1024 * 2
    assert c.read_text == "2*M*N*(ceil(K/TK) - 1)"


def test_hoisted_working_tiles_by_hand():
    # matmul_hoisted loads the column panel A[:, m] outside n. While only the working tiles fit,
    # the panel is loaded (r = 1) and each use fetches its tile again (r = ceil(N/TN) = 2), and the
    # B panel likewise (ceil(M/TM) loads + ceil(M/TM) uses = 16): Q = 2*(3*MK + 16*KN + MN).
    d = derive("matmul_hoisted", {}, TRN2)
    w = d.regimes.working
    assert w.claimed
    assert w.Q == 2 * (3 + 16 + 1) * 1024**2
    kern = spec.load_kernel("matmul_hoisted")
    assert sum(map(sum, _sim(kern, "lru", d.regimes.need).values())) == w.Q


def _shapes(name):
    tiles = {"TM": st.sampled_from([32, 64, 128]), "TK": st.sampled_from([32, 64, 128]),
             "TN": st.sampled_from([64, 128, 256, 512]), "M": st.one_of(st.integers(1, 1200), st.sampled_from([256, 512, 1024])),
             "N": st.one_of(st.integers(1, 1200), st.sampled_from([1024, 2048])),
             "K": st.one_of(st.integers(1, 700), st.sampled_from([256, 512]))}
    if name == "matmul_blocked":
        tiles |= {"BM": st.sampled_from([256, 512]), "BN": st.sampled_from([1024, 2048])}
    return st.fixed_dictionaries(tiles)


@st.composite
def cases(draw):
    name = draw(st.sampled_from(FAMILY))
    return name, draw(_shapes(name))


@settings(max_examples=60, deadline=None)
@given(cases())
def test_as_written_formula_equals_simulator(case):
    # exact for every shape and tile, ragged last tiles included
    name, sets = case
    sf = spec.read(name)
    params = spec.bind_params(sf, sets)
    kern = spec.kernel_from(sf, params)
    f = as_written(sf, params, kern)
    assert f.claimed
    sim = _sim(kern)
    for t in f.tensors:
        assert (t.read_bytes, t.write_bytes) == sim[t.name]
        # the per-tensor formula text evaluates to the same bytes
        assert expr.parse(t.read_text).evaluate(params) == t.read_bytes


@settings(max_examples=40, deadline=None)
@given(cases(), st.floats(0, 1), st.integers(0, 3000))
def test_lru_regimes_equal_separate_replays(case, frac, extra):
    # Inside the working-tiles regime and inside the everything-fits regime the closed forms equal
    # an LRU replay (loopsim.sim.replay through counts.count) at a capacity drawn in that regime.
    name, sets = case
    sf = spec.read(name)
    params = spec.bind_params(sf, sets)
    kern = spec.kernel_from(sf, params)
    reg = lru_regimes(sf, params, TRN2, kernel=kern)
    assert reg.all.claimed
    # The working-tiles form is claimed only where the stack pass confirms it at the smallest
    # capacity. It is refused where ragged or degenerate tiles let a reuse fit beside the working
    # tiles (a hoisted panel that is the single tile it feeds; a one-row last tile); with at least
    # two tiles (blocks) in every dimension and no ragged tiles the bundled family is claimed.
    tiles = [("M", "TM"), ("N", "TN"), ("K", "TK")] + \
        ([("M", "BM"), ("N", "BN")] if name == "matmul_blocked" else [])
    if all(sets[d] >= 2 * sets[t] and sets[d] % sets[t] == 0 for d, t in tiles):
        assert reg.working.claimed
    hi = reg.working_below if reg.working_below is not None else reg.need + 5000
    c_work = reg.need + int(frac * (hi - 1 - reg.need))
    for formula, cap in ((reg.working, c_work), (reg.all, reg.all_from + extra)):
        if not formula.claimed:
            continue
        sim = _sim(kern, "lru", cap)
        for t in formula.tensors:
            assert (t.read_bytes, t.write_bytes) == sim[t.name], (formula.regime, cap, t.name)
    # below the first reuse distance beyond it, LRU does not yet reach the everything-fits Q
    if reg.working_below is not None and reg.working.Q != reg.all.Q:
        assert reg.all_from >= reg.working_below


def test_regime_of_the_capacity():
    sf = spec.read("matmul")
    params = spec.bind_params(sf, {})
    reg = lru_regimes(sf, params, TRN2)
    assert reg.regime == "all"  # 28 MiB holds everything the tutorial reuses
    small = lru_regimes(sf, params, TRN2, sbuf_bytes=reg.need * 128)
    assert small.regime == "working" and small.simulated_Q == small.working.Q
    mid = lru_regimes(sf, params, TRN2, sbuf_bytes=(reg.all_from - 1) * 128)
    assert mid.regime == "between"


def test_formula_command(capsys):
    assert main(["formula", "matmul", "-H", "trn2-core"]) == 0
    out = capsys.readouterr().out
    assert "2*K*M*ceil(N/TN) + 2*K*N*ceil(M/TM) + 2*M*N" in out
    assert f"= {2 * 11 * 1024**2:,} bytes" in out
    assert main(["formula", "matmul", "-H", "trn2-core", "--json"]) == 0
    import json

    d = json.loads(capsys.readouterr().out)
    assert d["as_written"]["Q_bytes"] == d["as_written"]["simulated_Q"] == 2 * 11 * 1024**2
    assert d["lru"]["regime"] == "all" and d["lower_bound_Q"] == 3 * 2 * 1024**2


def test_formula_command_bad_input(capsys):
    assert main(["formula", "matmul", "-H", "trn2-core", "--set", "Z=3"]) == 2
    assert "no parameter Z" in capsys.readouterr().err


@pytest.mark.parametrize("name", [n for n in spec.bundled_names()
                                  if "body" in spec.read(n).data.get("nest", {})])
def test_every_bundled_nest_is_claimed_and_agrees(name):
    # every shipped single-nest spec: the as-written closed form is claimed and equals the count
    d = derive(name, {}, TRN2)
    assert d.as_written.claimed, d.as_written.reason
    for t in d.as_written.tensors:
        assert (t.read_bytes, t.write_bytes) == d.simulated_as_written[t.name]


def test_nki_tutorial_4_stores_after_the_reduction():
    # the fully optimised tutorial kernel stores each result M-tile in a sibling loop after the
    # kb loop: C written once, no partial sums; r_lhsT = ceil(N/BLOCK_N), r_rhs = 1.
    d = derive("nki_tutorial/4_fully_optimized", {}, TRN2)
    t = {x.name: x for x in d.as_written.tensors}
    assert t["result"].read_bytes == 0 and t["result"].write_bytes == 2 * 4096 * 2048
    assert t["lhsT"].read_bytes == 2 * 1024 * 4096 * 2  # N / BLOCK_N = 2048 / 1024
    assert t["rhs"].read_bytes == 2 * 1024 * 2048


def test_program_specs_are_refused(capsys):
    assert main(["formula", "mlp_fused", "-H", "trn2-core"]) == 2
    assert "a program of ops" in capsys.readouterr().err


def test_split_nest_reports_the_split_kernels_simulated_q(split_projection):
    # projection with [lnc] split = "b" on trn2-lnc2 (B = 256, D = F = 1024, bf16), SPMD: each core
    # loads its half of x (x[:, :] outside the b loop loads the core's slice of B) and all of W (no
    # B dimension: loaded by both), and writes its half of y: Q = |x| + 2|W| + |y| = 524,288 +
    # 2*2,097,152 + 524,288 bytes, as written and under LRU alike (each core starts from an empty
    # SBUF). One core alone would move 3,145,728. The closed forms are not claimed; the simulated
    # values must be the split's.
    x, w, y = 256 * 1024 * 2, 1024 * 1024 * 2, 256 * 1024 * 2
    q = x + 2 * w + y
    d = derive(split_projection, {"B": 256, "D": 1024, "F": 1024}, hardware.load("trn2-lnc2"))
    assert not d.as_written.claimed and "split across cores" in d.as_written.reason
    assert sum(r + w_ for r, w_ in d.simulated_as_written.values()) == q
    assert d.regimes.simulated_Q == q
    assert d.as_dict()["as_written"]["agrees"] is False
    from loopsim.cli.commands.formula import format_text

    text = format_text(d, hardware.load("trn2-lnc2"))
    assert f"simulated Q = {q:,} bytes (DIFFERS)" in text
    # the bound is the compulsory x + W + y; Q / bound from the simulated Q, not the unclaimed form
    ratio = q / (x + w + y)
    assert f"as written Q / bound = {ratio:.3g}; LRU Q / bound = {ratio:.3g}" in text
