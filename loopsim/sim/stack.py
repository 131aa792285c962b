"""LRU traffic at every capacity from one pass over a trace (Mattson's stack-distance analysis).

LRU has the inclusion property: the resident set at capacity C is always the longest prefix of the
recency stack that fits in C (also with objects of different costs, as long as every cost is at
most C, so every missed object is admitted). A request therefore hits exactly when its
*stack distance* — its own cost plus the cost of the distinct objects requested since its previous
request — is at most C. One pass computes every distance; counting distances above each capacity
then gives the misses of every capacity at once, instead of one :func:`loopsim.sim.replay` per
capacity.

Conventions are those of :func:`loopsim.sim.replay` with ``policy="lru"``: a write request marks
its object dirty (a write miss is admitted without a fetch), evicting a dirty object writes it back
once, and dirty residents are written back once at the end. Write-backs are *included*: a dirty
object is written back before its next request exactly when that request misses, and at the end
otherwise (see :func:`loopsim.sim._stack.curve_kernel`), so the write-back bytes of every capacity
come from the same pass and equal ``replay(...).writebacks``.

Capacities below the largest cost of a requested object are refused: there an object can never be
admitted, it bypasses the cache, and the inclusion argument no longer holds.

Examples
--------
Three one-unit objects read in a cycle: with 2 units every request misses (6), with 3 only the
three cold misses remain.

>>> import numpy as np
>>> c = lru_curve(np.array([0, 1, 2, 0, 1, 2]), np.zeros(6, bool), np.ones(3, np.int64), [2, 3])
>>> c.misses.tolist()
[6, 3]
"""

from __future__ import annotations

import operator
from dataclasses import dataclass

import numpy as np

from loopsim.sim import _check_nonneg, _int_array
from loopsim.base.errors import InputError

__all__ = ["LRUCurve", "lru_curve", "stack_distances"]

_INT64_MAX = np.iinfo(np.int64).max


@dataclass(frozen=True, slots=True)
class LRUCurve:
    """LRU traffic per capacity, from one stack-distance pass. Capacities in cost units.

    Attributes
    ----------
    capacities : numpy.ndarray of int64, shape (k,)
        The capacities asked for, in the order given.
    misses, miss_bytes : numpy.ndarray of int64, shape (k,)
        Missed requests (reads and writes) and their bytes (``size`` per miss).
    fetch_bytes, writeback_bytes : numpy.ndarray of int64, shape (n_groups, k)
        Bytes read from HBM (read misses) and written back, per group of objects (one group, 0,
        unless ``group`` was given: pass a trace's ``obj_tensor`` to get them per tensor).
    fetches, writebacks : numpy.ndarray of int64, shape (n_groups, k)
        The same as counts.
    max_distance : int
        Largest finite stack distance (0 when nothing is requested twice): at this capacity and
        above, LRU misses only on first requests.
    min_capacity : int
        Smallest capacity accepted: the largest cost of a requested object.
    """

    capacities: np.ndarray
    misses: np.ndarray
    miss_bytes: np.ndarray
    fetches: np.ndarray
    fetch_bytes: np.ndarray
    writebacks: np.ndarray
    writeback_bytes: np.ndarray
    max_distance: int
    min_capacity: int

    @property
    def Q(self) -> np.ndarray:
        """Q per capacity: fetched plus written-back bytes over all groups, shape (k,)."""
        return self.fetch_bytes.sum(axis=0) + self.writeback_bytes.sum(axis=0)


def _check_ids(obj: np.ndarray, n_objects: int, where: str) -> None:
    if obj.size:
        lo, hi = int(np.argmin(obj)), int(np.argmax(obj))
        for k in (lo, hi):
            if not 0 <= obj[k] < n_objects:
                raise InputError(f"{where}: obj[{k}]={int(obj[k])} must be in [0, {n_objects})")


def stack_distances(obj, cost) -> np.ndarray:
    """Byte-weighted LRU stack distance of every request (int64[n]); first requests get int64 max.

    Parameters
    ----------
    obj : numpy.ndarray of int, shape (n,)
        Dense object ids in ``[0, len(cost))``.
    cost : numpy.ndarray of int, shape (n_objects,)
        Capacity units of each object, >= 0.

    Examples
    --------
    >>> stack_distances(np.array([0, 1, 0, 0]), np.array([2, 5])).tolist()[2:]
    [7, 2]
    """
    obj = _int_array("obj", obj, "stack_distances")
    cost = _int_array("cost", cost, "stack_distances")
    _check_nonneg("cost", cost, "stack_distances")
    _check_ids(obj, cost.shape[0], "stack_distances")
    if cost.size and int(cost.sum()) < 0:  # wrapped: distances could overflow
        raise InputError("stack_distances: the costs sum beyond int64")
    from loopsim.sim import _stack  # numba loads here, on first use

    return _stack.stack_distance_kernel(obj, cost, cost.shape[0])


