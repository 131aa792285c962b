"""Replay a tile-access trace through a model of SBUF and count what crosses to HBM.

This module validates and converts its inputs, then hands flat int64/bool arrays to the jitted
kernels in :mod:`loopsim.sim._kernels`. That module (and numba with it) is imported on the first
replay, not at ``import loopsim.sim``, so importing the package compiles nothing.

Policies
--------
``lru``
    Evict the least recently used residents until the new object fits. With byte (or any
    non-uniform) costs the resident set is always the longest prefix of the recency stack that
    fits, so for capacities at or above the largest cost, misses never rise with capacity.
``opt``
    Evict the resident whose next use is farthest in the future ("never used again" first) until
    the new object fits; among equal next uses (only possible for "never again") the smaller
    object id goes first. With one cost for all objects this is Belady's MIN and its miss count is
    optimal. With mixed costs it is Belady's farthest-next-use *heuristic*, which is not optimal
    (optimal variable-size caching is NP-hard): it can lose to LRU.

A request may be flagged ``dead`` (the last use of an on-chip intermediate that nothing stores):
once served, its object is freed without a write-back, so a value that never has to reach HBM
does not, unless it was evicted (spilled) before its last use.

Both policies admit every missed object (no bypass by choice). An object whose cost exceeds the
capacity can never be admitted: it misses every time, evicts nothing, and a write to it goes
straight to HBM (counted as one write-back of that object).
"""

from __future__ import annotations

import operator
from dataclasses import dataclass

import numpy as np

from loopsim.base.errors import InputError, InternalError
from loopsim.base.vocab import REPLAY_POLICIES

__all__ = ["POLICIES", "Replay", "State", "replay", "next_use"]

POLICIES = REPLAY_POLICIES  # lru, opt (loopsim.base.vocab)

_INT64_MAX = np.iinfo(np.int64).max


@dataclass(frozen=True, slots=True)
class Replay:
    """What one replay moved. Arrays are per request or per object; totals are Python ints.

    Attributes
    ----------
    miss : numpy.ndarray of bool, shape (n,), or None
        Request i found its object not resident (a write miss fetches nothing, but is a miss).
        None from a replay fed in chunks (:class:`State`), which keeps no per-request array.
    writebacks : numpy.ndarray of int64, shape (n_objects,)
        Write-backs of each object to HBM: dirty evictions, the final flush of dirty residents,
        and writes to objects too large to ever be admitted.
    peak_cost : int
        Highest occupancy reached, in capacity units.
    requests, misses : int
        Number of requests and of misses.
    miss_bytes : int
        Bytes of all missed requests (``size`` of the object per miss, reads and writes).
    fetch_bytes : int
        Bytes read from HBM: ``size`` per *read* miss (a write miss is admitted without a fetch).
    writeback_bytes : int
        Bytes written to HBM: ``size`` per write-back.
    policy : str
        The policy replayed, one of :data:`POLICIES`.
    capacity : int
        The capacity replayed, in capacity units.
    fetches : numpy.ndarray of int64, shape (n_objects,)
        Read misses of each object (fetches from HBM), counted by the replay itself.
    """

    miss: np.ndarray
    writebacks: np.ndarray
    peak_cost: int
    requests: int
    misses: int
    miss_bytes: int
    fetch_bytes: int
    writeback_bytes: int
    policy: str
    capacity: int
    fetches: np.ndarray | None = None


def _fail(msg: str) -> None:
    raise InputError(msg)


def _int_array(name: str, a, where: str = "replay") -> np.ndarray:
    """A contiguous int64 copy/view of an integer array, or InputError naming ``name``."""
    if not isinstance(a, np.ndarray):
        _fail(f"{where}: {name} must be a numpy integer array, got {type(a).__name__}")
    if a.dtype.kind not in "iu":
        _fail(f"{where}: {name} must have an integer dtype, got dtype={a.dtype}")
    if a.ndim != 1:
        _fail(f"{where}: {name} must be 1-D, got shape={a.shape}")
    if a.dtype.kind == "u" and a.size and int(a.max()) > _INT64_MAX:
        _fail(f"{where}: {name} max={int(a.max())} does not fit in int64")
    if name == "obj" and a.dtype == np.int32:  # dense ids as traces make them: no copy
        return np.ascontiguousarray(a)
    return np.ascontiguousarray(a, dtype=np.int64)


