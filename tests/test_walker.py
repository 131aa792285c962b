"""The walker's fast loops (whole iterations at once, one add per request) emit exactly what its
statement-by-statement path emits, on every bundled tiling at random shapes (ragged edges,
partial sums, holds, SBUF accumulators, on-chip intermediates, blocked loops, LNC splits),
whole or in chunks that stop inside a fast loop. The statement-by-statement path itself is
checked against the plain-Python interpreter in test_trace.py and test_stream.py.

Short traces run the walker and the replay kernels as plain Python (loopsim/sim/_jit.py): the
twins give what the compiled functions give, request for request and count for count."""

import contextlib
import re
from pathlib import Path

import numpy as np
from hypothesis import HealthCheck, assume, given, settings, strategies as st

from loopsim.count import lnc
from loopsim.frontends import program, spec
from loopsim.sim import trace
from loopsim.sim import State, _jit

from naive_nest import interpret, matmul_nests

TILINGS = sorted(str(p.relative_to(Path(spec.__file__).parents[2] / "tilings"))[:-5]
                 for p in (Path(spec.__file__).parents[2] / "tilings").rglob("*.toml"))
#: tilings whose token loop an LNC split can take (a matmul with a token index)
SPLITTABLE = ("matmul", "matmul_hoisted", "matmul_kouter", "matmul_small_tiles", "projection",
              "nki_tutorial/1_tiled", "nki_tutorial/4_fully_optimized")


@st.composite
def bundled_kernels(draw):
    """A kernel of a bundled tiling with its problem dimensions drawn small (tiles and blocks as
    the spec has them), LNC-split in two when the tiling allows."""
    name = draw(st.sampled_from(TILINGS))
    sf = spec.read(name)
    sets = {p: draw(st.integers(1, 400)) for p, v in sf.data["params"].items()
            if isinstance(v, int) and v >= 256 and not re.match(r"T|B.", p)}
    if program.is_program(sf):
        stages = program.load(name, sets).stages
        return draw(st.sampled_from([s.kernel for s in stages]))
    k = spec.load_kernel(name, sets)
    if name in SPLITTABLE and draw(st.booleans()):
        k = lnc.with_split(k, 2)
    return k


def _walk(nest, chunk):
    w = trace.Walker(nest)
    obj = np.empty(max(chunk, nest.max_events), nest.id_dtype)
    kind = np.empty(obj.size, np.int8)
    got_o, got_k = [], []
    while not w.done:
        m = w.fill(obj, kind)
        got_o.append(obj[:m].copy())
        got_k.append(kind[:m].copy())
    return np.concatenate(got_o), np.concatenate(got_k), w.flops, w.instructions


def _same(k, chunk):
    """The fast walker, whole and in chunks, against the statement-by-statement one."""
    slow = trace.build(k, trace.compile_nest(k, fast=False))
    nest = trace.compile_nest(k)
    fast = trace.build(k, nest)
    want = (slow.obj.tolist(), slow.kind.tolist(), slow.flops, slow.instructions)
    assert (fast.obj.tolist(), fast.kind.tolist(), fast.flops, fast.instructions) == want
    o, kd, f, i = _walk(nest, chunk)
    assert (o.tolist(), kd.tolist(), f, i) == want
    return nest


@settings(max_examples=50, deadline=None)
@given(bundled_kernels(), st.integers(1, 300))
def test_fast_loops_emit_the_statement_by_statement_trace(kernel, chunk):
    _same(kernel, chunk)


@settings(max_examples=30, deadline=None)
@given(matmul_nests(max_dim=200), st.integers(1, 100))
def test_fast_loops_emit_the_interpreter_s_trace(kernel, chunk):
    nest = _same(kernel, chunk)
    events, flops, instructions = interpret(kernel)
    o, k, f, i = _walk(nest, chunk)
    assert list(zip(o.tolist(), k.tolist())) == events
    assert (f, i) == (flops, instructions)


def test_the_benchmark_nest_runs_its_innermost_loop_fast():
    # matmul with 32^3 tiles: the k loop's body (two loads, the matmul: its operands, their hold
    # and the accumulation) is seven requests of one block each, ids advancing by the tile grid
    k = spec.load_kernel("matmul", {"M": 320, "N": 256, "K": 256, "TM": 32, "TK": 32, "TN": 32})
    nest = trace.compile_nest(k)
    assert nest.fast[:, 0].tolist() == [-1, -1, 0] and not nest.general
    # A is K x M (8 x 10 blocks, A's ids first), B is K x N (8 x 8): along k, A advances by its
    # 10 blocks per row and B by 8; C (10 x 8) stays put while k runs (a partial sum in PSUM)
    assert nest.rows[:, 1].tolist() == [10, 8, 10, 8, 10, 8, 0]
    assert nest.rows[:, 3].tolist() == [1, 1, 1, 1, 1, 1, 0]  # only the accumulation has state
    # chunks that end inside the k loop, at every offset of an iteration, resume where they stopped
    for chunk in (7, 8, 9, 10, 11, 12, 13, 20, 41, 100):
        _same(k, chunk)


@contextlib.contextmanager
def _plain_budget(requests):
    """Up to ``requests`` request slots through the plain twins, for the block."""
    _jit.PLAIN_BUDGET = requests
    try:
        yield
    finally:
        _jit.PLAIN_BUDGET = 0  # compiled, as tests/conftest.py has it


