"""Chunked generation and replay (loopsim.sim.stream, loopsim.sim.State) against whole-trace
replay, and the int32 / int64 id paths against each other."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import naive
from naive_nest import interpret, matmul_kernel, matmul_nests
from loopsim.frontends import program, spec
from loopsim.sim import trace
from loopsim.count.counts import count
from loopsim.base.errors import SpecError
from loopsim.ir.kernel import Access, Kernel, Load, Loop, Matmul, Store, Tensor
from loopsim.sim import State, next_use, replay
from loopsim.targets import hardware as _hw_sheets
FLAT = _hw_sheets.load("toy")  # a flat target: costs are bytes
TRN = _hw_sheets.load("trn2-core")  # 128 SBUF partitions: costs per partition


@settings(max_examples=40, deadline=None)
@given(matmul_nests(max_dim=160), st.sampled_from(["as-written", "lru", "opt"]),
       st.integers(1, 40), st.integers(0, 4))
def test_chunked_count_equals_whole_trace_count(kernel, policy, chunk, extra):
    """Every chunk size (down to one statement per chunk) gives the counts of one whole replay."""
    tr = trace.build(kernel)
    cost = tr.object_cost(TRN)
    cap = int(cost.max()) * (1 + extra)
    cap = max(cap, 4 * int(cost.max()))  # at least one instruction's three tiles and a store
    whole = count(kernel, policy=policy, capacity=cap, target=TRN, trace=tr)
    assert count(kernel, policy=policy, capacity=cap, target=TRN, chunk=chunk) == whole


@pytest.mark.parametrize("policy", ["lru", "opt"])
@pytest.mark.parametrize("kib", [4, 6, 40])
def test_chunked_count_frees_on_chip_intermediates_as_the_whole_trace_does(policy, kib):
    """The fused MLP: g lives only on chip and is freed at its last request; a chunked replay
    finds that last request in its first pass and must free it at the same place."""
    k = program.load("mlp_fused", {"B": 256, "D": 256, "F": 512}).stages[0].kernel
    tr = trace.build(k)
    assert tr.dead is not None and tr.dead.any()
    cap = kib * 1024
    whole = count(k, policy=policy, capacity=cap, target=TRN, trace=tr)
    for chunk in (5, 64, 1000):
        assert count(k, policy=policy, capacity=cap, target=TRN, chunk=chunk) == whole


def test_chunked_walk_yields_the_reference_interpreter_s_requests():
    """Concatenated chunks of a ragged blocked nest are the plain-Python interpreter's trace."""
    k = spec.load_kernel("matmul_blocked", {"M": 700, "N": 900, "K": 300})
    events, flops, instructions = interpret(k)
    ns = trace.compile_nest(k)
    w = trace.Walker(ns)
    obj = np.empty(max(ns.max_events, 9), ns.id_dtype)
    kind = np.empty(obj.size, np.int8)
    got = []
    while not w.done:
        m = w.fill(obj, kind)
        got += list(zip(obj[:m].tolist(), kind[:m].tolist()))
    assert got == events
    assert (w.flops, w.instructions) == (flops, instructions)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(0, 11), min_size=1, max_size=80), st.data())
def test_state_fed_in_chunks_equals_one_replay(obj, data):
    """A replay fed chunk by chunk (state carried over) equals one replay and the naive oracle."""
    n = len(obj)
    obj = np.array(obj, np.int32)
    write = np.array(data.draw(st.lists(st.booleans(), min_size=n, max_size=n)))
    dead = np.zeros(n, bool)
    cost = np.array(data.draw(st.lists(st.integers(1, 4), min_size=12, max_size=12)), np.int64)
    cap = data.draw(st.integers(4, 20))
    cuts = sorted(data.draw(st.lists(st.integers(0, n), max_size=5)))
    policy = data.draw(st.sampled_from(["lru", "opt"]))
    one = replay(obj, write, cost, cap, policy)
    s = State(policy, cost, cap, n)
    nu = next_use(obj)  # next-use times over the whole trace, sliced per chunk
    miss = np.empty(n, bool)
    for a, b in zip([0] + cuts, cuts + [n]):
        s.feed(obj[a:b], write[a:b], dead[a:b], miss[a:b], nu[a:b] if policy == "opt" else None)
    got = s.result(cost, miss)
    assert (got.miss.tolist(), got.writebacks.tolist(), got.peak_cost, got.fetches.tolist()) == \
        (one.miss.tolist(), one.writebacks.tolist(), one.peak_cost, one.fetches.tolist())
    ref = (naive.lru if policy == "lru" else naive.opt)(obj.tolist(), write.tolist(), cost.tolist(), cap)
    assert got.miss.tolist() == ref[0] and got.writebacks.tolist() == ref[1]


@settings(max_examples=30, deadline=None)
@given(st.lists(st.integers(0, 30), min_size=1, max_size=100), st.sampled_from(["lru", "opt"]),
       st.integers(1, 30))
