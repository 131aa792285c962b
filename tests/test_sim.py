"""The SBUF replay (loopsim.sim) against the plain-Python oracle in tests/naive.py, plus closed forms.

The kernels must also be valid Python. Run the whole suite once without the JIT:

    NUMBA_DISABLE_JIT=1 /tmp/venv/bin/pytest tests/test_sim.py

(test_kernels_run_without_jit below does a small version of that on every run.)
"""

import os
import subprocess
import sys

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from loopsim.base.errors import InputError
from loopsim.sim.replayfile import load_trace, replay_summary, write_trace
from loopsim.sim import POLICIES, Replay, next_use, replay

sys.path.insert(0, os.path.dirname(__file__))
import naive  # noqa: E402

ORACLES = {"lru": naive.lru, "opt": naive.opt}
I64 = np.int64


def arr(xs, dtype=I64):
    return np.array(xs, dtype=dtype)


@st.composite
def traces(draw, uniform=None, min_cost=0, max_objects=8, min_len=0, max_len=50):
    """(obj, write, cost): small traces over few objects so that hits, evictions and ties occur."""
    k = draw(st.integers(1, max_objects))
    n = draw(st.integers(min_len, max_len))
    obj = draw(st.lists(st.integers(0, k - 1), min_size=n, max_size=n))
    write = draw(st.lists(st.booleans(), min_size=n, max_size=n))
    if uniform is None:
        uniform = draw(st.booleans())
    if uniform:
        cost = [draw(st.integers(1, 3))] * k
    else:
        cost = draw(st.lists(st.integers(min_cost, 12), min_size=k, max_size=k))
    return arr(obj), arr(write, bool), arr(cost)


# --- numba against the oracle, access for access -------------------------------------------------


def dead_flags(data, n, use):
    """None, or bool[n] with a few True: frees of on-chip intermediates after their last use."""
    if not use:
        return None
    return np.array(data.draw(st.lists(st.sampled_from([False] * 4 + [True]), min_size=n, max_size=n)), bool)


@given(traces(), st.integers(1, 40), st.sampled_from(POLICIES), st.integers(1, 5), st.booleans(), st.data())
def test_matches_oracle(trace, capacity, policy, byte_scale, use_dead, data):
    obj, write, cost = trace
    size = cost * byte_scale + 1  # bytes differ from capacity units, to check the totals use size
    dead = dead_flags(data, len(obj), use_dead)
    r = replay(obj, write, cost, capacity, policy, size, dead=dead)
    miss, wb, peak = ORACLES[policy](
        obj.tolist(), write.tolist(), cost.tolist(), capacity, None if dead is None else dead.tolist()
    )
    assert r.miss.tolist() == miss
    assert r.writebacks.tolist() == wb
    assert r.peak_cost == peak
    assert r.requests == len(obj)
    assert r.misses == sum(miss)
    assert r.miss_bytes == sum(int(size[o]) for o, m in zip(obj, miss) if m)
    assert r.fetch_bytes == sum(int(size[o]) for o, m, w in zip(obj, miss, write) if m and not w)
    assert r.writeback_bytes == sum(int(size[o]) * c for o, c in enumerate(wb))
    assert peak <= capacity
    assert (r.policy, r.capacity) == (policy, capacity)


@settings(max_examples=15)
@given(
    traces(max_objects=12, min_len=150, max_len=300),
    st.integers(1, 60),
    st.sampled_from(POLICIES),
    st.booleans(),
    st.data(),
)
def test_matches_oracle_long(trace, capacity, policy, use_dead, data):
    """Long enough for the OPT heap to be rebuilt from its live entries (beyond 2 x residents + 64)."""
    obj, write, cost = trace
    dead = dead_flags(data, len(obj), use_dead)
    r = replay(obj, write, cost, capacity, policy, dead=dead)
    miss, wb, peak = ORACLES[policy](
        obj.tolist(), write.tolist(), cost.tolist(), capacity, None if dead is None else dead.tolist()
    )
    assert (r.miss.tolist(), r.writebacks.tolist(), r.peak_cost) == (miss, wb, peak)
    # fed in chunks (OPT's next uses from a per-chunk record): the same counts, no miss array
    rc = replay(obj, write, cost, capacity, policy, dead=dead, chunk=data.draw(st.integers(1, 70)))
    fetches = np.bincount([o for o, m, w in zip(obj.tolist(), miss, write.tolist()) if m and not w],
                          minlength=len(cost))
    assert rc.miss is None and (rc.writebacks.tolist(), rc.peak_cost, rc.misses) == (wb, peak, sum(miss))
    assert rc.fetches.tolist() == fetches.tolist()


