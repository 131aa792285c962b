"""Index tiles and access patterns: which box of a tensor an NKI index or ``.ap(...)`` touches.

Two ways a kernel names elements beyond plain slices:

- **Index tiles** (``nl.arange``, ``nl.mgrid``): affine expressions of index-grid axes,
  ``s * i1 + i2`` (a pooling window), ``i_f2 * n + i_f1`` (a reordering), ``nl.arange(n) * s``
  (a stride). :class:`Index` keeps ``offset + sum(coef_k * axis_k)`` with each axis' size
  (https://awsdocs-neuron.readthedocs-hosted.com/en/v2.26.1/general/nki/api/generated/nki.language.mgrid.html).
- **Access patterns** (``t.ap(pattern=[[stride, num], ...], offset=...)``): the hardware's own
  description of an access, one ``[stride, num]`` pair per dimension, outermost (the partition
  dimension) first, strides and offset in elements of the tensor laid out row-major
  (https://awsdocs-neuron.readthedocs-hosted.com/en/latest/nki/deep-dives/nki-aps.html).
  :func:`decompose` maps a pattern onto the tensor's own axes when it is a box of them.

A box is what loopsim's IR can hold. An index or pattern that is not one (a stride, an
overlapping window) still has a known *shape* and a known *covered box* (the smallest box of the
tensor holding every element it touches): on chip that is enough to follow the dataflow (the op
reads that box), while an HBM access must be a box, else its bytes would be miscounted.
"""

from __future__ import annotations

import math

from loopsim.frontends.nki.errors import TraceError
from loopsim.frontends.nki.symbolic import IndexTile, Sym


class Index(IndexTile):
    """``offset + sum(coef * axis)`` over index-grid axes; ``terms``: ((axis key, coef, size), ...).

    An axis key is the ``mgrid`` position or, for ``nl.arange``, the position ``[:, None]``
    places it at (None until placed: then it is the index's own axis)."""

    __slots__ = ("terms",)

    def __init__(self, offset: Sym, terms: tuple):
        self.terms = tuple(t for t in terms if t[1] != 0 and t[2] > 1) or tuple(terms[:1])
        self.offset = offset
        self.axis = self.terms[0][0] if len(self.terms) == 1 else None
        self.size = self.extent

    @staticmethod
    def axis_of(axis, size: int, offset=0) -> "Index":
        return Index(Sym.of(offset), ((axis, 1, size),))

    @property
    def simple(self) -> bool:
        """One axis with unit step: a contiguous run of ``size`` indices (a slice)."""
        return len(self.terms) == 1 and self.terms[0][1] == 1

    @property
    def extent(self) -> int:
        """Indices from the lowest to the highest touched, inclusive."""
        return 1 + sum(abs(c) * (n - 1) for _, c, n in self.terms)

    @property
    def low(self) -> Sym:
        return self.offset + sum(min(0, c) * (n - 1) for _, c, n in self.terms)

    @property
    def shape_axes(self) -> dict:
        return {a: n for a, _, n in self.terms}

    def __getitem__(self, key):
        key = key if isinstance(key, tuple) else (key,)
        slots = [i for i, k in enumerate(key) if k is not None]
        if len(slots) != 1 or len(self.terms) != 1:
            raise TraceError("an nl.arange index takes one ':' and Nones, like [:, None]")
        _, c, n = self.terms[0]
        return Index(self.offset, ((slots[0], c, n),))

    def __add__(self, o):
        if isinstance(o, Index):
            merged: dict = {}
            for a, c, n in self.terms + o.terms:
                if a in merged and (a is None or merged[a][1] != n):
                    raise TraceError("adding two index tiles of one unplaced nl.arange is not "
                                     "modelled; place them with [:, None] / [None, :] or use mgrid")
                pc = merged.get(a, (0, n))[0]
                merged[a] = (pc + c, n)
            return Index(self.offset + o.offset, tuple((a, c, n) for a, (c, n) in merged.items()))
        if isinstance(o, IndexTile):
            return self + Index.axis_of(o.axis, o.size, o.offset)
        return Index(self.offset + Sym.of(o), self.terms)

    __radd__ = __add__

    def __sub__(self, o):
        if isinstance(o, IndexTile):
            raise TraceError("subtracting an index tile is not modelled")
        return Index(self.offset - Sym.of(o), self.terms)

    def __mul__(self, o):
        if isinstance(o, bool) or not isinstance(o, int):
            raise TraceError(f"index tile * {o!r}: a stride must be an integer")
        return Index(self.offset * o, tuple((a, c * o, n) for a, c, n in self.terms))

    __rmul__ = __mul__

    def __hash__(self):
        return id(self)