def test_int32_and_int64_ids_replay_alike(obj, policy, cap):
    cost = np.ones(31, np.int64)
    write = np.array([o % 3 == 0 for o in obj])
    a = replay(np.array(obj, np.int32), write, cost, cap, policy)
    b = replay(np.array(obj, np.int64), write, cost, cap, policy)
    assert (a.miss.tolist(), a.writebacks.tolist(), a.fetches.tolist()) == \
        (b.miss.tolist(), b.writebacks.tolist(), b.fetches.tolist())


def test_fetches_are_the_read_misses_of_each_object():
    obj = np.array([0, 1, 0, 2, 1, 0], np.int32)
    write = np.array([False, False, False, True, False, False])
    r = replay(obj, write, np.ones(3, np.int64), 1, "lru")
    # capacity 1: every request misses; read misses per object: 0 three times, 1 twice, 2 never
    assert r.fetches.tolist() == [3, 2, 0]


def _one_loop_matmul(M, N, K, TM, TN, TK):
    return Kernel("big", (Tensor("A", (K, M)), Tensor("B", (K, N)), Tensor("C", (M, N), output=True)),
                  (Loop("m", M, TM, (Loop("n", N, TN, (Loop("k", K, TK, (
                      Load(Access("A", (("k",), ("m",)))), Load(Access("B", (("k",), ("n",)))),
                      Matmul(Access("C", (("m",), ("n",))), Access("A", (("k",), ("m",))),
                             Access("B", (("k",), ("n",)))))),
                      Store(Access("C", (("m",), ("n",)))))),)),))


@pytest.mark.parametrize("dims", [
    (2**21,) * 6,  # one instruction of 2 * (2**21)**3 = 2**64 FLOPs
    (3 * 2**20, 2**20, 2**20, 2**20, 2**20, 2**20),  # three of 2**61: the sum passes 2**62
])
def test_flop_overflow_is_refused(dims):
    with pytest.raises(SpecError, match="overflows int64"):
        trace.build(_one_loop_matmul(*dims))


def test_ids_are_int32_when_they_fit():
    tr = trace.build(matmul_kernel(256, 256, 256, 64, 64, 64))
    assert tr.obj.dtype == np.int32


def test_whole_build_ends_with_a_ragged_statement_that_emits_fewer_than_its_full_tile():
    """The last A panel of this blocked nest is one block of eight: the whole trace still ends
    with every request the reference interpreter lists (no room lost to the full-tile bound)."""
    k = spec.load_kernel("matmul_blocked", {"TM": 32, "TK": 32, "TN": 64, "M": 257, "N": 1, "K": 1,
                                            "BM": 256, "BN": 1024})
    tr = trace.build(k)
    events, _, _ = interpret(k)
    assert list(zip(tr.obj.tolist(), tr.kind.tolist())) == events


@settings(max_examples=60, deadline=None)
@given(matmul_nests(max_dim=300), st.sampled_from(["toy", "trn2-core"]))
def test_as_written_closed_form_equals_the_trace_count(kernel, sheet):
    """Where the closed form claims a nest, count() answers from it; the trace gives the same
    (flat bytes on toy, bytes per partition on trn2-core)."""
    cap, target = 2**40, _hw_sheets.load(sheet)
    fast = count(kernel, capacity=cap, target=target)
    assert fast == count(kernel, capacity=cap, target=target, replay=True)


def test_as_written_closed_form_claims_the_tutorial_matmul():
    from loopsim.count.written import as_written_counts

    k = spec.load_kernel("matmul", {"M": 1000, "N": 700, "K": 900})
    f = as_written_counts(k)
    assert f is not None
    assert f.flops == 2 * 1000 * 700 * 900  # every (m, n, k) once
    tr = trace.build(k)
    assert f.instructions == tr.instructions


def test_as_written_count_imports_no_numba():
    import subprocess
    import sys

    code = ("import sys; from loopsim.frontends import spec; from loopsim.count.counts import count; "
            "from loopsim.targets import hardware; "
            "count(spec.load_kernel('matmul'), capacity=2**30, target=hardware.load('trn2-core')); "
            "print('numba' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_long_trace_note_is_measured_on_this_machine(monkeypatch, capsys):
    # the note's time comes from replaying a sample of the trace itself (no constant per request):
    # forced on a short trace, it is printed and says so, and the counts are those of a run
    # without it
    from loopsim.sim import stream as stream_mod

    k = spec.load_kernel("matmul", {"M": 256, "N": 256, "K": 256, "TM": 32, "TK": 32, "TN": 32})
    want = {p: count(k, policy=p, capacity=8 * 32 * 32 * 2, chunk=1000, target=FLAT) for p in ("lru", "opt")}
    monkeypatch.setattr(stream_mod, "NOTE_ABOVE", 0)
    monkeypatch.setattr(stream_mod, "SAMPLE", 1 << 9)
    for policy in ("lru", "opt"):
        got = count(k, policy=policy, capacity=8 * 32 * 32 * 2, chunk=1000, target=FLAT)
        err = capsys.readouterr().err
        assert f"under {policy}, about" in err and "ns per request, measured on this machine" in err
        assert got == want[policy]
