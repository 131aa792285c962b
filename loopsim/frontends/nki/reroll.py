"""Re-rolling: the iterations of a loop traced concretely, folded back into one loop.

A loop whose index the kernel uses as a Python value (``tiles[k]``, ``k % 2``, ``if k == 0``)
is traced iteration by iteration (:class:`loopsim.frontends.nki.record.IterFrame`). Where every
iteration recorded the same statements (same kinds, lines, inner loops and logical tensors) and
each tile start moves by the same number of elements from one iteration to the next, the
iterations become one :class:`LoopRec` whose index is that start's new term: the IR is the one
a symbolic trace of the loop gives. Accumulators and op results made anew in each iteration
(one per iteration's tile) merge into one logical tensor, as in a symbolic trace. Where the
iterations differ, the first or last one is peeled, and failing that the statements stay
unrolled (each at its constant offset).

A load that fills a buffer of its own in every iteration (a list of tiles) carries the loop in
``LoadEv.hoist``: lowering hoists it out of the loop when a buffer is read after its iteration,
the same as a buffer allocated outside the loop and filled tile by tile.
"""

from __future__ import annotations

from dataclasses import replace

from loopsim.frontends.nki.events import AccumulateEv, LoadEv, LoopRec, MatmulEv, OpEv, StoreEv, TileRef, tile_refs
from loopsim.frontends.nki.symbolic import LoopVar, Sym

#: logical kinds made by the kernel's own statements: one per iteration merges into one
_MADE = ("acc", "op", "sum")


class _Flat:
    """A body as a structure token list, its tile references and its inner loop variables;
    ``core`` marks the tokens and references of data movement and matmuls (not engine ops)."""

    def __init__(self, body: list):
        self.tokens: list = []
        self.refs: list[TileRef] = []
        self.core_tokens: list = []
        self.core_refs: list[int] = []  # indices into refs
        self.loops: list[LoopVar] = []
        self.loads: list[LoadEv] = []
        self._walk(body)

    def _walk(self, body):
        for n in body:
            if isinstance(n, LoopRec):
                v = n.var
                tok = ("loop", v.trips, v.kind, v.site)
                self.tokens.append(tok)
                self.core_tokens.append(tok)
                self.loops.append(v)
                self._walk(n.body)
                self.tokens.append(("end",))
                self.core_tokens.append(("end",))
                continue
            rs = tile_refs(n)
            tok = (type(n).__name__, n.line, tuple(r.sizes for r in rs))
            if isinstance(n, MatmulEv):
                tok += (n.free_dims,)
            elif isinstance(n, OpEv):
                lg = n.value
                tok += (lg.data_ops, lg.stat_ops, lg.stat, lg.running)
            elif isinstance(n, LoadEv):
                tok += (tuple(self._var_id(v) for v in n.absorbed),
                        tuple(self._var_id(h[0]) for h in n.hoist))
                self.loads.append(n)
            self.tokens.append(tok)
            if not isinstance(n, OpEv):
                self.core_tokens.append(tok)
                self.core_refs.extend(range(len(self.refs), len(self.refs) + len(rs)))
            self.refs.extend(rs)

    def _var_id(self, v):
        return ("inner", self.loops.index(v)) if v in self.loops else ("outer", v.uid)


def _match(a: _Flat, b: _Flat, unions: dict, core: bool = False):
    """Per reference and dimension, b's start minus a's (constants), or None when b is not the
    same statements as a (``core``: the same data movement and matmuls). ``unions`` collects
    b's logicals to merge into a's."""
    if (a.core_tokens != b.core_tokens) if core else (a.tokens != b.tokens):
        return None
    vmap = dict(zip(b.loops, a.loops))
    pairs = zip([a.refs[i] for i in a.core_refs], [b.refs[i] for i in b.core_refs]) if core \
        else zip(a.refs, b.refs)
    diffs = []
    for ra, rb in pairs:
        la, lb = ra.logical.find(), rb.logical.find()
        if id(lb) in unions:
            if unions[id(lb)][1] is not la:
                return None
        elif la is not lb:
            if la.kind != lb.kind or la.kind not in _MADE or la.line != lb.line or la.dtype != lb.dtype:
                return None
            unions[id(lb)] = (lb, la)
        row = []
        for sa, sb in zip(ra.starts, rb.starts):
            terms = {vmap.get(v, v): c for v, c in sb.terms.items()}
            if terms != sa.terms:
                return None
            row.append(sb.const - sa.const)
        diffs.append(row)
    return diffs