def lru_curve(obj, write, cost, capacities, size=None, group=None, *, distances=None) -> LRUCurve:
    """LRU misses, fetched and written-back bytes at every capacity in ``capacities``, one pass.

    Parameters
    ----------
    obj, write, cost, size
        As for :func:`loopsim.sim.replay` (``size`` defaults to ``cost``).
    capacities : sequence of int
        Capacities in cost units, each >= the largest cost of a requested object.
    group : numpy.ndarray of int, shape (n_objects,), optional
        Group of each object (e.g. a trace's ``obj_tensor``) for per-group bytes; default all 0.
    distances : numpy.ndarray of int64, optional
        Precomputed :func:`stack_distances` of ``obj`` and ``cost`` (to reuse one pass).

    Returns
    -------
    LRUCurve

    Raises
    ------
    InputError
        On a wrong type, shape or value, naming the argument and the value.
    """
    obj = _int_array("obj", obj, "lru_curve")
    if not isinstance(write, np.ndarray) or write.dtype != np.bool_ or write.shape != obj.shape:
        got = f"dtype={write.dtype}, shape={write.shape}" if isinstance(write, np.ndarray) \
            else type(write).__name__
        raise InputError(f"lru_curve: write must be a numpy bool array shaped like obj "
                         f"{obj.shape}, got {got}")
    cost = _int_array("cost", cost, "lru_curve")
    _check_nonneg("cost", cost, "lru_curve")
    n_objects = cost.shape[0]
    size = cost if size is None else _int_array("size", size, "lru_curve")
    _check_nonneg("size", size, "lru_curve")
    if size.shape != cost.shape:
        raise InputError(f"lru_curve: size shape={size.shape} must equal cost shape={cost.shape}")
    if group is None:
        group = np.zeros(n_objects, np.int64)
    group = _int_array("group", group, "lru_curve")
    _check_nonneg("group", group, "lru_curve")
    if group.shape != cost.shape:
        raise InputError(f"lru_curve: group shape={group.shape} must equal cost shape={cost.shape}")
    _check_ids(obj, n_objects, "lru_curve")
    caps = []
    for i, c in enumerate(np.atleast_1d(np.asarray(capacities, dtype=object)).tolist()):
        try:
            if isinstance(c, bool):
                raise TypeError
            caps.append(operator.index(c))
        except TypeError:
            raise InputError(f"lru_curve: capacities[{i}]={c!r} must be an integer") from None
    if not caps:
        raise InputError("lru_curve: capacities is empty; give at least one capacity")
    used = np.unique(obj)
    min_cap = int(cost[used].max()) if used.size else 0
    for i, c in enumerate(caps):
        if c <= 0 or c < min_cap or c > _INT64_MAX:
            raise InputError(f"lru_curve: capacities[{i}]={c} must be > 0 and at least the largest "
                             f"object cost, {min_cap} (smaller capacities make LRU bypass objects)")
    if obj.size and size.size and obj.size * int(size.max()) > _INT64_MAX:
        raise InputError("lru_curve: byte totals could exceed int64; use smaller sizes")
    if distances is None:
        distances = stack_distances(obj, cost)
    else:
        distances = _int_array("distances", distances, "lru_curve")
        if distances.shape != obj.shape:
            raise InputError(f"lru_curve: distances shape={distances.shape} must equal obj shape={obj.shape}")
    from loopsim.sim import _stack

    order = np.argsort(np.asarray(caps, dtype=np.int64), kind="stable")
    sorted_caps = np.asarray(caps, dtype=np.int64)[order]
    n_groups = int(group.max()) + 1 if group.size else 1
    out = _stack.curve_kernel(obj, np.ascontiguousarray(write), distances, size, group,
                              sorted_caps, n_groups)
    back = np.empty_like(order)
    back[order] = np.arange(order.size)
    m, mb, f, fb, w, wb = out
    finite = distances[distances != _stack.COLD]
    return LRUCurve(np.asarray(caps, dtype=np.int64), m[back], mb[back], f[:, back], fb[:, back],
                    w[:, back], wb[:, back], int(finite.max()) if finite.size else 0, min_cap)
