"""Closed-form Q of a tiling: per-tensor read and write bytes as formulas in the spec's symbols.

An analytic reuse analysis of the loop nest, written as :mod:`loopsim.ir.expr` text over the spec's
parameter names (dimensions and tiles), evaluated exactly, and compared with the simulator.

``as-written`` (exact)
    Every executed load and store crosses the link. A statement's tile, summed over the loops that
    index it, covers each tensor dimension once: ragged last tiles are clipped, so the sum is the
    dimension itself (``min(ceil(E/S)*S, D)`` when the loop's extent E is not the dimension D).
    Every other enclosing loop repeats the statement ``ceil(E/S)`` times. A load of A[k, m] inside
    loops m, n, k therefore reads ``p*K*M*ceil(N/TN)`` bytes: r_A = ceil(N/TN). An output tile
    stored inside a reduction loop leaves PSUM before its sum is done; each store but the last is
    followed by a read-back of the partial sum: ``p*M*N*(ceil(K/TK) - 1)`` bytes.

``lru``, two capacity regimes with closed forms
    *Only the working tiles fit* (capacities from the smallest that runs the kernel up to the
    smallest reuse distance beyond it): a tile is reused only by the instruction that a load in
    the same loop body fed just before; every other request misses. Loads and stores cost what
    they cost as written, and every operand use not fed by such a load is one more read of its
    tile (a hoisted panel is loaded, then each use fetches its tile again).
    *Everything reused fits* (capacities at or above the largest reuse distance): every input
    crosses once and every output is written once, ``p*(|A| + |B| + |C|)``.
    Between the two, LRU's Q is a staircase of partial reuse that no formula here claims; the
    simulated value is given. The regime boundaries are exact reuse (stack) distances from one
    Mattson pass over the trace (:mod:`loopsim.sim.stack`).

Where a closed form does not claim to apply (an index that is not a clean cover of its
dimension, an output stored more than once in different shapes, a nest split across cores,
statements other than load/store/matmul for the LRU regimes, or — for the working-tiles regime —
reuse at the scale of the working tiles that the rule above does not model, such as an operand
kept stationary across the innermost loop or a ragged last tile so small that its reuse fits beside
the full working tiles, detected by comparing with the stack pass at the smallest capacity), ``claimed``
is False, ``reason`` says why, and the numbers are the simulator's.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction
from typing import Mapping

import numpy as np

from loopsim.ir import expr
from loopsim.base.errors import InputError, InternalError
from loopsim.ir.kernel import ACC, LOAD, STORE, USE, Access, Kernel, Load, Loop, Matmul, Statement, Store
from loopsim.frontends.spec import SpecFile, bind_params, kernel_from, read
from loopsim.count.written import _Analysis, _Part, _prod, _split, _sum_terms, _written_parts
from loopsim.count.written import loop_symbols  # noqa: F401  (public here since before the split)

REGIMES = ("as-written", "working", "all")
_REGIME_TEXT = {"as-written": "as written", "working": "LRU, only the working tiles fit",
                "all": "LRU, everything reused fits"}


# ---------------------------------------------------------------------------------------------
# results


@dataclass(frozen=True, slots=True)
class TensorQ:
    """One tensor's traffic: formulas (``expr`` text, bytes) and their values under the params.

    ``r_text`` is read bytes / tensor bytes as a formula when every read covers the whole tensor
    (else None); ``size_text`` the tensor's bytes.
    """

    name: str
    size_text: str
    read_text: str
    write_text: str
    r_text: str | None
    read_bytes: int
    write_bytes: int
    output: bool


@dataclass(frozen=True, slots=True)
class Formula:
    """Q of one kernel in one regime. ``claimed``: the closed form applies (see ``reason``)."""

    regime: str
    tensors: tuple[TensorQ, ...]
    claimed: bool
    reason: str

    @property
    def q_text(self) -> str:
        return _sum_terms([t for tq in self.tensors for t in (tq.read_text, tq.write_text)])

    @property
    def Q(self) -> int:
        return sum(t.read_bytes + t.write_bytes for t in self.tensors)

    @property
    def title(self) -> str:
        return _REGIME_TEXT[self.regime]

    def as_dict(self) -> dict:
        return {"regime": self.regime, "claimed": self.claimed, "reason": self.reason,
                "Q": self.q_text, "Q_bytes": self.Q,
                "tensors": {t.name: {"read": t.read_text, "read_bytes": t.read_bytes,
                                     "write": t.write_text, "write_bytes": t.write_bytes,
                                     "r": t.r_text, "bytes": t.size_text} for t in self.tensors}}


@dataclass(frozen=True, slots=True)
class Regimes:
    """The LRU regimes at one capacity (cost units: bytes per partition, or bytes when flat).

    ``need``: the smallest capacity that runs the kernel; the working-tiles form applies on
    [need, ``working_below``) (None: no upper end), the everything-fits form from ``all_from``.
    ``regime`` is the one ``capacity`` falls in: "working", "all", or "between".
    ``simulated_Q`` is LRU's Q at ``capacity`` from the stack pass.
    """

    working: Formula
    all: Formula
    need: int
    working_below: int | None
    all_from: int
    capacity: int
    lanes: int | None  # the target's lanes (SBUF partitions); costs are per lane; None: bytes
    simulated_Q: int
    regime: str

    def applies(self) -> Formula | None:
        f = {"working": self.working, "all": self.all}.get(self.regime)
        return f if f is not None and f.claimed else None

    def as_dict(self) -> dict:
        unit = self.lanes or 1
        return {"capacity_bytes": self.capacity * unit, "regime": self.regime,
                "simulated_Q": self.simulated_Q,
                "working": {**self.working.as_dict(), "from_bytes": self.need * unit,
                            "below_bytes": None if self.working_below is None
                            else self.working_below * unit},
                "all": {**self.all.as_dict(), "from_bytes": self.all_from * unit}}


# ---------------------------------------------------------------------------------------------
# symbols


def _tensor_qs(an: _Analysis, reads: dict[str, list[_Part]], writes: dict[str, list[_Part]],
               params: Mapping[str, int]) -> tuple[TensorQ, ...]:
    out = []
    for t in an.kernel.tensors:
        rp, wp = reads.get(t.name, []), writes.get(t.name, [])
        read_text, write_text = _text(rp), _text(wp)
        r_text = _sum_terms([p.reps for p in rp]) if rp and all(p.full for p in rp) else \
            ("0" if not rp else None)
        rb, wb = _value(read_text, params), _value(write_text, params)
        out.append(TensorQ(t.name, an.size_text(t.name), read_text, write_text, r_text, rb, wb,
                           t.output))
    return tuple(out)


def _text(parts: list[_Part]) -> str:
    parts = [p for p in parts if p.reps != "0"]
    if not parts:
        return "0"
    ps = {p.p for p in parts}
    if len(ps) == 1 and len(parts) > 1:
        return f"{parts[0].p}*({' + '.join(_prod([p.dims, p.reps]) for p in parts)})"
    return _sum_terms([p.text() for p in parts])


def _value(text: str, params: Mapping[str, int]) -> int:
    v = expr.parse(text, "formula").evaluate(params)
    if v.denominator != 1:
        raise InternalError(f"formula '{text}' is not an integer ({v}) under {dict(params)}")
    return int(v)


def _check_same(f: Formula, counts_by_tensor: Mapping[str, tuple[int, int]]) -> Formula:
    """A claimed formula that disagrees with an exact count is demoted, never printed as claimed."""
    bad = [t.name for t in f.tensors
           if (t.read_bytes, t.write_bytes) != tuple(counts_by_tensor[t.name])]
    if f.claimed and bad:
        return Formula(f.regime, f.tensors, False,
                       f"the closed form disagrees with the count for {', '.join(bad)}")
    return f


def as_written(spec: SpecFile, params: Mapping[str, int], kernel: Kernel | None = None) -> Formula:
    """Q as the nest states it, as formulas. Exact where ``claimed`` (see the module docstring)."""
    kernel = kernel or kernel_from(spec, params)
    an = _Analysis(spec, kernel)
    reads, writes, why = _written_parts(an)
    return Formula("as-written", _tensor_qs(an, reads, writes, params), not why,
                   "; ".join(why) or "exact for every shape and tile (ragged last tiles included)")


def _feeding_load(an: _Analysis, stmt: Statement, loops: tuple[Loop, ...], acc: Access):
    """The loops of a load of exactly the tile ``acc`` that runs just before the first execution of
    ``stmt`` below it, with only loads of ``stmt``'s other operand tiles in between; else None.

    Walks back from ``stmt`` through its body, then out through each enclosing loop's body (a loop's
    first iteration follows the statements before it). Such a use hits while only the working
    tiles fit; the use's later executions under the same load (inner loops it does not index) miss.
    """
    uses = {a for a, k in stmt.accesses() if k == USE}
    node = stmt
    for depth in range(len(loops), -1, -1):
        body = loops[depth - 1].body if depth else an.kernel.body
        i = next(j for j, n in enumerate(body) if n is node)
        for prev in reversed(body[:i]):
            if not isinstance(prev, Load) or prev.tile not in uses:
                return None
            if prev.tile == acc:
                return loops[:depth]
        if depth:
            node = loops[depth - 1]
    return None


def lru_regimes(spec: SpecFile, params: Mapping[str, int], hw, *, sbuf_bytes: int | None = None,
                kernel: Kernel | None = None, trace=None) -> Regimes:
    """The two closed-form LRU regimes and the one ``hw``'s SBUF (or ``sbuf_bytes``) falls in."""
    from loopsim.sim import trace as trace_mod
    from loopsim.count.counts import working_set
    from loopsim.count.counts import capacity_units
    from loopsim.sim.stack import lru_curve, stack_distances

    kernel = kernel or kernel_from(spec, params)
    an = _Analysis(spec, kernel)
    written = as_written(spec, params, kernel)
    tr = trace if trace is not None else trace_mod.build(kernel)
    cost = tr.object_cost(hw)
    need = max(working_set(kernel, hw), int(cost.max()) if cost.size else 0, 1)
    capacity = capacity_units(hw, sbuf_bytes)
    dist = stack_distances(tr.obj, cost)
    from loopsim.sim._stack import COLD

    finite = dist[dist != COLD]
    above = finite[finite > need]
    working_below = int(above.min()) if above.size else None
    all_from = max(int(finite.max()) if finite.size else 0, need)
    caps = sorted({need, max(capacity, need), all_from})
    curve = lru_curve(tr.obj, tr.write, cost, caps, tr.obj_bytes,
                      tr.obj_tensor.astype(np.int64), distances=dist)
    at = {c: j for j, c in enumerate(caps)}

    def counted(c: int) -> dict[str, tuple[int, int]]:
        j = at[c]
        return {name: (int(curve.fetch_bytes[i, j]), int(curve.writeback_bytes[i, j]))
                for i, name in enumerate(tr.tensor_names)}

    simple = all(isinstance(s, (Load, Store, Matmul)) for s, _ in an.stmts)
    # working tiles only: as written, plus one read per operand use not fed by an adjacent load
    reads: dict[str, list[_Part]] = {}
    writes: dict[str, list[_Part]] = {}
    for stmt, loops in an.stmts:
        for acc, kind in stmt.accesses():
            if kind == LOAD:
                reads.setdefault(acc.tensor, []).append(an.part(acc, loops))
            elif kind == USE:
                fed = _feeding_load(an, stmt, loops, acc)
                reads.setdefault(acc.tensor, []).append(an.part(acc, loops, _unfed(an, acc, loops, fed)))
            elif kind == STORE:
                writes.setdefault(acc.tensor, []).append(an.part(acc, loops))
            elif kind == ACC:
                p, _ = an.partial_sums(stmt, loops, acc)
                if p is not None:
                    reads.setdefault(acc.tensor, []).append(p)
    why = [] if written.claimed else [written.reason]
    if not simple:
        why.append("statements other than load, store and matmul are not modelled")
    work = Formula("working", _tensor_qs(an, reads, writes, params), not why,
                   "; ".join(why) or "capacities from the working tiles up to the first reuse distance")
    if work.claimed and any((t.read_bytes, t.write_bytes) != counted(need)[t.name] for t in work.tensors):
        work = Formula("working", work.tensors, False,
                       "the nest reuses data at the scale of the working tiles in a way this closed "
                       "form does not model (an operand kept stationary across the innermost loop, "
                       "or a small ragged last tile or panel that fits beside the working tiles); "
                       "see the simulated values")
    # everything reused fits: each input read once, each output written once
    reads, writes = {}, {}
    for t in kernel.tensors:
        whole = _Part(t.elem_bytes, an.dims_text(t.name), "1", t.bytes, True, True)
        (writes if t.output else reads).setdefault(t.name, []).append(whole)
    full = all(p.full for ps in (*_all_parts(an).values(),) for p in ps)
    why = [] if simple else ["statements other than load, store and matmul are not modelled"]
    if not full:
        why.append("some tensor is not touched in full")
    if _split(kernel):
        why.append("the nest is split across cores (LNC), which this analysis does not model")
    allf = _check_same(Formula("all", _tensor_qs(an, reads, writes, params), not why,
                               "; ".join(why) or "capacities at or above the largest reuse distance"),
                       counted(all_from))
    cap = max(capacity, need)
    regime = ("all" if capacity >= all_from else
              "working" if capacity >= need and (working_below is None or capacity < working_below)
              else "between" if capacity >= need else "below")
    q_sim = int(curve.Q[at[cap]])
    if _split(kernel):  # each core replays its share with its own SBUF; the pass above is one core
        from loopsim.count.lnc import count_split

        q_sim = count_split(kernel, policy="lru", capacity=cap, target=hw).Q
    return Regimes(work, allf, need, working_below, all_from, capacity, hw.lanes, q_sim, regime)