def _linear(per: list, idx: list[int]):
    """The step per reference and dimension when ``per[j]`` (body j's offsets from body 0) is
    (idx[j] - idx[0]) times it, else None."""
    if not per:
        return None
    i0 = idx[0]
    d1, n1 = per[0], idx[1] - i0
    step = [[x // n1 for x in row] for row in d1]
    if any(x % n1 for row in d1 for x in row):
        return None
    for d, i in zip(per, idx[1:]):
        if any(x != (i - i0) * s for row, srow in zip(d, step) for x, s in zip(row, srow)):
            return None
    return step


def apply_unions(unions: dict) -> None:
    """Merge each (b, a) of ``unions`` (id -> pair): b becomes part of a's logical tensor."""
    for lb, la in unions.values():
        if lb.find() is not la.find():
            lb.parent = la.find()
            for attr in ("pa_strong", "pa_weak"):
                if getattr(la, attr) is None and getattr(lb, attr) is not None:
                    setattr(la, attr, getattr(lb, attr))
            la.output = la.output or lb.output
            la.loaded = la.loaded or lb.loaded


def _fold(bodies: list[list], var: LoopVar, notes: list | None = None):
    """One LoopRec for ``bodies`` (at least two), or None where they do not re-roll. Where the
    iterations differ only in engine ops, the most common iteration stands for all (a note)."""
    flats = [_Flat(b) for b in bodies]
    n = len(bodies)
    groups: dict = {}
    for i, f in enumerate(flats):
        groups.setdefault(tuple(f.tokens), []).append(i)
    idx = max(groups.values(), key=lambda g: (len(g), g[-1]))
    if len(idx) < 2:
        return None
    rep = flats[idx[0]]
    unions: dict = {}
    per = []
    for i in idx[1:]:
        d = _match(rep, flats[i], unions)
        if d is None:
            return None
        per.append(d)
    step = _linear(per, idx)
    if step is None:
        return None
    i0 = idx[0]
    if len(idx) < n:
        core_step = [step[k] for k in rep.core_refs]
        for i in range(n):
            if i in idx:
                continue
            d = _match(rep, flats[i], unions, core=True)
            if d is None or any(x != (i - i0) * s for row, srow in zip(d, core_step)
                                for x, s in zip(row, srow)):
                return None
        if notes is not None:
            other = sorted(set(range(n)) - set(idx))
            notes.append(f"loop {var.name} ({_site(var)}): iterations {_spans(other)} run other "
                         f"engine ops than the rest; iteration {i0}'s ops stand for all "
                         "(loads, stores and matmuls are exact): ASSUMED")
    apply_unions(unions)
    v = LoopVar(var.name, n, var.kind, var.line, var.site)
    moved = iter([TileRef(r.logical, tuple((s - c * i0) + Sym({v: c}) if c else s
                                           for s, c in zip(r.starts, row)), r.sizes)
                  for r, row in zip(rep.refs, step)])
    # loads into a buffer of each iteration's own: candidates to hoist out of v
    own = {}
    for k, ev in enumerate(rep.loads):
        bufs = [b for f in flats if len(f.loads) > k for b in _bufs(f.loads[k])]
        if all(len(f.loads) == len(rep.loads) for f in flats) and None not in bufs and \
                len({id(b) for b in bufs}) == len(bufs):
            own[id(ev)] = tuple(bufs)
    body = _rebuild(bodies[i0], moved, own, v, var, depth=0)
    return LoopRec(v, body)


def _site(var: LoopVar) -> str:
    import os

    return f"{os.path.basename(var.site[0])}:{var.site[1]}" if var.site else f"line {var.line}"


def _spans(xs: list[int]) -> str:
    return ", ".join(map(str, xs[:4])) + (" ..." if len(xs) > 4 else "")


def _bufs(ev: LoadEv) -> tuple:
    """The buffers a (possibly already re-rolled) load fills."""
    return ev.hoist[-1][1] if ev.hoist else (ev.buf,)


def _rebuild(body: list, moved, own: dict, v: LoopVar, cvar: LoopVar, depth: int) -> list:
    out = []
    for n in body:
        if isinstance(n, LoopRec):
            out.append(LoopRec(n.var, _rebuild(n.body, moved, own, v, cvar, depth + 1)))
            continue
        rs = [next(moved) for _ in tile_refs(n)]
        if isinstance(n, LoadEv):
            new = replace(n, ref=rs[0])
            if id(n) in own and not n.absorbed and len(n.hoist) == depth:
                new.hoist = n.hoist + ((v, own[id(n)], cvar),)
        elif isinstance(n, StoreEv):
            new = replace(n, ref=rs[0])
        elif isinstance(n, MatmulEv):
            new = replace(n, out=rs[0], stationary=rs[1], moving=rs[2])
        elif isinstance(n, AccumulateEv):
            new = replace(n, out=rs[0], src=rs[1])
        elif isinstance(n, OpEv):
            n.value.sources = tuple(rs[1:])
            n.value.rolled = rs[0]  # where each iteration made it: a later read's sources
            new = replace(n, out=rs[0])
        else:
            new = n
        out.append(new)
    return out


def reroll(var: LoopVar, bodies: list[list], notes: list | None = None) -> list:
    """The recorded nodes standing for the concrete iterations ``bodies`` of loop ``var``
    (``notes``: where an approximation was made)."""
    if len(bodies) == 1:
        return bodies[0]
    if all(_empty(b) for b in bodies):
        return []
    full = [i for i, b in enumerate(bodies) if not _empty(b)]
    a, b = full[0], full[-1] + 1
    if b - a == len(full) < len(bodies):
        # iterations that record nothing at either end (``if k < n_used:`` around the body):
        # the loop is the run of those that do, from the first one's tiles
        if len(full) == 1:
            return bodies[a]
        bodies = bodies[a:b]
    loop = _fold(bodies, var, notes)
    if loop is not None:
        return [loop]
    out = [n for b in bodies for n in b]
    for n in out:
        if not isinstance(n, LoopRec):
            n.unrolled = var
    return out


def _empty(body: list) -> bool:
    """Whether an iteration recorded nothing (no statement, at any loop depth)."""
    return all(isinstance(n, LoopRec) and _empty(n.body) for n in body)


#: the longest run body (statements) :func:`reroll_runs` looks for
MAX_PERIOD = 64


def _shallow(n) -> tuple:
    if isinstance(n, LoopRec):
        return ("loop", n.var.site, n.var.trips, n.var.kind, len(n.body))
    return (type(n).__name__, n.line)


def _fixed(n) -> bool:
    """Whether a node has a tile at a constant offset (a statement no IR loop holds)."""
    if isinstance(n, LoopRec):
        return any(_fixed(m) for m in n.body)
    return any(s.const for r in tile_refs(n) for s in r.starts)


def reroll_runs(body: list, notes: list | None = None) -> list:
    """Runs of statements that repeat with tiles moving affinely, folded into loops: what a
    Python loop over a tuple (a tile-iterator class's tiles, say) recorded one by one. Bodies
    whose statements all sit in loops are left as they are; nested loops are searched too."""
    body = [LoopRec(n.var, reroll_runs(n.body, notes)) if isinstance(n, LoopRec) else n
            for n in body]
    if not any(_fixed(n) for n in body):
        return body
    toks = [_shallow(n) for n in body]
    out, i, L = [], 0, len(body)
    while i < L:
        best = None
        for p in range(1, min(MAX_PERIOD, (L - i) // 2) + 1):
            c = 1
            while i + (c + 1) * p <= L and toks[i + c * p:i + (c + 1) * p] == toks[i:i + p]:
                c += 1
            if c < 2 or (best is not None and c * p <= best[0] * best[1]):
                continue
            chunks = [body[i + j * p:i + (j + 1) * p] for j in range(c)]
            v = LoopVar("t", c, "unrolled", chunks[0][0].var.line if isinstance(chunks[0][0], LoopRec)
                        else chunks[0][0].line)
            loop = _fold(chunks, v, notes)
            if loop is not None:
                best = (c, p, loop)
        if best is None:
            out.append(body[i])
            i += 1
        else:
            out.append(best[2])
            i += best[0] * best[1]
    return out
