"""An on-chip buffer filled piece by piece: which logical tile each region of it holds.

A kernel often fills one buffer with several writes of tiles of one tensor (a block of tokens
gathered tile by tile, ``buf[:, k // 4, 128 * (k % 4) ...] = x[:, 128 * k ...]``; heads shuffled
one by one, ``shuf[:, 4 * n ...] = a[:, n, :]``). Each write binds its region of the buffer to its
tile (:class:`loopsim.frontends.nki.events.Binding`, an affine map from buffer coordinates to the
tensor's). The pieces together are kept on the buffer:

- where one affine map fits every piece (a buffer axis a piece spans one coordinate of gets the
  scale two pieces' starts imply), that map is the buffer's binding: a read spanning several
  pieces (``buf[:, b, :]``) resolves to the tensor's tile it holds;
- otherwise (the map is not affine: a head index and a column index folded into one buffer axis),
  a read that lies within one piece (a constant region, or one piece of an arithmetic run of
  pieces at a loop-index offset, ``shuf[:, 4 * n ...]``) resolves through that piece's map.

Offsets and sizes are elements along the buffer's axes; starts are elements of the tensor.
"""

from __future__ import annotations

from dataclasses import dataclass

from loopsim.frontends.nki.errors import TraceError
from loopsim.frontends.nki.events import Binding, DimMap
from loopsim.frontends.nki.symbolic import Sym


@dataclass(frozen=True)
class Piece:
    """One write: the buffer region (offsets, sizes per buffer axis) and the map it bound."""

    offsets: tuple
    sizes: tuple
    binding: Binding


def _const(x: Sym):
    """The integer value of a constant expression, else None."""
    return x.const if not x.terms else None


def _disjoint(p: Piece, offsets, sizes) -> bool:
    for a, (o, n) in enumerate(zip(offsets, sizes)):
        d = _const(Sym.of(o) - p.offsets[a])
        if d is None:
            continue
        if d >= p.sizes[a] or d + n <= 0:
            return True
    return False


def _origin_value(p: Piece, d: int) -> Sym:
    """Where the piece's region starts along tensor dimension ``d``."""
    dm = p.binding.dims[d]
    v = dm.start
    for a, sc in dm.axes:
        v = v + p.offsets[a] * sc
    return v


def _fit_dim(ps: list[Piece], d: int, naxes: int) -> DimMap | None:
    """One affine map of tensor dimension ``d`` over the buffer's axes agreeing with every
    piece, or None."""
    scale: dict[int, int] = {}
    for p in ps:
        own = dict(p.binding.dims[d].axes)
        for a in range(naxes):
            if p.sizes[a] > 1:  # the piece spans this axis: its scale is known (0: another dim)
                if scale.setdefault(a, own.get(a, 0)) != own.get(a, 0):
                    return None
    vals = [_origin_value(p, d) for p in ps]
    last = len(ps) - 1
    pairs = [(0, j) for j in range(1, len(ps))] + [(i, last) for i in range(1, last)]
    progress = True
    while progress:
        progress = False
        for i, j in pairs:
            if True:
                diff = [_const(Sym.of(ps[i].offsets[a]) - ps[j].offsets[a]) for a in range(naxes)]
                if None in diff:
                    continue
                rest = vals[i] - vals[j]
                for a in scale:
                    rest = rest - diff[a] * scale[a]
                unknown = [a for a in range(naxes) if a not in scale and diff[a]]
                r = _const(rest)
                if len(unknown) == 1 and r is not None and r % diff[unknown[0]] == 0:
                    scale[unknown[0]] = r // diff[unknown[0]]
                    progress = True
    for a in range(naxes):  # an axis along which no two pieces differ: any scale fits; the pieces'
        if a not in scale:
            scale[a] = dict(ps[-1].binding.dims[d].axes).get(a, 0)
    if any(s < 0 for s in scale.values()):
        return None
    bases = []
    for p, v in zip(ps, vals):
        for a, s in scale.items():
            v = v - Sym.of(p.offsets[a]) * s
        bases.append(v)
    if any(not b.same(bases[0]) for b in bases[1:]):
        return None
    axes = tuple((a, s) for a, s in sorted(scale.items()) if s)
    sizes = {p.binding.dims[d].size for p in ps}
    if not axes and len(sizes) != 1:
        return None
    return DimMap(bases[0], ps[-1].binding.dims[d].size, axes)


def fit(ps: list[Piece]) -> Binding | None:
    """One binding for all pieces (of one logical tensor), or None where no affine map fits."""
    naxes = len(ps[0].offsets)
    dims = []
    for d in range(len(ps[0].binding.dims)):
        dm = _fit_dim(ps, d, naxes)
        if dm is None:
            return None
        dims.append(dm)
    used = [a for dm in dims for a, _ in dm.axes]
    if len(used) != len(set(used)):  # one buffer axis along two tensor dimensions: a diagonal
        return None
    return Binding(ps[0].binding.logical, tuple(dims))