@given(traces(uniform=True), st.integers(1, 10))
def test_opt_never_misses_more_than_lru_for_one_size(trace, capacity):
    obj, write, cost = trace
    assert replay(obj, write, cost, capacity, "opt").misses <= replay(obj, write, cost, capacity, "lru").misses


@given(traces(), st.integers(0, 30), st.integers(1, 30))
def test_lru_inclusion(trace, extra1, extra2):
    """Byte-weighted LRU keeps the longest prefix of the recency stack that fits, so a larger
    capacity keeps a superset and its misses are a subset. This holds while both capacities admit
    the same objects, i.e. both are >= the largest cost (see test_lru_inclusion_needs_same_admission).
    The property is LRU's: OPT with mixed sizes is a heuristic with no such guarantee (below, with
    one size, its miss count still never rises with capacity)."""
    obj, write, cost = trace
    c1 = max(int(cost.max()) + extra1, 1)
    c2 = c1 + extra2
    m1 = replay(obj, write, cost, c1, "lru").miss
    m2 = replay(obj, write, cost, c2, "lru").miss
    assert not (m2 & ~m1).any()


@given(traces(uniform=True), st.integers(1, 10), st.integers(1, 10))
def test_opt_misses_never_rise_with_capacity_for_one_size(trace, c1, extra):
    """Belady's MIN with one object size: more room never costs a miss."""
    obj, write, cost = trace
    small = replay(obj, write, cost, c1, "opt").misses
    assert replay(obj, write, cost, c1 + extra, "opt").misses <= small


def test_lru_inclusion_needs_same_admission():
    # a (cost 1) and x (cost 6), trace a x a. At capacity 5, x never fits and a stays: 2 misses.
    # At capacity 6, x is admitted and pushes a out: 3 misses. More capacity, more misses.
    obj, write, cost = arr([0, 1, 0]), np.zeros(3, bool), arr([1, 6])
    assert replay(obj, write, cost, 5, "lru").miss.tolist() == [True, True, False]
    assert replay(obj, write, cost, 6, "lru").miss.tolist() == [True, True, True]


@given(st.lists(st.integers(0, 6), max_size=60))
def test_next_use_matches_brute_force(ids):
    assert next_use(arr(ids)).tolist() == naive.next_use(ids)


def test_next_use_sparse_ids():
    ids = [10**15, 3, 10**15, 7, 3]
    assert next_use(arr(ids)).tolist() == naive.next_use(ids)


# --- closed forms ----------------------------------------------------------------------------------


@pytest.mark.parametrize("k", [2, 3, 5, 16])
@pytest.mark.parametrize("n", [20, 61, 1000])
def test_cyclic_access_closed_forms(k, n):
    """Objects 0, 1, ..., k-1, 0, 1, ... (n requests, n >= k), all of size 1, capacity k-1.

    LRU: the object requested is always the one evicted longest ago, so every request misses: n.

    OPT: the first k-1 requests fill the cache (k-1 misses). From then on, at a miss at time t
    every object except the requested one is resident and their next uses are t+1, ..., t+k-1,
    one each; the farthest, the object requested at t+k-1, is evicted. So t+1 .. t+k-2 hit and
    t+k-1 misses again: after the first miss at t = k-1, misses fall every k-1 requests, at
    t = m(k-1) for m >= 1 and m(k-1) <= n-1. Total: (k-1) + floor((n-1)/(k-1)).
    (The often-quoted k + ceil((n-k)/(k-1)) is one too many when k-1 divides n-1 ... e.g. k=3,
    n=4: 0 1 2 0 misses 3 times, not 4.)
    """
    obj = np.arange(n, dtype=I64) % k
    cost = np.ones(k, I64)
    write = np.zeros(n, bool)
    assert replay(obj, write, cost, k - 1, "lru").misses == n
    assert replay(obj, write, cost, k - 1, "opt").misses == (k - 1) + (n - 1) // (k - 1)
    # and with capacity k both keep everything: k compulsory misses
    for policy in POLICIES:
        assert replay(obj, write, cost, k, policy).misses == k