def _check_nonneg(name: str, a: np.ndarray, where: str = "replay") -> None:
    if a.size:
        k = int(np.argmin(a))
        if a[k] < 0:
            _fail(f"{where}: {name}[{k}]={int(a[k])} must be >= 0")


def _as_int(name: str, v) -> int:
    if isinstance(v, (bool, np.bool_)):
        _fail(f"replay: {name}={v!r} must be an integer, not a bool")
    try:
        return operator.index(v)
    except TypeError:
        _fail(f"replay: {name}={v!r} must be an integer")


def _weighted_total(counts: np.ndarray, size: np.ndarray) -> int:
    """sum(counts * size) exactly: int64 when the bound proves it cannot overflow, else Python ints."""
    if counts.size == 0:
        return 0
    bound = int(counts.sum()) * int(size.max())
    if bound <= _INT64_MAX:
        return int(np.dot(counts, size))
    nz = np.flatnonzero(counts)
    return sum(int(c) * int(s) for c, s in zip(counts[nz].tolist(), size[nz].tolist()))


#: bytes OPT may spend on the next-use record of a chunked replay (one int64 per object per chunk);
#: chunks grow to stay within it
_RECORD_BYTES = 64 << 20


def replay(obj, write, cost, capacity, policy, size=None, dead=None, chunk=None) -> Replay:
    """Replay a trace through a cache of ``capacity`` units under ``policy``.

    Parameters
    ----------
    obj : numpy.ndarray of int, shape (n,)
        Dense object ids in ``[0, n_objects)``, one per request, in order.
    write : numpy.ndarray of bool, shape (n,)
        True: the request overwrites the whole object (on a miss it is admitted without a fetch,
        dirty). False: a read (on a miss it is fetched and admitted clean).
    cost : numpy.ndarray of int, shape (n_objects,)
        Capacity units each object occupies (bytes, or bytes per partition), >= 0.
    capacity : int
        Cache capacity in the units of ``cost``, > 0.
    policy : {'lru', 'opt'}
        Replacement policy; see the module docstring.
    size : numpy.ndarray of int, shape (n_objects,), optional
        Bytes per object, for the byte totals; default ``cost``.
    dead : numpy.ndarray of bool, shape (n,), optional
        True: once request i is served its object is freed with no write-back (default: none).
    chunk : int, optional
        Feed the kernels this many requests at a time (OPT: more where its next-use record, one
        int64 per object per chunk, would pass 64 MiB): the per-request arrays they need (miss,
        dead, OPT's next uses) are then allocated per chunk, not per trace, and the result's
        ``miss`` is None. The counts are those of one call.

    Returns
    -------
    Replay

    Raises
    ------
    InputError
        On a wrong type, dtype, shape or value, naming the argument and the value.

    Examples
    --------
    Three objects of one unit read in a cycle through two units of cache: LRU always misses,
    OPT keeps one of them.

    >>> import numpy as np
    >>> obj = np.array([0, 1, 2, 0, 1, 2])
    >>> w = np.zeros(6, bool)
    >>> replay(obj, w, np.ones(3, np.int64), 2, "lru").misses
    6
    >>> replay(obj, w, np.ones(3, np.int64), 2, "opt").misses
    4
    """
    if not isinstance(policy, str) or policy not in POLICIES:
        _fail(f"replay: policy={policy!r} must be one of {', '.join(POLICIES)}")
    obj = _int_array("obj", obj)
    if not isinstance(write, np.ndarray) or write.dtype != np.bool_:
        got = f"dtype={write.dtype}" if isinstance(write, np.ndarray) else type(write).__name__
        _fail(f"replay: write must be a numpy bool array, got {got}")
    if write.shape != obj.shape:
        _fail(f"replay: write shape={write.shape} must equal obj shape={obj.shape}")
    write = np.ascontiguousarray(write)
    cost = _int_array("cost", cost)
    _check_nonneg("cost", cost)
    capacity = _as_int("capacity", capacity)
    if capacity <= 0:
        _fail(f"replay: capacity={capacity} must be > 0")
    if capacity > _INT64_MAX:
        _fail(f"replay: capacity={capacity} does not fit in int64")
    if size is None:
        size = cost
    else:
        size = _int_array("size", size)
        if size.shape != cost.shape:
            _fail(f"replay: size shape={size.shape} must equal cost shape={cost.shape}")
        _check_nonneg("size", size)
    n_objects = cost.shape[0]
    n = obj.shape[0]
    if dead is not None:
        if not isinstance(dead, np.ndarray) or dead.dtype != np.bool_ or dead.shape != obj.shape:
            _fail(f"replay: dead must be a numpy bool array of shape {obj.shape}, got "
                  f"{getattr(dead, 'dtype', type(dead).__name__)} {getattr(dead, 'shape', '')}".rstrip())
        dead = np.ascontiguousarray(dead)
    if n:
        lo = int(np.argmin(obj))
        hi = int(np.argmax(obj))
        if obj[lo] < 0:
            _fail(f"replay: obj[{lo}]={int(obj[lo])} must be in [0, {n_objects})")
        if obj[hi] >= n_objects:
            _fail(f"replay: obj[{hi}]={int(obj[hi])} must be in [0, {n_objects}) (len(cost)={n_objects})")

    obj = dense_ids(obj, n_objects)
    st = State(policy, cost, capacity, n if policy == "opt" else 0, requests=n)
    if chunk is not None:
        _feed_chunks(st, obj, write, dead, n_objects, chunk)
        return st.result(size)
    if dead is None:
        dead = np.zeros(n, np.bool_)
    miss = np.empty(n, np.bool_)
    nu = None
    if policy == "opt":
        nu = np.empty(n, np.int64)
        st.next_uses(obj, 0, np.full(n_objects, n, np.int64), nu)
    st.feed(obj, write, dead, miss, nu)
    return st.result(size, miss)


