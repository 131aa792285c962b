"""The one-pass LRU stack-distance curve (loopsim.sim.stack) against separate LRU replays.

Every number here is checked against an independent count: loopsim.sim.replay run once per
capacity, the plain-Python oracle in tests/naive.py, a brute-force stack distance, or a cyclic
access pattern whose misses are known in closed form.
"""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from loopsim.base.errors import InputError
from loopsim.sim import replay
from loopsim.sim.stack import lru_curve, stack_distances

import naive  # noqa: E402  (tests/ is on sys.path under pytest)

COLD = np.iinfo(np.int64).max


@st.composite
def traces(draw, max_objects=8, max_len=60):
    n_obj = draw(st.integers(1, max_objects))
    n = draw(st.integers(0, max_len))
    obj = np.array(draw(st.lists(st.integers(0, n_obj - 1), min_size=n, max_size=n)), dtype=np.int64)
    write = np.array(draw(st.lists(st.booleans(), min_size=n, max_size=n)), dtype=bool)
    cost = np.array(draw(st.lists(st.integers(0, 6), min_size=n_obj, max_size=n_obj)), dtype=np.int64)
    size = np.array(draw(st.lists(st.integers(1, 1000), min_size=n_obj, max_size=n_obj)), dtype=np.int64)
    group = np.array(draw(st.lists(st.integers(0, 2), min_size=n_obj, max_size=n_obj)), dtype=np.int64)
    return obj, write, cost, size, group


def _brute_distance(obj, cost, i):
    """Own cost plus the cost of distinct objects requested strictly between the two requests."""
    prev = [j for j in range(i) if obj[j] == obj[i]]
    if not prev:
        return COLD
    between = set(obj[prev[-1] + 1:i].tolist()) - {obj[i]}
    return int(cost[obj[i]] + sum(cost[o] for o in between))


@given(traces())
def test_distances_match_brute_force(t):
    obj, _, cost, _, _ = t
    got = stack_distances(obj, cost)
    assert got.tolist() == [_brute_distance(obj, cost, i) for i in range(obj.size)]


@given(traces(), st.lists(st.integers(0, 30), min_size=1, max_size=6))
def test_curve_equals_separate_replays(t, extra):
    obj, write, cost, size, group = t
    floor = max([int(cost[o]) for o in set(obj.tolist())] + [1])
    caps = [floor + e for e in extra]
    curve = lru_curve(obj, write, cost, caps, size, group)
    n_groups = curve.fetch_bytes.shape[0]
    for j, cap in enumerate(caps):
        r = replay(obj, write, cost, cap, "lru", size=size)
        assert curve.misses[j] == r.misses
        assert curve.miss_bytes[j] == r.miss_bytes
        read_miss = r.miss & ~write
        fetched = np.bincount(group[obj[read_miss]], weights=None, minlength=n_groups)
        assert curve.fetches[:, j].tolist() == fetched[:n_groups].tolist()
        assert int(curve.fetch_bytes[:, j].sum()) == r.fetch_bytes
        wb = np.zeros(n_groups, np.int64)
        np.add.at(wb, group, r.writebacks * size)
        assert curve.writeback_bytes[:, j].tolist() == wb.tolist()
        assert int(curve.writebacks[:, j].sum()) == int(r.writebacks.sum())
        assert int(curve.Q[j]) == r.fetch_bytes + r.writeback_bytes


@settings(max_examples=40)
@given(traces(max_objects=5, max_len=25), st.integers(0, 10))
def test_curve_equals_naive_oracle(t, extra):
    obj, write, cost, _, _ = t
    cap = max([int(cost[o]) for o in set(obj.tolist())] + [1]) + extra
    miss, writebacks, _ = naive.lru(obj.tolist(), write.tolist(), cost.tolist(), cap)
    c = lru_curve(obj, write, cost, [cap])
    assert c.misses[0] == sum(miss)
    assert int(c.writebacks[:, 0].sum()) == sum(writebacks)


@pytest.mark.parametrize("k,extra", [(5, 0), (5, 4), (7, 1)])
def test_cyclic_closed_form(k, extra):
    # k unit objects read round-robin r times: below k units every request misses (k*r); at k
    # units and above only the k cold misses remain. Max distance is k (the whole cycle).
    r = 6
    obj = np.tile(np.arange(k), r)
    c = lru_curve(obj, np.zeros(obj.size, bool), np.ones(k, np.int64), [k - 1, k + extra])
    assert c.misses.tolist() == [k * r, k]
    assert c.max_distance == k


def test_write_backs_by_hand():
    # object 0 (2 units) written, then 1 (2 units) read, then 0 read: distance of the last request
    # is 2 + 2 = 4. Capacity 3: 0 is evicted dirty (1 write-back) and refetched clean (no flush);
    # capacity 4: 0 stays dirty and is flushed once at the end. Either way one write-back of 0.
    obj = np.array([0, 1, 0])
    write = np.array([True, False, False])
    c = lru_curve(obj, write, np.array([2, 2]), [3, 4], size=np.array([10, 100]))
    assert c.writebacks[0].tolist() == [1, 1]
    assert c.fetch_bytes[0].tolist() == [100 + 10, 100]  # refetch of 0 only at capacity 3


def test_order_of_capacities_kept():
    obj = np.tile(np.arange(4), 3)
    c = lru_curve(obj, np.zeros(obj.size, bool), np.ones(4, np.int64), [9, 3, 4])
    assert c.capacities.tolist() == [9, 3, 4]
    assert c.misses.tolist() == [4, 12, 4]


@pytest.mark.parametrize("caps,msg", [
    ([], "capacities is empty"),
    ([1], "at least the largest object cost, 2"),
    ([2.5], r"capacities\[0\]=2.5 must be an integer"),
    ([True], "must be an integer"),
])
def test_bad_capacities(caps, msg):
    with pytest.raises(InputError, match=msg):
        lru_curve(np.array([0, 1]), np.zeros(2, bool), np.array([1, 2]), caps)


def test_bad_arrays():
    with pytest.raises(InputError, match="write must be a numpy bool array"):
        lru_curve(np.array([0]), np.zeros(1, int), np.array([1]), [1])
    with pytest.raises(InputError, match=r"obj\[0\]=3 must be in \[0, 1\)"):
        lru_curve(np.array([3]), np.zeros(1, bool), np.array([1]), [1])
    with pytest.raises(InputError, match="group shape"):
        lru_curve(np.array([0]), np.zeros(1, bool), np.array([1]), [1], group=np.zeros(2, int))


@pytest.mark.parametrize("n_obj,n", [(3, 5000), (60, 30000)])
def test_long_traces_renumber_slots(n_obj, n):
    # far more requests than 2 * objects + 1024 slots: the pass renumbers its slots many times
    rng = np.random.default_rng(n)
    obj = rng.integers(0, n_obj, n)
    write = rng.random(n) < 0.2
    cost = rng.integers(1, 50, n_obj)
    caps = [int(cost.max()) + e for e in (0, 40, 300, 2000)]
    c = lru_curve(obj, write, cost, caps)
    for j, cap in enumerate(caps):
        r = replay(obj, write, cost, cap, "lru")
        assert c.misses[j] == r.misses
        assert int(c.writebacks[0, j]) == int(r.writebacks.sum())