def _agrees(m: Binding, p: Piece) -> bool:
    """Whether the map ``m`` gives the piece's tile on its region (the piece fits it as is)."""
    for d, (dm, own) in enumerate(zip(m.dims, p.binding.dims)):
        mine, theirs = dict(dm.axes), dict(own.axes)
        if any(n > 1 and mine.get(a, 0) != theirs.get(a, 0) for a, n in enumerate(p.sizes)):
            return False
        if not dm.axes and dm.size != own.size:
            return False
        v = dm.start
        for a, sc in dm.axes:
            v = v + p.offsets[a] * sc
        if not v.same(_origin_value(p, d)):
            return False
    return True


#: kinds of logical tensor made on chip whose tiles, made at one line, are one tensor's tiles
_MADE = ("acc", "sum")


class _Group:
    """Live pieces of one tensor and the map fitting them all (None: no affine map does)."""

    def __init__(self, pieces: list, merged: Binding | None):
        self.pieces, self.merged = pieces, merged


def _joins(lg, other) -> bool:
    """Whether tiles of ``other`` and of ``lg`` are tiles of one tensor: the same logical, or
    accumulators made at one line (one per iteration of a loop traced concretely)."""
    o = other.find()
    return o is lg or (lg.kind == o.kind and lg.kind in _MADE and lg.line == o.line and
                       lg.dtype == o.dtype)


def add(buf, offsets, sizes, new: Binding) -> Binding:
    """Record a write of ``new`` into region (``offsets``, ``sizes``) of ``buf``; returns the
    buffer's binding from now on: the map fitting every live piece of the same tensor, or
    ``new``. Pieces the write overwrites are dropped; pieces of other tensors stay, for reads
    within them. Accumulators made at one line whose tiles fit one map become one tensor."""
    from loopsim.frontends.nki.reroll import apply_unions

    offsets = tuple(Sym.of(o) for o in offsets)
    sizes = tuple(sizes)
    if sizes == buf.shape and not any(o.terms or o.const for o in offsets):  # the whole buffer
        piece = Piece(offsets, sizes, new)
        buf.groups, buf.pieces, buf.pieces_binding = [_Group([piece], new)], [piece], new
        return new
    groups = []
    if getattr(buf, "pieces_binding", None) is buf.binding and buf.binding is not None:
        for g in buf.groups:
            live = [p for p in g.pieces if len(p.offsets) == len(offsets) and _disjoint(p, offsets, sizes)]
            if len(live) == len(g.pieces):
                groups.append(g)
            elif live:
                groups.append(_Group(live, g.merged))
    piece = Piece(offsets, sizes, new)
    lg = new.logical.find()
    home = None
    for g in groups:
        if _joins(lg, g.pieces[0].binding.logical) and len(g.pieces[0].binding.dims) == len(new.dims):
            same = g.pieces[0].binding.logical.find() is lg
            if g.merged is None:
                merged = None
            elif _agrees(g.merged, piece):
                merged = g.merged
            else:
                merged = fit(g.pieces + [piece])
            if merged is None and not same:
                continue  # another accumulator, not a tile of this one: a group of its own
            if not same:
                apply_unions({id(lg): (lg, g.pieces[0].binding.logical.find())})
                merged = Binding(lg.find(), merged.dims)
            g.pieces, g.merged, home = g.pieces + [piece], merged, g
            break
    if home is None:
        home = _Group([piece], new)
        groups.append(home)
    buf.groups = groups
    buf.pieces = [p for g in groups for p in g.pieces]
    buf.pieces_binding = home.merged if home.merged is not None else new
    return buf.pieces_binding


def _within(p: Piece, offsets, sizes, k: Sym | None = None, step=None) -> bool:
    for a, (o, n) in enumerate(zip(offsets, sizes)):
        start = p.offsets[a] if k is None else p.offsets[a] + k * step[a]
        d = _const(Sym.of(o) - start)
        if d is None or d < 0 or d + n > p.sizes[a]:
            return False
    return True


def span(k: Sym) -> tuple[int, int]:
    """The least and greatest value of ``k`` over its loops' ranges."""
    lo = hi = k.const
    for v, c in k.terms.items():
        lo += min(0, c * (v.trips - 1))
        hi += max(0, c * (v.trips - 1))
    return lo, hi


def lookup(buf, offsets, sizes) -> Binding | None:
    """The binding a read of region (``offsets``, ``sizes``) of ``buf`` sees, where it differs
    from the buffer's binding (that of the last write): the map of the tensor whose pieces hold
    the region, the piece holding it where that tensor's pieces fit no one map, or the piece
    ``k`` of an arithmetic run of pieces that a loop-index offset selects; None: the buffer's
    binding."""
    if getattr(buf, "pieces_binding", None) is not buf.binding or not buf.pieces:
        return None
    if len(buf.pieces) == 1 and not any(o.terms for o in buf.pieces[0].offsets):
        return None  # one piece at a constant place: the buffer's binding is its map
    for g in buf.groups:
        for p in g.pieces:
            if _within(p, offsets, sizes):
                return g.merged or p.binding
    hit = [g for g in buf.groups if any(not _disjoint(p, offsets, sizes) for p in g.pieces)]
    if len(hit) != 1:
        return None
    g = hit[0]
    if len(g.pieces) == 1:
        return _solved(g.pieces[0], offsets, sizes)
    if g.merged is not None:
        return g.merged
    b = _run(g.pieces, offsets, sizes)
    if b is None:
        lg = g.pieces[0].binding.logical.find()
        where = ", ".join(f"{o}:+{n}" for o, n in zip(offsets, sizes))
        raise PermutedPieces(f"a read of buffer {buf.name}[{where}] spans pieces written one by "
                             f"one that hold tiles of {lg.name} in an order no affine map follows "
                             "(a permuted layout)")
    return b


