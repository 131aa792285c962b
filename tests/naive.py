"""Slow, obviously correct reference simulators for the numba kernels in loopsim.sim.

Plain Python lists, sets and dicts; O(n^2) is fine. Each follows the conventions stated in
loopsim/sim/_kernels.py, written the simplest way:

* every missed object is admitted, evicting until it fits; an object whose cost exceeds the
  capacity never is: it misses every time, evicts nothing, and a write to it goes straight to
  HBM as one write-back;
* a write marks the object dirty (a write miss admits it dirty, without a fetch); evicting a
  dirty object writes it back; at the end every dirty resident is written back once;
* OPT evicts the resident with the farthest next use (n when never used again), the smaller id
  first among equals;
* a request flagged dead frees its object once served (hit or admitted miss), with no write-back.

Each returns (miss: list[bool], writebacks: list[int], peak: int).
"""


def next_use(obj):
    """For each i, the first j > i with obj[j] == obj[i], else len(obj)."""
    n = len(obj)
    out = []
    for i in range(n):
        out.append(next((j for j in range(i + 1, n) if obj[j] == obj[i]), n))
    return out


def _replay(obj, write, cost, capacity, choose_victim, dead=None):
    resident = []  # resident objects, least recently used first
    dirty = set()
    writebacks = [0] * len(cost)
    miss = []
    occupancy = peak = 0
    dead = dead if dead is not None else [False] * len(obj)

    def free(o, occupancy):
        """A dead object leaves SBUF once served, with no write-back; returns the new occupancy."""
        resident.remove(o)
        dirty.discard(o)
        return occupancy - cost[o]

    for i, (o, w) in enumerate(zip(obj, write)):
        if o in resident:
            miss.append(False)
            resident.remove(o)
            resident.append(o)
            if w:
                dirty.add(o)
            if dead[i]:
                occupancy = free(o, occupancy)
            continue
        miss.append(True)
        if cost[o] > capacity:
            if w:
                writebacks[o] += 1
            continue
        while occupancy + cost[o] > capacity:
            v = choose_victim(resident, i)
            resident.remove(v)
            occupancy -= cost[v]
            if v in dirty:
                writebacks[v] += 1
                dirty.discard(v)
        resident.append(o)
        occupancy += cost[o]
        peak = max(peak, occupancy)
        if w:
            dirty.add(o)
        if dead[i]:
            occupancy = free(o, occupancy)
    for v in resident:
        if v in dirty:
            writebacks[v] += 1
    return miss, writebacks, peak


def lru(obj, write, cost, capacity, dead=None):
    return _replay(obj, write, cost, capacity, lambda resident, i: resident[0], dead)


def opt(obj, write, cost, capacity, dead=None):
    obj = list(obj)
    n = len(obj)

    def next_after(v, i):
        return next((j for j in range(i + 1, n) if obj[j] == v), n)

    def victim(resident, i):
        # farthest next use; among equals the smaller id: max of (next use, -id)
        return max(resident, key=lambda v: (next_after(v, i), -v))

    return _replay(obj, write, cost, capacity, victim, dead)