def opt_chunk(chunk: int, n: int, n_objects: int, record_bytes: int) -> int:
    """Requests per chunk of a chunked OPT replay of ``n`` requests: at least ``chunk``, and few
    enough chunks that its next-use record (one int64 per object per chunk) stays within
    ``record_bytes``."""
    return max(chunk, -(-n // max(1, record_bytes // (8 * max(n_objects, 1)))))


def _feed_chunks(st: "State", obj, write, dead, n_objects: int, chunk: int) -> None:
    """Feed ``st`` the whole trace ``chunk`` requests at a time (see :func:`replay`). OPT first
    walks the chunks backwards recording, per chunk, each object's first request after it; the
    forward pass then computes each chunk's next uses from its record."""
    n = obj.shape[0]
    if st.policy == "opt":
        chunk = opt_chunk(chunk, n, n_objects, _RECORD_BYTES)
    chunk = max(1, min(int(chunk), n))
    starts = range(0, n, chunk)
    miss = np.empty(chunk, np.bool_)
    no_dead = np.zeros(chunk, np.bool_) if dead is None else None
    nu = record = None
    if st.policy == "opt":
        nu = np.empty(chunk, np.int64)
        record = {}
        after = np.full(n_objects, n, np.int64)
        for a in reversed(starts):
            record[a] = after.copy()
            st.next_uses(obj[a:a + chunk], a, after, nu[:min(chunk, n - a)])
    for a in starts:
        m = min(chunk, n - a)
        if record is not None:
            st.next_uses(obj[a:a + m], a, record.pop(a), nu[:m])
        st.feed(obj[a:a + m], write[a:a + m], no_dead[:m] if dead is None else dead[a:a + m], miss[:m],
                None if nu is None else nu[:m])


def dense_ids(obj: np.ndarray, n_objects: int) -> np.ndarray:
    """The kernels' id type: int32 whenever every id fits (one compiled signature, half the
    bytes to stream), int64 past 2**31 objects."""
    if n_objects <= 2**31 and obj.dtype != np.int32:
        return obj.astype(np.int32)
    return np.ascontiguousarray(obj)


class State:
    """The cache of one replay, fed its requests chunk by chunk (the same result as one call on
    the concatenated requests). Per object: resident, dirty, the policy's links or next uses, and
    the counts so far; the totals come from :meth:`result` after the last chunk.

    ``n_total``: for ``opt``, the number of requests in the whole trace (next-use times run up to
    it, "never again" is ``n_total``); ignored for ``lru``. ``requests``: how many requests it
    will be fed, when known: a short replay, while the process's ``_jit.PLAIN_BUDGET`` lasts,
    runs the kernels as plain Python (no compile, no numba; the same counts).
    """

    def __init__(self, policy: str, cost: np.ndarray, capacity: int, n_total: int = 0,
                 requests: int | None = None):
        from loopsim.sim._jit import PLAIN_BUDGET, kernels

        # numba loads here, on first use; a replay known to be short runs the plain kernels
        self._k = kernels("loopsim.sim._kernels", PLAIN_BUDGET if requests is None else requests)
        self.policy = policy
        self.cost = cost
        self.capacity = capacity
        n_objects = cost.shape[0]
        self.requests = 0
        self.writebacks = np.zeros(n_objects, np.int64)
        self.miss_count = np.zeros(n_objects, np.int64)
        self.fetch_count = np.zeros(n_objects, np.int64)
        self.resident = np.zeros(n_objects, np.bool_)
        self.dirty = np.zeros(n_objects, np.bool_)
        self.st = np.zeros(4, np.int64)
        if policy == "lru":
            self.link = np.full(2 * n_objects, -1, np.int64)  # previous, next of each object
            self.st[:2] = -1
        else:
            # OPT packs (next use, id) into one int64: next use <= n_total must fit above the id bits
            self.shift = max(n_objects - 1, 1).bit_length()
            if (n_total << self.shift) | ((1 << self.shift) - 1) > _INT64_MAX:
                _fail(f"replay: policy='opt' with n={n_total} requests and {n_objects} objects is "
                      f"too large (needs n * 2**{self.shift} < 2**63)")
            self.cur = np.full(n_objects, -1, np.int64)
            self.heap = np.empty(min(n_total + 1, 2 * n_objects + 128), np.int64)

    def next_uses(self, obj: np.ndarray, base: int, last: np.ndarray, out: np.ndarray) -> None:
        """Next-use times of requests ``base ...`` into ``out`` (see ``_kernels.next_use_kernel``)."""
        self._k.next_use_kernel(obj, base, last, out)

    def feed(self, obj, write, dead, miss, nu=None) -> None:
        """Replay the next chunk: dense ids ``obj`` (int32, or int64 past 2**31 objects), bool
        ``write``/``dead`` of the same length; fills ``miss``; ``nu``: next uses (opt only)."""
        k = self._k
        cap = np.int64(self.capacity)
        try:
            if self.policy == "lru":
                k.lru_kernel(obj, write, self.cost, cap, dead, miss, self.writebacks, self.miss_count,
                             self.fetch_count, self.link, self.resident, self.dirty, self.st)
            else:
                k.opt_kernel(obj, write, self.cost, cap, dead, nu, self.shift, miss, self.writebacks,
                             self.miss_count, self.fetch_count, self.cur, self.resident, self.dirty,
                             self.heap, self.st)
        except RuntimeError as e:  # the kernels' own consistency guards
            raise InternalError(f"replay: {e}") from None
        self.requests += obj.shape[0]

    def result(self, size: np.ndarray, miss: np.ndarray | None = None) -> "Replay":
        """Flush dirty residents and total up (call once, after the last chunk)."""
        self.writebacks += self.resident & self.dirty  # numpy: one kernel fewer to compile
        return Replay(
            miss=miss,
            writebacks=self.writebacks,
            peak_cost=int(self.st[3]),
            requests=self.requests,
            misses=int(self.miss_count.sum()),
            miss_bytes=_weighted_total(self.miss_count, size),
            fetch_bytes=_weighted_total(self.fetch_count, size),
            writeback_bytes=_weighted_total(self.writebacks, size),
            policy=self.policy,
            capacity=self.capacity,
            fetches=self.fetch_count,
        )


def next_use(obj) -> np.ndarray:
    """Index of the next request of the same object, or ``n`` if there is none.

    Parameters
    ----------
    obj : numpy.ndarray of int, shape (n,)
        Non-negative object ids (dense ids are cheapest: the pass keeps one slot per id up to the
        largest; sparse ids are densified first).

    Returns
    -------
    numpy.ndarray of int64, shape (n,)

    Examples
    --------
    >>> next_use(np.array([7, 3, 7, 7]))
    array([2, 4, 3, 4])
    """
    obj = _int_array("obj", obj, "next_use")
    n = obj.shape[0]
    if n == 0:
        return np.empty(0, np.int64)
    _check_nonneg("obj", obj, "next_use")
    n_objects = int(obj.max()) + 1
    if n_objects > 4 * n + 1024:  # sparse ids: a last-seen slot per id would waste memory
        _, obj = np.unique(obj, return_inverse=True)
        obj = np.ascontiguousarray(obj.reshape(-1), dtype=np.int64)
        n_objects = int(obj.max()) + 1
    from loopsim.sim import _kernels

    out = np.empty(n, np.int64)
    _kernels.next_use_kernel(dense_ids(obj, n_objects), 0, np.full(n_objects, n, np.int64), out)
    return out