def test_write_semantics_by_hand():
    # 0 written (miss, admitted dirty, no fetch), 0 read (hit), 1 read (miss, fetch; evicts
    # dirty 0: one write-back), 1 written (hit: dirty), end: 1 flushed.
    obj, write = arr([0, 0, 1, 1]), arr([True, False, False, True], bool)
    cost, size = arr([1, 1]), arr([100, 7])
    for policy in POLICIES:
        r = replay(obj, write, cost, 1, policy, size)
        assert r.miss.tolist() == [True, False, True, False]
        assert r.writebacks.tolist() == [1, 1]
        assert (r.misses, r.miss_bytes, r.fetch_bytes, r.writeback_bytes) == (2, 100 + 7, 7, 100 + 7)
        assert r.peak_cost == 1


def test_dead_frees_without_write_back():
    # 0 written (dirty), 1 read, 0 read for the last time (dead: freed, never written back),
    # then 2 fits in the room 0 left without evicting 1
    obj, write = arr([0, 1, 0, 2, 1]), arr([True, False, False, False, False], bool)
    dead = arr([False, False, True, False, False], bool)
    for policy in POLICIES:
        r = replay(obj, write, arr([1, 1, 1]), 2, policy, dead=dead)
        assert r.miss.tolist() == [True, True, False, True, False]
        assert r.writebacks.tolist() == [0, 0, 0]
        assert r.peak_cost == 2


def test_oversized_object_bypasses():
    # object 1 (cost 10) never fits in 4: it misses each time, evicts nothing; writes go to HBM
    obj, write, cost = arr([0, 1, 0, 1]), arr([False, True, False, False], bool), arr([3, 10])
    for policy in POLICIES:
        r = replay(obj, write, cost, 4, policy)
        assert r.miss.tolist() == [True, True, False, True]
        assert r.writebacks.tolist() == [0, 1]
        assert r.peak_cost == 3


def test_opt_evicts_never_used_again_smaller_id_first():
    # cache of 2 holds 0 and 1, neither used again; 2 arrives: 0 (smaller id) goes, 1 stays
    obj, write, cost = arr([0, 1, 2, 1]), np.zeros(4, bool), arr([1, 1, 1])
    r = replay(obj, write, cost, 2, "opt")
    assert r.miss.tolist() == [True, True, True, False]


def test_empty_trace():
    for policy in POLICIES:
        r = replay(arr([]), np.zeros(0, bool), arr([1, 2]), 3, policy)
        assert (r.requests, r.misses, r.miss_bytes, r.writeback_bytes, r.peak_cost) == (0, 0, 0, 0, 0)


def test_byte_totals_exact_beyond_int64():
    # 3 misses of an object of 2**62 bytes: 3 * 2**62 > int64 max; totals stay exact Python ints
    obj, write = arr([0, 1, 0]), arr([True, False, False], bool)
    r = replay(obj, write, arr([1, 1]), 1, "lru", size=arr([2**62, 1]))
    assert r.miss_bytes == 2 * 2**62 + 1
    assert r.writeback_bytes == 2**62


# --- validation: one table, messages pinned --------------------------------------------------------

OK = dict(obj=arr([0, 1]), write=arr([False, True], bool), cost=arr([1, 2]), capacity=4, policy="lru")

BAD = [
    (dict(policy="fifo"), r"replay: policy='fifo' must be one of lru, opt"),
    (dict(obj=[0, 1]), r"replay: obj must be a numpy integer array, got list"),
    (dict(obj=arr([0.0, 1.0], float)), r"replay: obj must have an integer dtype, got dtype=float64"),
    (dict(obj=arr([[0, 1]])), r"replay: obj must be 1-D, got shape=\(1, 2\)"),
    (dict(obj=arr([0, 2])), r"replay: obj\[1\]=2 must be in \[0, 2\) \(len\(cost\)=2\)"),
    (dict(obj=arr([-1, 0])), r"replay: obj\[0\]=-1 must be in \[0, 2\)"),
    (dict(write=arr([0, 1])), r"replay: write must be a numpy bool array, got dtype=int64"),
    (dict(write=arr([True], bool)), r"replay: write shape=\(1,\) must equal obj shape=\(2,\)"),
    (dict(cost=arr([1, -2])), r"replay: cost\[1\]=-2 must be >= 0"),
    (dict(capacity=0), r"replay: capacity=0 must be > 0"),
    (dict(capacity=2.5), r"replay: capacity=2.5 must be an integer"),
    (dict(capacity=True), r"replay: capacity=True must be an integer, not a bool"),
    (dict(capacity=2**63), r"replay: capacity=9223372036854775808 does not fit in int64"),
    (dict(size=arr([1])), r"replay: size shape=\(1,\) must equal cost shape=\(2,\)"),
    (dict(size=arr([1, -1])), r"replay: size\[1\]=-1 must be >= 0"),
    (dict(dead=arr([0, 1])), r"replay: dead must be a numpy bool array of shape \(2,\), got int64 \(2,\)"),
    (dict(dead=arr([True], bool)), r"replay: dead must be a numpy bool array of shape \(2,\), got bool \(1,\)"),
]