def _plain_walk(kernel):
    nest = trace.compile_nest(kernel)
    w = trace.Walker(nest)
    w._gen = _jit.plain("loopsim.sim._gen")
    obj = np.empty(nest.slots + nest.max_events, nest.id_dtype)
    kind = np.empty(obj.size, np.int8)
    m = w.fill(obj, kind)
    return obj[:m].tolist(), kind[:m].tolist(), w.flops, w.instructions


@settings(max_examples=25, deadline=None)
@given(st.one_of(bundled_kernels(), matmul_nests(max_dim=200)))
def test_plain_walker_emits_the_compiled_trace(kernel):
    tr = trace.build(kernel)  # compiled (tests/conftest.py)
    assert _plain_walk(kernel) == (tr.obj.tolist(), tr.kind.tolist(), tr.flops, tr.instructions)
    if tr.dead is not None:
        with _plain_budget(1 << 40):  # trace.dead_flags through the twin
            assert trace.dead_flags(tr.obj, trace.compile_nest(kernel)).tolist() == tr.dead.tolist()


@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 11), st.booleans(), st.booleans()), min_size=1, max_size=120),
       st.lists(st.integers(0, 6), min_size=12, max_size=12), st.integers(1, 20),
       st.sampled_from(["lru", "opt"]))
def test_plain_replay_kernels_count_what_the_compiled_ones_count(reqs, cost, capacity, policy):
    obj = np.array([o for o, _, _ in reqs], np.int32)
    write = np.array([w for _, w, _ in reqs])
    dead = np.array([d for _, _, d in reqs])
    cost = np.array(cost, np.int64)
    out = []
    for plain in (False, True):
        with _plain_budget(1 << 40 if plain else 0):
            st_ = State(policy, cost, capacity, len(reqs), requests=len(reqs))
        assert st_._k.__name__ == "loopsim.sim._kernels" + ("_plain" if plain else "")
        miss = np.empty(len(reqs), bool)
        nu = None
        if policy == "opt":
            nu = np.empty(len(reqs), np.int64)
            st_.next_uses(obj, 0, np.full(cost.size, len(reqs), np.int64), nu)
        st_.feed(obj, write, dead, miss, nu)
        r = st_.result(cost, miss)
        out.append((r.miss.tolist(), r.writebacks.tolist(), r.fetches.tolist(), r.peak_cost, r.misses))
    assert out[0] == out[1]


def test_a_process_compiles_once_its_plain_budget_is_spent(monkeypatch):
    # a sweep replaying one short trace many times: the first replays run plain, then compiled
    monkeypatch.setattr(_jit, "PLAIN_BUDGET", 1000)
    monkeypatch.setattr(_jit, "_spent", 0)
    got = [_jit.kernels("loopsim.sim._kernels", 300).__name__ for _ in range(5)]
    assert got == ["loopsim.sim._kernels_plain"] * 3 + ["loopsim.sim._kernels"] * 2
    assert _jit._spent == 900


def _compiled_walk(nest, general: bool):
    """The compiled walker's trace of ``nest`` through its general variant (``axes``/``terms``
    given) or its simple one (None: the statement-level checks pruned)."""
    from loopsim.sim import _gen

    w = trace.Walker(nest)
    obj = np.empty(nest.slots + nest.max_events, nest.id_dtype)
    kind = np.empty(obj.size, np.int8)
    axes, terms = (nest.axes, nest.terms) if general else (None, None)
    m = _gen.walk(nest.code, nest.loops, nest.edge_terms, nest.stmts, nest.accs, axes, terms, nest.lin,
                  nest.fast, nest.rows, w.cnt, w.ival, w.last_kind, w.st, w.scratch, obj, kind)
    return obj[:m].tolist(), kind[:m].tolist(), int(w.st[1]), int(w.st[2])


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.filter_too_much])
@given(st.one_of(bundled_kernels(), matmul_nests(max_dim=200)))
def test_simple_nests_walk_alike_through_both_compiled_variants(kernel):
    # a process that compiled the general variant runs simple nests on it (trace.Walker): for a
    # nest without statement-level checks both variants emit the same requests, FLOPs and
    # instructions, and build() (whichever variant it took) gives them too (about one drawn
    # nest in eight is simple: the rest are filtered out)
    nest = trace.compile_nest(kernel)
    assume(not nest.general)
    simple = _compiled_walk(nest, False)
    assert _compiled_walk(nest, True) == simple
    tr = trace.build(kernel, nest)
    assert (tr.obj.tolist(), tr.kind.tolist(), tr.flops, tr.instructions) == simple


def test_the_general_variant_serves_simple_nests_once_loaded():
    # a simple nest takes the None variant until the general one is in the process; then it
    # runs on that one (no second compile); the plain twin has no variants
    import os

    import pytest

    from loopsim.sim import _gen

    if os.environ.get("NUMBA_DISABLE_JIT") == "1":
        pytest.skip("no compiled variants under NUMBA_DISABLE_JIT")
    simple = trace.compile_nest(spec.load_kernel("matmul"))
    assert not simple.general and trace.compile_nest(spec.load_kernel("matmul_blocked")).general
    trace.build(spec.load_kernel("matmul_blocked"))
    assert trace._has_general(_gen)
    assert not trace._has_general(_jit.plain("loopsim.sim._gen"))