def row_major(shape) -> tuple[int, ...]:
    """Element strides of ``shape`` laid out row-major."""
    out, s = [], 1
    for d in reversed(tuple(shape)):
        out.append(s)
        s *= d
    return tuple(reversed(out))


def _digits(c: int, shape, strides) -> list[int]:
    """``c`` (elements) as per-axis coordinates of a row-major ``shape`` (axis 0 unbounded)."""
    out = []
    for a, s in enumerate(strides):
        q = c // s if a == 0 else (c // s) % shape[a]
        out.append(q)
    return out


def decompose(shape, pattern, offset, what: str):
    """A ``.ap`` access of a row-major tensor of ``shape`` as a box of its axes.

    Returns ``(dims, view_shape, order)``: per tensor axis ``(start, size, kept)``, the
    pattern's own shape (one entry per ``[stride, num]``), and the tensor axes its runs walk, in
    the pattern's order (sorted unless the pattern permutes them). Raises TraceError naming ``what`` when the
    pattern is not a box (a stride that is no axis' stride, a run longer than its axis, an
    offset that wraps an axis)."""
    try:
        pat = [(int(p[0]), int(p[1])) for p in pattern]
    except (TypeError, ValueError, IndexError):
        raise TraceError(f"{what}: pattern {pattern!r} must be a list of [stride, num] pairs") from None
    if any(n <= 0 for _, n in pat):
        raise TraceError(f"{what}: pattern {pattern!r} has a non-positive count")
    view_shape = tuple(n for _, n in pat)
    strides = row_major(shape)
    pat = _whole_rows(merged_runs(pat, strides), shape, strides)
    off = Sym.of(offset)
    starts = [Sym({}, d) for d in _digits(off.const, shape, strides)] if off.const >= 0 else None
    if starts is None:
        raise TraceError(f"{what}: negative offset {off}")
    for v, c in off.terms.items():
        if c < 0:
            raise TraceError(f"{what}: offset {off} decreases with loop {v.name}")
        for a, q in enumerate(_digits(c, shape, strides)):
            starts[a] = starts[a] + Sym({v: q}, 0)
    sizes = [1] * len(shape)
    used: list = []
    for st, n in pat:
        if n == 1:
            continue
        cands = [a for a, s in enumerate(strides) if s == st and a not in used and shape[a] >= n]
        if not cands:
            split = _split_runs(shape, strides, pattern)
            if split is None:
                raise NotABox(f"{what}: [{st}, {n}] of pattern {pattern!r} is not a run along one "
                              f"axis of the {list(shape)} tensor (a strided, repeated or overlapping "
                              "access): not modelled on an HBM tensor; slice the tensor instead")
            sizes, used = split
            break
        a = cands[0]
        used.append(a)
        sizes[a] = n
    for a in range(len(shape)):
        hi = starts[a].const + sum(c * (v.trips - 1) for v, c in starts[a].terms.items()) + sizes[a]
        if hi > shape[a]:
            raise TraceError(f"{what}: offset {off} runs past axis {a} of the {list(shape)} tensor "
                             "(the access wraps into the next row): not modelled")
    axes = {u[0] if isinstance(u, tuple) else u for u in used}
    dims = [(starts[a], sizes[a], a in axes) for a in range(len(shape))]
    return dims, view_shape, used