def _unfed(an: _Analysis, acc: Access, loops: tuple[Loop, ...], fed) -> tuple[str, int]:
    """Executions of a use that miss while only the working tiles fit: all of them, less one per
    execution of the load that feeds it (``fed``: that load's loops, or None)."""
    text, value = an.reps(tuple(l for l in loops if l.var not in acc.variables))
    if fed is None:
        return text, value
    ftext, fvalue = an.reps(tuple(l for l in fed if l.var not in acc.variables))
    if ftext == text:
        return "0", 0
    return f"({text} - {ftext})", value - fvalue


def _all_parts(an: _Analysis) -> dict[str, list[_Part]]:
    out: dict[str, list[_Part]] = {}
    for stmt, loops in an.stmts:
        for acc, kind in stmt.accesses():
            if kind != ACC:
                out.setdefault(acc.tensor, []).append(an.part(acc, loops))
    return out


# ---------------------------------------------------------------------------------------------
# one call for the command


@dataclass(frozen=True, slots=True)
class Derivation:
    """Everything ``loopsim formula`` prints: the as-written form checked against the simulator,
    the LRU regimes at the given capacity, and the lower bound (None when not matmul-shaped)."""

    kernel: Kernel
    params: tuple[tuple[str, int], ...]
    as_written: Formula
    simulated_as_written: dict
    regimes: Regimes
    lower_bound: object

    def as_dict(self) -> dict:
        lb = self.lower_bound
        return {"kernel": self.kernel.name, "params": dict(self.params),
                "as_written": {**self.as_written.as_dict(),
                               "simulated_Q": sum(r + w for r, w in self.simulated_as_written.values()),
                               "agrees": all(
                                   (t.read_bytes, t.write_bytes) == self.simulated_as_written[t.name]
                                   for t in self.as_written.tensors)},
                "lru": self.regimes.as_dict(),
                "lower_bound_Q": lb.Q if lb is not None else None,
                "lower_bound": lb.as_dict() if lb is not None else None}