@pytest.mark.parametrize("change, message", BAD, ids=[m.split(" must")[0] for _, m in BAD])
def test_invalid_inputs(change, message):
    with pytest.raises(InputError, match=f"^{message}"):
        replay(**{**OK, **change})


def test_numpy_integer_capacity_and_narrow_dtypes_accepted():
    r = replay(arr([0, 1, 0], np.uint8), np.zeros(3, bool), arr([1, 1], np.int32), np.int16(1), "lru")
    assert r.misses == 3 and isinstance(r, Replay)


def test_next_use_rejects_negative_ids():
    with pytest.raises(InputError, match=r"^next_use: obj\[1\]=-3 must be >= 0$"):
        next_use(arr([0, -3]))


# --- trace files -----------------------------------------------------------------------------------


def test_trace_file_round_trip(tmp_path):
    p = tmp_path / "t.npz"
    write_trace(p, arr([50, 7, 50, 10**12]), arr([4, 8, 4, 2]), arr([False, True, False, False], bool))
    obj, write, size = load_trace(p)
    assert obj.tolist() == [1, 0, 1, 2]  # ranks of 7 < 50 < 10**12, as np.unique gives
    assert write.tolist() == [False, True, False, False]
    assert size.tolist() == [8, 4, 2]
    r = replay(obj, write, size, 12, "lru", size)
    # misses: obj 1 read (4 B fetched), obj 0 write (8 B allocated, no fetch), obj 2 read (2 B,
    # evicting dirty obj 0: 8 B written back)
    assert replay_summary(r) == dict(
        policy="lru", capacity=12, requests=4, misses=3, miss_bytes=14, hbm_read_bytes=4 + 2,
        allocation_miss_bytes=8, writeback_bytes=8, hbm_bytes=6 + 8
    )


def test_trace_file_stores_uint32_where_it_fits(tmp_path):
    p = tmp_path / "t.npz"
    write_trace(p, arr([3, 1, 3]), arr([2, 5, 2]))
    with np.load(p) as z:
        assert z["obj"].dtype == np.uint32 and z["size"].dtype == np.uint32 and "write" not in z.files
    obj, write, size = load_trace(p)
    assert (obj.dtype, size.dtype) == (np.int32, np.int64)  # int32: the replay kernels' id type
    assert (obj.tolist(), write.tolist(), size.tolist()) == ([1, 0, 1], [False] * 3, [5, 2])


@given(st.lists(st.sampled_from([0, 1, 7, 300, 2**40 + 3, 2**63 - 1, 12345678901]), max_size=80))
def test_sparse_ids_load_as_np_unique_ranks(tmp_path_factory, ids):
    """Ids far above n (hashed 64-bit ids) go through the hash pass: ranks as np.unique's."""
    p = tmp_path_factory.mktemp("t") / "t.npz"
    a = np.array(ids + [2**62], np.int64)  # one id far above n: the sparse path
    write_trace(p, a, np.full(a.size, 4))
    obj, _, size = load_trace(p)
    assert obj.tolist() == np.unique(a, return_inverse=True)[1].reshape(-1).tolist()
    assert size.tolist() == [4] * np.unique(a).size


def _first_size_mismatch(a, sz):
    """Brute force: the first request whose size differs from its object's first request's."""
    first = {}
    for i, (o, s) in enumerate(zip(a.tolist(), sz.tolist())):
        if first.setdefault(o, s) != s:
            return i
    return -1


@settings(max_examples=60)
@given(st.lists(st.integers(0, 2**63 - 1), min_size=1, max_size=40), st.integers(0, 200),
       st.booleans(), st.data())
