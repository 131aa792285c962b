"""Symbolic loop indices: a recorded loop's variable and the affine expressions built from it.

A kernel's loop body runs once, with every loop index a :class:`Sym` (``Σ coef·var + const``,
integers, in elements of the index it is used in). Using one where Python needs a concrete value
(``if i == 0:``, ``int(i)``, ``some_list[i]``, ``i % 2``) raises :class:`NeedsConcrete` naming the
loops involved: the loader then traces those loops iteration by iteration and re-rolls them
(:mod:`loopsim.frontends.nki.reroll`). Only a launch-grid index used so stops the trace.
"""

from __future__ import annotations

import numbers

from loopsim.frontends.nki.errors import TraceError


class NeedsConcrete(BaseException):
    """A loop index was used as a Python value: trace the loops at ``sites`` (file, line)
    concretely. Raised to the loader, which retries (a BaseException, so that a kernel's own
    ``except ValueError`` or ``except Exception`` does not swallow it); the loader shows it as a
    TraceError when it cannot help."""

    def __init__(self, msg: str, sites):
        super().__init__(msg)
        self.sites = frozenset(sites)


class LoopVar:
    """One recorded loop: ``trips`` iterations; ``name`` from the kernel's ``for NAME in``;
    ``site``: (file, line) of the ``for`` statement, which names the loop across traces."""

    __slots__ = ("name", "trips", "kind", "line", "uid", "site")
    _count = 0

    def __init__(self, name: str, trips: int, kind: str, line: int, site=None):
        LoopVar._count += 1
        self.uid = LoopVar._count
        self.name, self.trips, self.kind, self.line = name, trips, kind, line
        self.site = site

    def __repr__(self) -> str:
        return self.name


def _sites(*xs) -> set:
    return {v.site for x in xs if isinstance(x, Sym) for v in x.terms if v.site is not None}


def _refuse_value(msg: str, *xs):
    """Raise NeedsConcrete for the loops of ``xs`` (TraceError when none can run concretely)."""
    sites = _sites(*xs)
    if sites:
        raise NeedsConcrete(msg, sites)
    raise TraceError(msg)


class Cond:
    """A comparison of loop indices: fine inside a mask; as an ``if`` condition it makes the
    loops involved run concretely."""

    def __init__(self, text: str, operands=()):
        self.text = text
        self.operands = operands

    def __bool__(self):
        _refuse_value(f"control flow on a loop index ({self.text}): loopsim keeps loops as "
                      "loops and cannot branch on an iteration; use a mask", *self.operands)

    def __and__(self, other):
        return self

    __rand__ = __or__ = __ror__ = __and__

    def __invert__(self):
        return self


def _comparisons(what: str):
    """<, <=, >, >=, ==, != returning a :class:`Cond` (``what``: "{}" shows the left side)."""
    def cmp(op):
        def f(self, o):
            return Cond(f"{what.format(self)} {op} {o}", (self, o) if isinstance(self, Sym) else
                        (getattr(self, "offset", None), o))
        return f
    return tuple(cmp(op) for op in ("<", "<=", ">", ">=", "==", "!="))


def _as_sym(x) -> "Sym | None":
    t = type(x)
    if t is Sym:
        return x
    if t is int:
        return _make(_NO_TERMS, x)
    if isinstance(x, Sym):
        return x
    if isinstance(x, bool) or not isinstance(x, numbers.Integral):
        return None
    return _make(_NO_TERMS, int(x))  # an int subclass, or a numpy integer (an index from an array)


_NO_TERMS: dict = {}


def _make(terms: dict, const: int) -> "Sym":
    """A Sym of terms already without zero coefficients (never mutated afterwards)."""
    s = object.__new__(Sym)
    s.terms, s.const = terms, const
    return s