def _whole_rows(pat, shape, strides):
    """A run along an axis longer than the axis, by whole rows of it (``[1, 4096]`` on a
    [128, 64] tensor), as a run of rows of the next axis out and the whole axis: the same
    elements (``[[64, 64], [1, 64]]``)."""
    out = list(pat)
    i = 0
    while i < len(out):
        st, n = out[i]
        a = next((a for a, x in enumerate(strides) if x == st), None)
        if a is not None and a > 0 and n > shape[a] and n % shape[a] == 0:
            out[i:i + 1] = [(strides[a - 1], n // shape[a]), (st, shape[a])]
            continue
        i += 1
    return out


def _split_runs(shape, strides, pattern):
    """A pattern walking axes in pieces: each run ``[stride, num]`` along the axis whose stride
    divides its stride, the runs of one axis covering a contiguous range exactly once (mixed
    radix: the scales are 1, n1, n1*n2, ...), in any order (``[[128, 128], [16384, 4], [1, 128]]``
    on a [512, 128] tensor reads rows ``b * 128 + p``). Returns (size per axis, per run
    ``(axis, scale)``), or None when the runs overlap, leave gaps or fit no axis."""
    runs = []
    for st, n in ((int(p[0]), int(p[1])) for p in pattern):
        if n == 1:
            continue
        a = next((a for a in range(len(shape) - 1, -1, -1)
                  if st % strides[a] == 0 and (st // strides[a]) * (n - 1) < shape[a]), None)
        if a is None or st == 0:
            return None
        runs.append((a, st // strides[a], n))
    sizes = [1] * len(shape)
    for a in {r[0] for r in runs}:
        mine = sorted((sc, n) for b, sc, n in runs if b == a)
        expect = 1
        for sc, n in mine:
            if sc != expect:
                return None
            expect *= n
        if expect > shape[a]:
            return None
        sizes[a] = expect
    return sizes, [(a, sc) for a, sc, _ in runs]


def merged_runs(pat, strides=()):
    """``[[s * n2, n1], [s, n2]]`` (one axis walked as n1 runs of n2, ``s * n2`` being no axis'
    stride) as one run ``[s, n1 * n2]``; size-1 entries dropped. The same elements."""
    out: list = []
    for st, n in pat:
        if n == 1:
            continue
        if out and out[-1][0] == st * n and out[-1][0] not in strides:
            out[-1] = (st, out[-1][1] * n)
        else:
            out.append((st, n))
    return out


class NotABox(TraceError):
    """An access pattern whose elements are no box of the tensor's axes (see :func:`covered`)."""


def covered(shape, pattern, offset, what: str):
    """The smallest box of a row-major tensor of ``shape`` holding every element a pattern
    touches (strided, repeated with stride 0, or overlapping runs), per axis ``(start, size,
    kept)``: what an engine reading that pattern on chip reads from. Constant offsets only
    enter as the box's start; an offset with a loop index must land on one axis."""
    pat = [(int(p[0]), int(p[1])) for p in pattern]
    strides = row_major(shape)
    off = Sym.of(offset)
    lo = off.const + sum(min(0, st) * (n - 1) for st, n in pat)
    hi = off.const + sum(max(0, st) * (n - 1) for st, n in pat)
    if lo < 0 or hi >= math.prod(shape):
        raise TraceError(f"{what}: pattern {pattern!r} at offset {off} runs outside the "
                         f"{list(shape)} tensor")
    a_lo, a_hi = _digits(lo, shape, strides), _digits(hi, shape, strides)
    dims, first = [], None
    for a in range(len(shape)):
        if first is None and a_lo[a] != a_hi[a]:
            first = a
        if first is None:
            dims.append([Sym({}, a_lo[a]), 1, False])
        elif a == first:
            dims.append([Sym({}, a_lo[a]), a_hi[a] - a_lo[a] + 1, True])
        else:
            dims.append([Sym({}, 0), shape[a], True])  # the box spans whole rows below
    for v, c in off.terms.items():
        digits = _digits(c, shape, strides)
        nz = [a for a, q in enumerate(digits) if q]
        if len(nz) != 1:
            raise TraceError(f"{what}: offset {off} moves with loop {v.name} across axes: not modelled")
        dims[nz[0]][0] = dims[nz[0]][0] + Sym({v: digits[nz[0]]}, 0)
    return [tuple(d) for d in dims]


def reshape_groups(old, new, what: str) -> list[tuple[list[int], list[int]]]:
    """Row-major ``old`` -> ``new`` as groups (old axes, new axes) of equal element counts:
    a split (one old axis), a merge (one new axis), or a size-1 axis added or dropped."""
    old, new = tuple(old), tuple(new)
    if math.prod(old) != math.prod(new):
        raise TraceError(f"reshape of {what} {list(old)} to {list(new)}: element counts differ")
    groups, i, j = [], 0, 0
    while i < len(old) or j < len(new):
        if i < len(old) and old[i] == 1 and (j >= len(new) or new[j] != 1):
            groups.append(([i], []))
            i += 1
            continue
        if j < len(new) and new[j] == 1 and (i >= len(old) or old[i] != 1):
            groups.append(([], [j]))
            j += 1
            continue
        go, gn, po, pn = [i], [j], old[i], new[j]
        i, j = i + 1, j + 1
        while po != pn:
            if po < pn:
                po *= old[i]
                go.append(i)
                i += 1
            else:
                pn *= new[j]
                gn.append(j)
                j += 1
        groups.append((go, gn))
    return groups


def reshape_binding(b, old, new, what: str):
    """A buffer binding (:class:`loopsim.frontends.nki.events.Binding`) over axes ``old``
    re-expressed over the same storage as axes ``new``: a split axis becomes several axes with
    scales in row-major proportion; merged axes must run along one logical dimension with
    row-major scales (else the reshape mixes two dimensions of the tensor: not an affine map)."""
    from loopsim.frontends.nki.events import Binding, DimMap

    groups = reshape_groups(old, new, what)
    dims = []
    for dm in b.dims:
        scale = dict(dm.axes)
        axes = []
        for go, gn in groups:
            mine = [(a, scale[a]) for a in go if a in scale and old[a] > 1]
            if not mine or not gn:
                continue
            if len(go) == 1:
                sc = mine[0][1]
                for k, n in enumerate(gn):
                    axes.append((n, sc * math.prod(new[m] for m in gn[k + 1:])))
                continue
            if len(gn) == 1:
                wide = [a for a in go if old[a] > 1]
                base = mine[-1][1] if mine[-1][0] == wide[-1] else None
                ok = base is not None and [a for a, _ in mine] == wide and all(
                    sc == base * math.prod(old[m] for m in go[go.index(a) + 1:]) for a, sc in mine)
                if ok:
                    axes.append((gn[0], base))
                    continue
            raise TraceError(f"reshape of {what} {list(old)} to {list(new)} mixes dimensions of the "
                             f"tile it holds ({b.logical.name}): not modelled")
        dims.append(DimMap(dm.start, dm.size, tuple(axes)))
    return Binding(b.logical, tuple(dims))


def collapsed_binding(b, old, new):
    """A binding over ``new`` axes when a reshape mixes dimensions: axes kept unchanged by the
    reshape keep their map; the others run along no dimension (the tile is held whole)."""
    from loopsim.frontends.nki.events import Binding, DimMap

    groups = reshape_groups(old, new, "t")
    same = {go[0]: gn[0] for go, gn in groups if len(go) == 1 and len(gn) == 1}
    dims = []
    for dm in b.dims:
        dims.append(DimMap(dm.start, dm.size, tuple((same[a], sc) for a, sc in dm.axes if a in same)))
    return Binding(b.logical, tuple(dims))