def test_densify_passes_give_np_unique_ranks_and_the_first_size_mismatch(pool, n, dense_ids, data):
    """Both passes (presence map for ids near n, hash table for sparse ids), compiled and as
    plain Python, against np.unique(return_inverse=True), and the size check against a
    brute-force scan."""
    from loopsim.sim._filters import densify, hash_densify
    from loopsim.sim._jit import plain

    if dense_ids:
        pool = [v % (4 * n + 1025) for v in pool]
    a = np.array(data.draw(st.lists(st.sampled_from(pool), min_size=n, max_size=n)), np.int64)
    sz = np.array([v % 5 + 1 for v in a.tolist()], np.int64)
    if n and data.draw(st.booleans()):
        sz[data.draw(st.integers(0, n - 1))] += 1
    _, first, inv = np.unique(a, return_index=True, return_inverse=True)
    for twin in (None, plain("loopsim.sim._filters")):  # compiled, then as plain Python
        dense = np.empty(n, np.int32)
        with np.errstate(over="ignore"):
            if dense_ids:
                osize, bad = (twin.densify if twin else densify)(a, sz, int(a.max()) if n else 0, dense)
            else:
                osize, bad = (twin.hash_densify if twin else hash_densify)(a, sz, dense)
        assert dense.tolist() == inv.reshape(-1).tolist()
        assert bad == _first_size_mismatch(a, sz)
        if bad < 0:
            assert osize.tolist() == sz[first].tolist()  # each object's size, by rank


def test_hash_pass_grows_its_table_and_ranks_clustered_ids():
    """Enough distinct ids for the table to double several times, drawn as multiples of a
    Fibonacci constant (ids that cluster under multiplicative hashing), uint64 and uint32 ids."""
    from loopsim.sim._filters import hash_densify

    rng = np.random.default_rng(1)
    ids = (np.arange(30_000, dtype=np.uint64) * np.uint64(0x9E3779B97F4A7C15)) >> np.uint64(1)
    a = ids[rng.integers(0, ids.size, 200_000)]
    for obj in (a, a.astype(np.int64), (a >> np.uint64(33)).astype(np.uint32)):
        dense = np.empty(obj.size, np.int32)
        osize, bad = hash_densify(obj, np.full(obj.size, 3, np.uint32), dense)
        uniq, inv = np.unique(obj, return_inverse=True)
        assert bad == -1 and osize.tolist() == [3] * uniq.size
        assert np.array_equal(dense, inv.reshape(-1))


def test_written_traces_are_mapped_not_read(tmp_path):
    """write_trace aligns each member's data, so the reader views it in the mapped file."""
    import mmap

    from loopsim.sim.replayfile import _read_arrays

    p = tmp_path / "t.npz"
    write_trace(p, arr([2**40, 7, 2**40]), arr([4, 8, 4]), arr([True, False, False], bool))
    arrays = _read_arrays(str(p))
    assert all(isinstance(a.base, mmap.mmap) for a in arrays.values())
    assert arrays["obj"].tolist() == [2**40, 7, 2**40] and arrays["write"].tolist() == [True, False, False]
    with np.load(p) as z:  # still an ordinary .npz
        assert z["size"].tolist() == [4, 8, 4]


def _npz(path, **arrays):
    with open(path, "wb") as f:
        np.savez(f, **arrays)


BAD_FILES = [
    ("missing", None, r"no such trace file"),
    ("text", b"hello\n", r"not an \.npz archive"),
    ("npy", "npy", r"not an \.npz archive"),
    ("no obj", dict(size=arr([1])), r"missing array 'obj'"),
    ("no size", dict(obj=arr([1])), r"missing array 'size'"),
    ("float obj", dict(obj=arr([1.5], float), size=arr([1])), r"array 'obj' must be integer, got dtype=float64"),
    ("2-D size", dict(obj=arr([1]), size=arr([[1]])), r"array 'size' must be 1-D, got shape=\(1, 1\)"),
    ("length", dict(obj=arr([1, 2]), size=arr([1])), r"array 'size' has length 1, expected 2"),
    ("int write", dict(obj=arr([1]), size=arr([1]), write=arr([1])), r"array 'write' must be bool, got dtype=int64"),
    ("short write", dict(obj=arr([1]), size=arr([1]), write=arr([], bool)), r"array 'write' has shape \(0,\)"),
    ("negative id", dict(obj=arr([1, -4]), size=arr([1, 1])), r"array 'obj'\[1\]=-4 must be >= 0"),
    ("zero size", dict(obj=arr([1, 2]), size=arr([1, 0])), r"array 'size'\[1\]=0 must be > 0"),
    (
        "two sizes",
        dict(obj=arr([5, 9, 5, 5]), size=arr([4, 1, 4, 6])),
        r"array 'size': object 5 is requested with two sizes, 4 \(request 0\) and 6 \(request 3\)",
    ),
    (
        "two sizes, sparse ids",
        dict(obj=arr([5, 2**40, 5, 5]), size=arr([4, 1, 4, 6])),
        r"array 'size': object 5 is requested with two sizes, 4 \(request 0\) and 6 \(request 3\)",
    ),
]