class Sym:
    """``Σ terms[var]·var + const`` over recorded loop variables (terms never mutated)."""

    __slots__ = ("terms", "const")

    def __init__(self, terms: dict, const: int = 0):
        self.terms = {v: c for v, c in terms.items() if c} if terms else _NO_TERMS
        self.const = const

    @staticmethod
    def of(x) -> "Sym":
        s = _as_sym(x)
        if s is None:
            raise TraceError(f"index {x!r} must be an integer or a loop index expression")
        return s

    def is_const(self) -> bool:
        return not self.terms

    def same(self, other: "Sym") -> bool:
        return self.terms == other.terms and self.const == other.const

    def without(self, names) -> "Sym":
        return Sym({v: c for v, c in self.terms.items() if v not in names}, self.const)

    def __add__(self, o):
        if type(o) is int:
            return _make(self.terms, self.const + o)
        s = _as_sym(o)
        if s is None:
            return NotImplemented
        if not s.terms:
            return _make(self.terms, self.const + s.const)
        if not self.terms:
            return _make(s.terms, self.const + s.const)
        t = dict(self.terms)
        for v, c in s.terms.items():
            t[v] = t.get(v, 0) + c
        return Sym(t, self.const + s.const)

    __radd__ = __add__

    def __neg__(self):
        return _make({v: -c for v, c in self.terms.items()} if self.terms else _NO_TERMS, -self.const)

    def __sub__(self, o):
        if type(o) is int:
            return _make(self.terms, self.const - o)
        s = _as_sym(o)
        return NotImplemented if s is None else self + (-s)

    def __rsub__(self, o):
        s = _as_sym(o)
        return NotImplemented if s is None else s + (-self)

    def __mul__(self, o):
        if isinstance(o, bool) or not isinstance(o, int):
            if isinstance(o, Sym) and o.is_const():
                o = o.const
            elif isinstance(o, Sym) and self.is_const():
                return o * self.const
            else:
                _refuse_value(f"loop index expression {self} * {o!r} is not affine", self, o)
        if o == 0:
            return _make(_NO_TERMS, 0)
        return _make({v: c * o for v, c in self.terms.items()} if self.terms else _NO_TERMS,
                     self.const * o)

    __rmul__ = __mul__

    def __floordiv__(self, o):
        if isinstance(o, int) and o > 0 and self.const % o == 0 and all(c % o == 0 for c in self.terms.values()):
            return Sym({v: c // o for v, c in self.terms.items()}, self.const // o)
        _refuse_value(f"loop index expression ({self}) // {o!r} is not affine", self, o)

    def __rfloordiv__(self, o):
        _refuse_value(f"{o!r} // ({self}) is not affine", self)

    def __mod__(self, o):
        _refuse_value(f"loop index expression ({self}) % {o!r} is not affine", self, o)

    def __rmod__(self, o):
        _refuse_value(f"{o!r} % ({self}) is not affine", self)

    def _refuse(self, *_):
        _refuse_value(f"loop index {self} used as a Python value: loopsim keeps loops as "
                      "loops, so an index may only be combined affinely (i * 128 + c) and used "
                      "to index tensors", self)

    __float__ = __iter__ = __len__ = __truediv__ = __rtruediv__ = __pow__ = __rpow__ = \
        __abs__ = __round__ = _refuse

    def __index__(self) -> int:
        if self.is_const():
            return self.const
        self._refuse()

    __int__ = __index__

    def __bool__(self) -> bool:
        if self.is_const():
            return bool(self.const)
        self._refuse()

    def __str__(self) -> str:
        parts = [f"{c}*{v.name}" if c != 1 else v.name for v, c in self.terms.items()]
        if self.const or not parts:
            parts.append(str(self.const))
        return " + ".join(parts)

    __repr__ = __str__

    __lt__, __le__, __gt__, __ge__, __eq__, __ne__ = _comparisons("{}")

    def __hash__(self):
        """A dict keyed by a loop index (``tiles[k] = t``) needs the index's value."""
        if self.is_const():
            return hash(self.const)
        self._refuse()


class IndexTile:
    """``nl.arange(n)`` (and ``mgrid`` rows): ``n`` consecutive indices starting at ``offset``,
    laid along ``axis`` of the index grid (None until ``[:, None]`` / ``[None, :]`` places it)."""

    __slots__ = ("offset", "size", "axis")

    def __init__(self, offset: Sym, size: int, axis: int | None = None):
        self.offset, self.size, self.axis = offset, size, axis

    def __getitem__(self, key):
        key = key if isinstance(key, tuple) else (key,)
        slots = [i for i, k in enumerate(key) if k is not None]
        if len(slots) != 1:
            raise TraceError("an nl.arange index takes one ':' and Nones, like [:, None]")
        return IndexTile(self.offset, self.size, slots[0])

    def __add__(self, o):
        if isinstance(o, IndexTile):
            raise TraceError("adding two index tiles is not modelled; add a loop offset instead")
        return IndexTile(self.offset + Sym.of(o), self.size, self.axis)

    __radd__ = __add__

    def __sub__(self, o):
        return IndexTile(self.offset - Sym.of(o), self.size, self.axis)

    def __mul__(self, o):
        raise TraceError("a strided index tile (nl.arange(n) * s) is not modelled")

    __rmul__ = __mul__

    __lt__, __le__, __gt__, __ge__, __eq__, __ne__ = _comparisons("index")
    __hash__ = object.__hash__

    def __bool__(self):
        raise TraceError("an index tile used as a Python truth value")