def refuse_program(spec: SpecFile, what: str) -> None:
    """An :class:`InputError` for a program of ops (``what``: the command's job, before "a single
    loop nest"), instead of the spec reader's "nest.body: missing"."""
    nest = spec.data.get("nest")
    single = isinstance(nest, dict) and isinstance(nest.get("body"), str)
    kernels = isinstance(nest, dict) and bool(nest) and all(isinstance(v, dict) for v in nest.values())
    if not single and ("ops" in spec.data or "schedule" in spec.data or kernels):
        raise InputError(f"{spec.path}: a program of ops ([ops]/[schedule]); {what} a single "
                         "loop nest ([nest] body)")


def derive(name_or_path: str | SpecFile, sets: Mapping[str, int] | None, hw, *,
           sbuf_bytes: int | None = None) -> Derivation:
    """Formulas for a spec with ``sets`` overrides on ``hw`` (SBUF ``sbuf_bytes``, default the sheet's)."""
    from loopsim.sim import trace as trace_mod
    from loopsim.count.bound import lower_bound
    from loopsim.count.counts import check_tiles, count

    spec = name_or_path if isinstance(name_or_path, SpecFile) else read(name_or_path)
    refuse_program(spec, "loopsim formula derives the Q of")
    params = bind_params(spec, sets or {})
    kernel = kernel_from(spec, params)
    check_tiles(kernel, hw)
    tr = trace_mod.build(kernel)
    # as written, traffic does not depend on capacity: count with room for anything (a split
    # nest as its cores run it, each loading what its share of the nest loads)
    if _split(kernel):
        from loopsim.count.lnc import count_split

        c = count_split(kernel, policy="as-written", capacity=2**62, target=hw)
    else:
        c = count(kernel, policy="as-written", capacity=2**62, target=hw, trace=tr)
    sim = {t.name: (t.read_bytes, t.write_bytes) for t in c.tensors}
    aw = _check_same(as_written(spec, params, kernel), sim)
    reg = lru_regimes(spec, params, hw, sbuf_bytes=sbuf_bytes, kernel=kernel, trace=tr)
    return Derivation(kernel, tuple(params.items()), aw, sim, reg,
                      lower_bound(kernel, hw, sbuf_bytes))