@pytest.mark.parametrize("what, content, message", BAD_FILES, ids=[b[0] for b in BAD_FILES])
def test_bad_trace_files(tmp_path, what, content, message):
    p = tmp_path / "trace.npz"
    if isinstance(content, bytes):
        p.write_bytes(content)
    elif content == "npy":
        with open(p, "wb") as f:
            np.save(f, arr([1, 2]))
    elif content is not None:
        _npz(p, **content)
    with pytest.raises(InputError, match=message) as info:
        load_trace(p)
    msg = str(info.value)
    assert msg.startswith(str(p) + ": ") and "\n" not in msg


# --- packaging -------------------------------------------------------------------------------------


ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _run(code, **env):
    path = os.pathsep.join(p for p in (ROOT, os.environ.get("PYTHONPATH")) if p)
    return subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": path, **env},
        timeout=120,
    )


def test_import_does_not_load_numba():
    p = _run("import sys, loopsim, loopsim.sim, loopsim.sim.replayfile; print('numba' in sys.modules)")
    assert p.returncode == 0, p.stderr
    assert p.stdout.strip() == "False"


def test_kernels_run_without_jit():
    """The kernels are plain Python too (NUMBA_DISABLE_JIT=1), and agree with the jitted run."""
    code = """
import numpy as np
from loopsim.sim import replay
rng = np.random.default_rng(1)
obj = rng.integers(0, 12, 300); w = rng.random(300) < 0.3; cost = rng.integers(1, 5, 12)
for p in ("lru", "opt"):
    r = replay(obj, w, cost, 14, p)
    print(p, int(np.flatnonzero(r.miss).sum()), r.writebacks.tolist(), r.peak_cost)
"""
    # the jitted run compiles even this short trace (no plain-Python twin: loopsim/sim/_jit.py)
    plain = _run(code, NUMBA_DISABLE_JIT="1")
    jitted = _run("from loopsim.sim import _jit; _jit.PLAIN_BUDGET = 0\n" + code)
    assert plain.returncode == 0 and jitted.returncode == 0, plain.stderr + jitted.stderr
    assert plain.stdout == jitted.stdout and plain.stdout


@given(
    st.lists(st.booleans(), min_size=6, max_size=6),
    st.lists(st.integers(0, 20), min_size=6, max_size=6),
    st.lists(st.tuples(st.integers(0, 5), st.booleans(), st.integers(0, 20)), max_size=60),
)
def test_heap_compact_keeps_live_entries_in_heap_order(resident, cur, drawn):
    """The OPT heap's rebuild: live entries (resident, key == cur) survive, in 4-ary max-heap order."""
    from loopsim.sim._kernels import _heap_compact

    shift = 3  # ids 0..5 fit in 3 bits; key = (next use << 3) | (7 - id)
    resident, cur = np.array(resident, bool), arr(cur)
    entries = [(int(cur[o]) if live else key, o) for o, live, key in drawn]  # many live entries
    h = arr([(t << shift) | (7 - o) for t, o in entries] + [0])
    k = _heap_compact(h, len(entries), resident, cur, shift)
    got = [(int(x) >> shift, 7 - (int(x) & 7)) for x in h[:k]]
    assert sorted(got) == sorted(e for e in entries if resident[e[1]] and cur[e[1]] == e[0])
    for child in range(1, k):  # parent above child: later next use, or equal and smaller id
        p = (child - 1) // 4
        assert (got[p][0], -got[p][1]) >= (got[child][0], -got[child][1])
