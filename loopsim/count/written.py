"""As-written traffic of a loop nest in closed form: the analysis behind :mod:`loopsim.count.formula`'s
formulas, and the numbers alone for :func:`loopsim.count.counts.count` (no trace, no numba).

Every executed load and store crosses the link; a statement's tile, summed over the loops that
index it, covers each tensor dimension once (ragged last tiles clipped), and every other enclosing
loop repeats it. See :mod:`loopsim.count.formula` for the rules and where they are claimed.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from loopsim.base.errors import InternalError
from loopsim.ir.kernel import ACC, LOAD, STORE, Access, Kernel, Loop, Matmul, Statement, Store, walk


def _atom(text: str) -> str:
    t = str(text).strip()
    return t if t.isidentifier() or t.isdigit() else f"({t})"


def _prod(factors: list[str]) -> str:
    fs = [f for f in factors if f != "1"]
    return "*".join(fs) if fs else "1"


def _sum_terms(terms: list[str]) -> str:
    ts = [t for t in terms if t != "0"]
    return " + ".join(ts) if ts else "0"


def _trips_text(e: str, s: str) -> str:
    e, s = _atom(e), _atom(s)
    if e == s:
        return "1"
    if s == "1":
        return e
    if e.isdigit() and s.isdigit():
        return str(-(-int(e) // int(s)))
    return f"ceil({e}/{s})"


def loop_symbols(kernel: Kernel) -> dict[int, tuple[str, str]]:
    """id(loop) -> (extent text, step text) as the source spelled them (kept in the IR:
    :attr:`Loop.symbols`), else the numbers."""
    return {id(n): tuple(n.symbols) if n.symbols else (str(n.extent), str(n.step))
            for n, _ in walk(kernel.body) if isinstance(n, Loop)}


@dataclass(frozen=True, slots=True)
class _Part:
    """One term: p * dims * reps bytes. ``full``: the dims cover the whole tensor."""

    p: int
    dims: str
    reps: str
    value: int
    full: bool
    exact: bool  # the closed form holds (clean covers); else ``value`` is enumerated

    def text(self) -> str:
        return _prod([str(self.p), self.dims, self.reps])


class _Analysis:
    def __init__(self, spec, kernel: Kernel):
        """``spec`` None: loop extents and steps are written as numbers (values only needed)."""
        self.spec = spec
        self.kernel = kernel
        self.tm = kernel.tensor_map
        self.sym = loop_symbols(kernel) if spec is not None else {
            id(n): (str(n.extent), str(n.step)) for n, _ in walk(kernel.body) if isinstance(n, Loop)}
        self.stmts = list(kernel.statements())
        self.order = {id(s): i for i, (s, _) in enumerate(self.stmts)}

    def trips(self, l: Loop) -> tuple[str, int]:
        e, s = self.sym[id(l)]
        return _trips_text(e, s), l.trips

    def reps(self, loops: tuple[Loop, ...]) -> tuple[str, int]:
        texts, value = [], 1
        for l in loops:
            t, v = self.trips(l)
            texts.append(t)
            value *= v
        return _prod(texts), value

    def dim(self, acc: Access, axis: int, loops: tuple[Loop, ...]) -> tuple[str, int, bool, bool]:
        """(text, elements summed over the tile's executions, covers whole dim, closed form exact)."""
        t = self.tm[acc.tensor]
        d = t.shape[axis]
        d_text = _atom(t.shape_names[axis]) if t.shape_names else str(d)
        terms = acc.index[axis]
        if not acc.plain:  # the general form (offset, coefficients, extent): enumerated, not claimed
            value = _enumerate_general(acc, axis, loops, t)
            return d_text, value, value == d, False
        if not terms:
            return d_text, d, True, True
        bound = {l.var: l for l in loops}
        ls = sorted((bound[v] for v in terms), key=lambda l: -l.step)
        clean = all(ls[i].trips * ls[i].step == ls[i - 1].step for i in range(1, len(ls)))
        value = _enumerate_cover(ls, d)
        if not clean:
            return d_text, value, value == d, False
        top = ls[0]
        e_text, s_text = self.sym[id(top)]
        if _atom(e_text) == d_text:
            text = d_text
        else:
            text = f"min({_trips_text(e_text, s_text)}*{_atom(s_text)}, {d_text})"
        closed = min(top.trips * top.step, d)
        return text, value, value == d, closed == value

    def part(self, acc: Access, loops: tuple[Loop, ...], extra_reps: tuple[str, int] | None = None) -> _Part:
        """Bytes of ``acc`` over all executions of its statement at ``loops``."""
        t = self.tm[acc.tensor]
        vars_in = acc.variables
        dims, value, full, exact = [], t.elem_bytes, True, True
        for axis in range(len(acc.index)):
            txt, v, f, e = self.dim(acc, axis, loops)
            dims.append(txt)
            value *= v
            full, exact = full and f, exact and e
        if sum(len(ix) for ix in acc.index) != len(vars_in):
            exact = False  # a variable indexes two dimensions: the cover is not a product
        rep_text, rep_value = self.reps(tuple(l for l in loops if l.var not in vars_in))
        if extra_reps is not None:
            rep_text, rep_value = extra_reps
        return _Part(t.elem_bytes, _prod(dims), rep_text, value * rep_value, full, exact)

    def dims_text(self, name: str) -> str:
        t = self.tm[name]
        return _prod([_atom(s) for s in t.shape_names] if t.shape_names else [str(d) for d in t.shape])

    def size_text(self, name: str) -> str:
        return _prod([str(self.tm[name].elem_bytes), self.dims_text(name)])

    def partial_sums(self, stmt: Statement, loops: tuple[Loop, ...], acc: Access) -> tuple[_Part | None, str]:
        """Read-backs of an accumulated tile stored before its sum is complete (as written).

        Claimed when one store statement writes the tensor, after the accumulation in the body of
        their innermost common loop, each block once per iteration of the common loops: then a
        block is stored once per iteration of the common loops that do not index it (R times) and
        re-accumulated after every store but the last, R - 1 read-backs.
        """
        stores = [(s, ls) for s, ls in self.stmts if isinstance(s, Store) and s.tile.tensor == acc.tensor]
        if not stores and not self.tm[acc.tensor].output:
            return None, ""  # read out of PSUM on chip (an acc or an op), never stored: no traffic
        if len(stores) != 1:
            return None, f"{acc.tensor} is accumulated and stored by {len(stores)} store statements"
        st, st_loops = stores[0]
        c = 0
        while c < min(len(st_loops), len(loops)) and st_loops[c] is loops[c]:
            c += 1
        common = loops[:c]
        r_text, r_value = self.reps(tuple(l for l in common if l.var not in acc.variables))
        whole = self.part(acc, loops, ("1", 1))
        stored = self.part(st.tile, st_loops)
        if self.order[id(st)] < self.order[id(stmt)] or not (whole.exact and stored.exact) or \
                stored.value != r_value * whole.value:
            return None, (f"the store of {acc.tensor} ({st}) does not write each accumulated block "
                          f"once per iteration of the loops around '{stmt}', after it")
        if r_text == "1":
            return None, ""
        return self.part(acc, loops, (f"({r_text} - 1)", r_value - 1)), ""


def _enumerate_general(acc: Access, axis: int, loops: tuple[Loop, ...], t) -> int:
    """Elements of ``acc``'s tiles in ``axis`` summed over every start (``offset + sum(coef *
    var)`` below the dimension), each clipped at the tensor's edge."""
    from loopsim.ir.kernel import tile_extent

    d = t.shape[axis]
    bound = {l.var: l for l in loops}
    starts = np.full(1, acc.offset_of(axis), dtype=np.int64)
    for v, c in acc.terms_of(axis):
        l = bound[v]
        st = l.step * c
        trips = min(l.trips, -(-d // st))
        if starts.size * trips > 50_000_000:
            raise InternalError("tile cover too large to enumerate")
        starts = (starts[:, None] + np.arange(trips, dtype=np.int64)[None, :] * st).ravel()
    tile = tile_extent(acc, axis, {l.var: l.step for l in loops}, t)
    s = starts[starts < d]
    return int(np.minimum(tile, d - s).sum())


def _enumerate_cover(ls: list[Loop], d: int) -> int:
    """Elements of a dimension summed over every tile start (sum of loop offsets < d), clipped."""
    starts = np.zeros(1, dtype=np.int64)
    for l in ls:
        # offsets are >= 0, so a start of this loop at or past d only gives starts past d: clip
        # the trips to the ones below d (a 2^62-trip loop over a 1,024-row tensor is 1,024/step)
        trips = min(l.trips, -(-d // l.step))
        if starts.size * trips > 50_000_000:
            raise InternalError("tile cover too large to enumerate")
        starts = (starts[:, None] + np.arange(trips, dtype=np.int64)[None, :] * l.step).ravel()
    tile = min(ls[-1].step, d)
    s = starts[starts < d]
    return int(np.minimum(tile, d - s).sum())


# ---------------------------------------------------------------------------------------------
# building formulas


@dataclass(frozen=True, slots=True)
class WrittenCounts:
    """As-written traffic of a kernel from the closed form alone: per tensor (read, write) bytes,
    FLOPs and matmul instructions."""

    bytes: dict[str, tuple[int, int]]
    flops: int
    instructions: int


def as_written_counts(kernel: Kernel) -> WrittenCounts | None:
    """The as-written counts of ``kernel`` without a trace, or None where the closed form does
    not claim the nest. FLOPs and instructions are summed per matmul over its tiles (ragged
    ones clipped) when its K, M and N are indexed by distinct loops; else None too."""
    if any(isinstance(n, Loop) and n.spmd for n, _ in walk(kernel.body)):
        return None  # a core loop runs past tensor edges for what it does not index
    an = _Analysis(None, kernel)
    if _skips_iterations(an):
        return None  # the trace skips an iteration whose first tile starts past an edge
    reads, writes, why = _written_parts(an)
    if why:
        return None
    flops = instructions = 0
    for stmt, loops in an.stmts:
        if not isinstance(stmt, Matmul):
            continue
        from loopsim.ir.tiles import matmul_roles

        r = matmul_roles(stmt, kernel)
        axes = ((stmt.stationary, r.k_stationary), (stmt.stationary, r.m_stationary),
                (stmt.moving, r.n_moving))
        var_sets = [set(acc.index[axis]) for acc, axis in axes]
        used = set().union(*var_sets)
        if sum(map(len, var_sets)) != len(used):
            return None
        bound = {l.var: l for l in loops}
        reps = math.prod(l.trips for l in loops if l.var not in used)
        f, n = 2 * reps, reps
        for acc, axis in axes:
            ls = sorted((bound[v] for v in acc.index[axis]), key=lambda l: -l.step)
            d = an.tm[acc.tensor].shape[axis]
            f *= an.dim(acc, axis, loops)[1]
            n *= _enumerate_starts(ls, d) if ls else 1
        flops += f
        instructions += n
    return WrittenCounts({t.name: (sum(p.value for p in reads.get(t.name, [])),
                                   sum(p.value for p in writes.get(t.name, [])))
                          for t in kernel.tensors}, flops, instructions)


def _skips_iterations(an: "_Analysis") -> bool:
    """Whether some tile starts at or past its tensor's edge while its loop variable also indexes
    a dimension of another size: the walker then skips the rest of such an iteration (by the
    first access indexing the variable), which per-access closed forms cannot say, so the nest
    is counted from its trace. Loops over dimensions of one size (ragged or not) agree both ways."""
    sizes: dict[str, set[int]] = {}
    past: set[str] = set()
    for stmt, loops in an.stmts:
        bound = {l.var: l for l in loops}
        for acc, _ in stmt.accesses():
            shape = an.tm[acc.tensor].shape
            for axis in range(len(acc.index)):
                terms = acc.terms_of(axis)
                for v, _c in terms:
                    sizes.setdefault(v, set()).add(shape[axis])
                if acc.offset_of(axis) + sum((bound[v].trips - 1) * bound[v].step * c
                                             for v, c in terms) >= shape[axis]:
                    past.update(v for v, _c in terms)
    return any(len(sizes[v]) > 1 for v in past)


def _enumerate_starts(ls: list[Loop], d: int) -> int:
    """Tile starts below ``d`` over the loops summed in an index (tiles that exist)."""
    starts = np.zeros(1, dtype=np.int64)
    for l in ls:
        starts = (starts[:, None] + np.arange(l.trips, dtype=np.int64)[None, :] * l.step).ravel()
        starts = starts[starts < d]
    return int(starts.size)


def _written_parts(an: _Analysis) -> tuple[dict[str, list[_Part]], dict[str, list[_Part]], list[str]]:
    """The as-written terms of every tensor (reads, writes) and why the closed form does not
    claim the nest (empty: it does)."""
    kernel = an.kernel
    reads: dict[str, list[_Part]] = {}
    writes: dict[str, list[_Part]] = {}
    why = []
    for stmt, loops in an.stmts:
        for acc, kind in stmt.accesses():
            if kind == LOAD:
                reads.setdefault(acc.tensor, []).append(an.part(acc, loops))
            elif kind == STORE:
                writes.setdefault(acc.tensor, []).append(an.part(acc, loops))
            elif kind == ACC:
                p, reason = an.partial_sums(stmt, loops, acc)
                if reason:
                    why.append(reason)
                elif p is not None:
                    reads.setdefault(acc.tensor, []).append(p)
    parts = [p for ps in (*reads.values(), *writes.values()) for p in ps]
    if any(not a.plain for s, _ in an.stmts for a, _ in s.accesses()):
        why.append("a tile starts at a constant offset, moves by a coefficient times its loop's "
                   "step or has an explicit extent (the general access form), which this closed "
                   "form does not model; the counts come from the trace")
    elif not all(p.exact for p in parts):
        why.append("a tile index is not a clean cover of its dimension (inner loop extents do "
                   "not match the outer step)")
    if _split(kernel):
        why.append("the nest is split across cores (LNC), which this analysis does not model")
    return reads, writes, why


def _split(kernel: Kernel) -> bool:
    return any(isinstance(n, Loop) and n.split > 1 for n, _ in walk(kernel.body))