class PermutedPieces(TraceError):
    """A read spanning pieces of a buffer whose tiles no one affine map places (the recorder
    reads the buffer from there on as data it does not follow)."""


def _subst(x: Sym, v, e: Sym) -> Sym:
    c = x.terms.get(v, 0)
    return x.without({v}) + e * c if c else x


def _solved(p: Piece, offsets, sizes) -> Binding | None:
    """A piece written in a loop that has ended (its region at a loop-index offset, ``shuf[:,
    4*n ...] = a[:, n, :]``) read at another index: the piece of the iteration whose region the
    read names, or None."""
    vs = {v for o in p.offsets for v in o.terms}
    if len(vs) != 1:
        return None
    v = vs.pop()
    if any(v in Sym.of(o).terms for o in offsets):
        return None  # read in the loop that writes it: the buffer's own binding
    a = next(a for a, o in enumerate(p.offsets) if v in o.terms)
    c = p.offsets[a].terms[v]
    num = Sym.of(offsets[a]) - p.offsets[a].without({v})
    if c <= 0 or num.const % c or any(x % c for x in num.terms.values()):
        return None
    e = Sym({u: x // c for u, x in num.terms.items()}, num.const // c)
    lo, hi = span(e)
    moved = Piece(tuple(_subst(o, v, e) for o in p.offsets), p.sizes, p.binding)
    if lo < 0 or hi >= v.trips or not _within(moved, offsets, sizes):
        return None
    return Binding(p.binding.logical, tuple(DimMap(_subst(dm.start, v, e), dm.size, dm.axes)
                                            for dm in p.binding.dims))


def _run(ps: list[Piece], offsets, sizes) -> Binding | None:
    """Piece ``k`` of an arithmetic run (offsets and starts moving by one step from piece to
    piece) selected by the read's offset, or None."""
    p0, p1 = ps[0], ps[1]
    step = [_const(b - a) for a, b in zip(p0.offsets, p1.offsets)]
    dstep = [_const(b.start - a.start) for a, b in zip(p0.binding.dims, p1.binding.dims)]
    if None in step or None in dstep:
        return None
    for k, p in enumerate(ps):
        if p.sizes != p0.sizes or any(
                _const(o - a) != k * s for o, a, s in zip(p.offsets, p0.offsets, step)) or any(
                dm.axes != dm0.axes or _const(dm.start - dm0.start) != k * s
                for dm, dm0, s in zip(p.binding.dims, p0.binding.dims, dstep)):
            return None
    a = next((a for a, s in enumerate(step) if s), None)
    if a is None:
        return None
    num = Sym.of(offsets[a]) - p0.offsets[a]
    s = step[a]
    if s < 0 or num.const % s or any(c % s for c in num.terms.values()):
        return None
    k = Sym({v: c // s for v, c in num.terms.items()}, num.const // s)
    lo, hi = span(k)
    if lo < 0 or hi >= len(ps) or not _within(p0, offsets, sizes, k, step):
        return None
    return Binding(p0.binding.logical, tuple(DimMap(dm.start + k * ds, dm.size, dm.axes)
                                             for dm, ds in zip(p0.binding.dims, dstep)))


def held(buf, offsets, sizes) -> list[Piece] | None:
    """The pieces that together hold exactly the region (``offsets``, ``sizes``) of ``buf``,
    where it spans several pieces of tensors no one map places (a row of transposed tiles in
    PSUM); None where the buffer's binding or :func:`lookup` serves the read."""
    if getattr(buf, "pieces_binding", None) is not buf.binding or len(getattr(buf, "pieces", ())) < 2:
        return None
    inside = [p for p in buf.pieces if all(
        _const(o - Sym.of(r)) is not None and _const(o - Sym.of(r)) >= 0 and
        _const(o - Sym.of(r)) + n <= m for o, n, r, m in zip(p.offsets, p.sizes, offsets, sizes))]
    if len(inside) < 2:
        return None
    groups = {id(g) for g in buf.groups for p in inside if any(p is q for q in g.pieces)}
    if len(groups) == 1 and next(g for g in buf.groups if id(g) in groups).merged is not None:
        return None
    volume = 1
    for n in sizes:
        volume *= n
    covered = 0
    for p in inside:
        v = 1
        for n in p.sizes:
            v *= n
        covered += v
    return inside if covered == volume else None
