"""What a kernel holds while it runs under the shim: HBM tensors and their slices, on-chip
buffers and views of them (tiles). Sizes and offsets are elements; offsets may be loop-index
expressions (:class:`loopsim.frontends.nki.symbolic.Sym`). Operators on tiles and their truth values go to
the recorder (``tile.buf.rec``): a tile has a shape, never values.
"""

from __future__ import annotations

from loopsim.frontends.nki import access
from loopsim.frontends.nki.dtypes import NKI_DTYPES, NkiDType, itemsize, loopsim_dtype
from loopsim.frontends.nki.errors import TraceError
from loopsim.frontends.nki.symbolic import Cond, IndexTile, Sym

#: NKI dtype names -> loopsim dtypes (bytes per element preserved; see :mod:`.dtypes`)
DTYPE_OF = {n: v[1] for n, v in NKI_DTYPES.items()}

#: loopsim dtype -> the NKI dtype a kernel sees for a tensor given in loopsim's name
NKI_OF = {"fp32": "float32", "bf16": "bfloat16", "fp16": "float16", "fp8": "float8_e4m3",
          "int8": "int8"}


def dtype_name(dt, default: str = "bf16") -> str:
    """The loopsim dtype counted for an NKI (or loopsim) dtype ``dt``."""
    return loopsim_dtype(dt, default)


def nki_dtype(dt, fallback: str = "bf16") -> NkiDType:
    """The NKI dtype object for ``dt`` (an NKI dtype, an NKI or loopsim name)."""
    if isinstance(dt, NkiDType):
        return dt
    name = dt if isinstance(dt, str) else (getattr(dt, "__name__", None) or getattr(dt, "name", None))
    name = str(name).split(".")[-1] if name is not None else None
    if name in NKI_DTYPES:
        return NkiDType(name)
    return NkiDType(NKI_OF.get(name, NKI_OF.get(loopsim_dtype(dt, fallback), "bfloat16")))


class ParDim(int):
    """``nl.par_dim(n)``: marks the partition axis of an on-chip buffer's shape."""


class _Viewable:
    """What HBM tensors and on-chip tiles share: NKI's tensor attributes and view methods
    (https://awsdocs-neuron.readthedocs-hosted.com/en/v2.33.0/nki/api/generated/nki.language.NkiTensor.html)."""

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def size(self) -> int:
        n = 1
        for d in self.shape:
            n *= d
        return n

    @property
    def itemsize(self) -> int:
        return self.dtype.itemsize

    # NkiTensor's per-dimension views, as indexing writes them. The signatures are ASSUMED from
    # the NKI library's TensorView utility, which documents ``slice(dim, start, end, step=1)``
    # (https://awsdocs-neuron.readthedocs-hosted.com/en/latest/nki/library/kernel-utils/tensor-view.html);
    # the NkiTensor reference lists the names, not their parameters.
    def _dim(self, dim, what: str) -> int:
        n = len(self.shape)
        if isinstance(dim, bool) or not isinstance(dim, int) or not -n <= dim < n:
            raise TraceError(f"{what}: dim {dim!r} is not a dimension of a {n}-D tensor")
        return dim % n

    def slice(self, dim, start, end, step=1):
        """``t.slice(dim, start, end, step=1)``: ``t[..., start:end:step, ...]`` along ``dim``."""
        d = self._dim(dim, "slice")
        return self[(slice(None),) * d + (slice(start, end, step),)]

    def select(self, dim, index):
        """``t.select(dim, index)``: ``t[..., index, ...]``, the dimension dropped."""
        d = self._dim(dim, "select")
        return self[(slice(None),) * d + (index,)]

    def squeeze_dim(self, dim):
        """``t.squeeze_dim(dim)``: the size-1 dimension ``dim`` dropped (a reshape)."""
        d = self._dim(dim, "squeeze_dim")
        if self.shape[d] != 1:
            raise TraceError(f"squeeze_dim({dim}) of a tensor of shape {tuple(self.shape)}: that "
                             "dimension is not of size 1")
        return self.reshape(tuple(self.shape[:d]) + tuple(self.shape[d + 1:]))

    def expand_dim(self, dim):
        """``t.expand_dim(dim)``: a size-1 dimension inserted at ``dim`` (a reshape)."""
        n = len(self.shape)
        if isinstance(dim, bool) or not isinstance(dim, int) or not -n - 1 <= dim <= n:
            raise TraceError(f"expand_dim: dim {dim!r} is no position in a {n}-D tensor")
        d = dim % (n + 1)
        return self.reshape(tuple(self.shape[:d]) + (1,) + tuple(self.shape[d:]))

    def expand_dims(self, axis):
        """``t.expand_dims(axis)`` (nki.tensor): as :meth:`expand_dim`."""
        return self.expand_dim(axis)

    def assert_shape(self, shape):
        """``t.assert_shape(shape)`` (nki.tensor,
        https://awsdocs-neuron.readthedocs-hosted.com/en/latest/nki/api/generated/nki.tensor.html):
        the tensor, or a refusal naming both shapes."""
        if tuple(self.shape) != tuple(shape):
            raise TraceError(f"assert_shape: the tensor's shape is {tuple(self.shape)}, not "
                             f"{tuple(shape)}")
        return self


class HbmTensor(_Viewable):
    """An HBM tensor argument (or one the kernel allocates in HBM for its result).

    ``reshape`` before the tensor's first access gives the tensor that shape (the same bytes,
    row-major); after it, a handle viewing the same bytes in the new shape: its slices and
    access patterns are translated to boxes of the tensor's own shape by their flat elements."""

    def __init__(self, rec: "Recorder", logical: Logical, dtype=None, buffer: str = "hbm"):
        self._rec, self.logical = rec, logical
        self._shape = tuple(logical.shape)
        self._dtype = nki_dtype(dtype if dtype is not None else logical.dtype)
        self.buffer = buffer

    @property
    def shape(self):
        return self._shape

    @property
    def dtype(self):
        return self._dtype

    def _units_only(self) -> bool:
        """This handle's shape differs from the tensor's only by size-1 dimensions."""
        return [n for n in self._shape if n != 1] == [n for n in self.logical.shape if n != 1]

    def _to_logical(self, dims):
        """Per-dimension (start, size, kept) of this handle's shape as the tensor's dimensions
        (size-1 dimensions dropped or added); the view keeps this handle's shape."""
        own = list(dims)
        out, j = [], 0
        for n in self.logical.shape:
            if n == 1:
                if j < len(own) and own[j][1] == 1 and self._shape[j] == 1:
                    out.append(own[j])
                    j += 1
                else:
                    out.append((Sym({}, 0), 1, False))
                continue
            while j < len(own) and self._shape[j] == 1:
                j += 1
            out.append(own[j])
            j += 1
        return out

    def _view(self, dims, order=None, view=None) -> "HbmView":
        if order and isinstance(order[0], tuple):  # axes walked in pieces: the pattern's shape
            if tuple(self.logical.shape) != self._shape:
                raise TraceError(f"an access pattern walking the axes of {self!r} in pieces, on a "
                                 "reshaped handle, is not modelled")
            return HbmView(self, dims, order, tuple(n for n in view if n != 1))
        if tuple(self.logical.shape) == self._shape:
            return HbmView(self, dims, order)
        shape = tuple(n for _, n, k in dims if k)
        return HbmView(self, self._to_logical(dims), order, shape)

    def _retyped_handle(self) -> bool:
        """This handle's elements are of another size than the tensor's (a reinterpretation)."""
        return self._dtype.itemsize != itemsize(self.logical.dtype)

    def _reshaped(self) -> bool:
        """This handle views the tensor's bytes in another shape (not only size-1 axes) or in
        elements of another size."""
        if self._retyped_handle():
            return True
        return tuple(self.logical.shape) != self._shape and not self._units_only()

    def _bytes_view(self, dims) -> "HbmView":
        """A box of this handle's shape, another shape of the tensor's bytes (a reshape after
        use): the same flat elements as a box of the tensor's own shape, the view keeping this
        handle's shape; refused where they are no box there."""
        strides = access.row_major(self._shape)
        offset = Sym({}, 0)
        for (a, _, _), st in zip(dims, strides):
            offset = offset + a * st
        pattern = [[st, n] for (_, n, _), st in zip(dims, strides) if n > 1] or [[1, 1]]
        what = f"{self!r} (a reshape of HBM {self.logical.name}{list(self.logical.shape)})"
        have, want = self._dtype.itemsize, itemsize(self.logical.dtype)
        pattern, offset = _in_units(pattern, offset, have, want, what)
        lead = next((i for i, (_, n, _) in enumerate(dims) if n > 1), None)
        if (lead is not None and all(n == m for (_, n, _), m in zip(dims[lead + 1:], self._shape[lead + 1:]))
                and dims[lead][1] * strides[lead] * have % want == 0):
            # one contiguous run of flat elements: the tensor's outermost axis it spans in whole rows
            run = dims[lead][1] * strides[lead] * have // want
            own = access.row_major(self.logical.shape)
            k = next((k for k, st in enumerate(own) if run % st == 0 and run // st <= self.logical.shape[k]), None)
            if k is not None:
                pattern = [[own[k], run // own[k]]] + [[own[j], self.logical.shape[j]]
                                                       for j in range(k + 1, len(own))]
        try:
            tdims, _, order = access.decompose(self.logical.shape, pattern, offset, what)
        except access.NotABox:
            raise TraceError(f"{what}: the slice {[f'{a}:+{n}' for a, n, _ in dims]} is no box of "
                             f"the tensor's {list(self.logical.shape)} bytes: not modelled") from None
        t = HbmTensor(self._rec, self.logical, self._dtype, self.buffer)
        shape = tuple(n for _, n, k in dims if k)
        return HbmView(t, tdims, order, shape)

    def __getitem__(self, key):
        gather = _tile_indexed(self, key)
        if gather is not None:
            return gather
        try:
            dims = _slice_dims(self.shape, [Sym({}, 0)] * len(self.shape), [True] * len(self.shape),
                               key, hbm=True)
        except access.NotABox as e:
            split = _split_index(self, key, str(e))
            if split is None:
                raise
            return split
        return self._bytes_view(dims) if self._reshaped() else self._view(dims)

    def full(self) -> "HbmView":
        dims = [(Sym({}, 0), d, True) for d in self.shape]
        return self._bytes_view(dims) if self._reshaped() else self._view(dims)

    def reshape(self, *dims, shape=None) -> "HbmTensor":
        """The same bytes as another row-major shape (NkiTensor.reshape; ``shape=`` as the older
        neuronxcc.nki spelled it)."""
        shape = _shape_arg(dims if shape is None else (shape,), self.size,
                           f"HBM tensor {self.logical.name}")
        lg = self.logical
        if tuple(shape) == tuple(lg.shape):
            return HbmTensor(self._rec, lg, self._dtype, self.buffer)
        if [n for n in shape if n != 1] == [n for n in lg.shape if n != 1]:
            t = HbmTensor(self._rec, lg, self._dtype, self.buffer)  # the same box: 1s added/removed
            t._shape = tuple(shape)
            return t
        t = HbmTensor(self._rec, lg, self._dtype, self.buffer)
        if lg.loaded or lg.output:  # after use: a view of the same bytes in another shape
            t._shape = tuple(shape)
        else:
            lg.shape = t._shape = tuple(shape)
        return t

    def ap(self, pattern, offset=0, dtype=None, **kw) -> "HbmView":
        """``.ap(pattern=[[stride, num], ...], offset=..., dtype=...)``: the box of this tensor the
        access pattern walks (:func:`loopsim.frontends.nki.access.decompose`), its axes in the
        pattern's order. ``dtype`` of another element size reinterprets the tensor's bytes (its
        last dimension rescaled, before its first use)."""
        t = self._retyped(dtype) if dtype is not None else self
        # the pattern's offsets are flat: walk the tensor's own shape
        base = t.logical.shape if t._reshaped() or tuple(t.logical.shape) != t._shape else None
        shape = t.shape
        if t._retyped_handle():  # elements of another size: the same bytes in the tensor's elements
            pattern, offset = _in_units(pattern, offset, t._dtype.itemsize, itemsize(t.logical.dtype),
                                        f".ap of {t!r} (HBM {t.logical.name} holds {t.logical.dtype})")
            shape = t.logical.shape
        gather = _indirect(kw)
        index = kw.get(gather) if gather else None
        if gather:  # rows chosen at run time: a box of the pattern's extents, at the static offset
            kw = {k: v for k, v in kw.items() if k not in ("vector_offset", "scalar_offset")}
        try:
            dims, order = _ap_dims(t, shape, pattern, offset, None, kw, hbm=True, base=base)
        except access.NotABox as e:
            redone = _at_row_stride(self, t, shape if base is None else base, pattern, offset, kw,
                                    base) if gather else None
            if redone is None:
                if gather:
                    raise TraceError(f".ap of {t!r} with {gather}=: rows chosen at run time through "
                                     f"pattern {[list(p) for p in pattern]}, which is no box of the "
                                     "tensor (a stride that skips, a repeat): not modelled; gather "
                                     "whole rows and pick on chip") from None
                split = _split(t, pattern, offset, kw, base, str(e))
                if split is None:
                    raise
                return split
            dims, order = redone
        if base is not None:
            t = HbmTensor(t._rec, t.logical, t._dtype, t.buffer)
        view = t._view(dims, order, [int(p[1]) for p in pattern])
        if gather:
            view.indirect = (gather, _logical_dim(self, t, kw.get("indirect_dim") or 0), index)
        return view

    def _retyped(self, dtype) -> "HbmTensor":
        new = nki_dtype(dtype)
        old = self._dtype
        if new.itemsize == old.itemsize:
            if new == old:
                return self
            t = HbmTensor(self._rec, self.logical, new, self.buffer)
            return t
        lg = self.logical
        last = self._shape[-1] * old.itemsize
        if last % new.itemsize:
            raise TraceError(f"{self!r} as {new}: its last dimension of {last} bytes is not a whole "
                             f"number of {new.itemsize}-byte elements")
        if lg.loaded or lg.output:  # after use: a handle of the same bytes in other elements
            t = HbmTensor(self._rec, lg, new, self.buffer)
            t._shape = self._shape[:-1] + (last // new.itemsize,)
            return t
        lg.shape = self._shape[:-1] + (last // new.itemsize,)
        lg.dtype = new.loopsim
        return HbmTensor(self._rec, lg, new, self.buffer)

    def broadcast_to(self, shape):
        raise TraceError(f"broadcast of HBM tensor {self.logical.name} to {list(shape)} (a DMA "
                         "reading the same bytes into every partition) is not modelled; load it "
                         "once and broadcast the tile on chip")

    def __repr__(self):
        return f"HBM {self.logical.name}{list(self.shape)}"


class _OfTensor:
    """A view of one HBM tensor (``self.tensor``): its dtype and buffer are the tensor's."""

    @property
    def dtype(self):
        return self.tensor.dtype

    @property
    def buffer(self):
        return self.tensor.buffer


class HbmView(_OfTensor, _Viewable):
    """A slice of an HBM tensor: per dimension (start, size, kept)."""

    def __init__(self, t: HbmTensor, dims, order=None, shape=None):
        self.tensor, self.dims = t, dims
        # (which offset, tensor dimension, the index: a tile or a register) of an indirect access
        # (rows chosen at run time), else None
        self.indirect = None
        # the tensor dimensions the view's axes run along, in the view's order (an access
        # pattern may walk them permuted); None: the kept dimensions in the tensor's order
        self.order = None if not order or (not isinstance(order[0], tuple) and list(order) ==
                                           sorted(order)) else list(order)
        self._shape = shape  # the shape the kernel sees when it differs by size-1 dimensions

    @property
    def shape(self):
        if self._shape is not None:
            return self._shape
        if self.order is not None:
            return tuple(self.dims[d][1] for d in self.order)
        return tuple(s for _, s, k in self.dims if k)

    def like(self, dims, order=None, shape=None) -> "HbmView":
        """Another view of the same tensor (``dims`` per its dimension), an indirect access's
        rows still chosen at run time."""
        v = HbmView(self.tensor, dims, order, shape)
        v.indirect = self.indirect
        return v

    def __getitem__(self, key):
        if self.order is not None or self._shape is not None:
            raise TraceError(f"indexing {self!r}, a permuted or reshaped view, is not modelled; "
                             "index the tensor itself")
        starts = [a for a, _, _ in self.dims]
        kept = [k for _, _, k in self.dims]
        return self.like(_slice_dims([s for _, s, _ in self.dims], starts, kept, key, hbm=True))

    def reshape(self, *dims, shape=None):
        shape = _shape_arg(dims if shape is None else (shape,), self.size, repr(self))
        if tuple(shape) == self.shape:
            return self
        kept = [d for d, (_, _, k) in enumerate(self.dims) if k]
        # only dimensions of size 1 added or removed: the same box
        if [n for n in shape if n != 1] == [n for n in self.shape if n != 1]:
            dims = [(a, s, k and s != 1) for a, s, k in self.dims]
            return self.like(dims)
        raise TraceError(f"reshape of a slice {list(self.shape)} of HBM tensor "
                         f"{self.tensor.logical.name} to {list(shape)} is not modelled (kept "
                         f"dimensions {kept}); reshape the whole tensor before its first use")

    def ap(self, pattern, offset=0, dtype=None, **kw):
        raise TraceError(f".ap on a slice of HBM tensor {self.tensor.logical.name} is not modelled; "
                         "call .ap on the tensor itself (offsets are from its start)")

    def broadcast_to(self, shape):
        return self.tensor.broadcast_to(shape)

    def __repr__(self):
        return f"HBM {self.tensor.logical.name} slice {list(self.shape)}"


#: the most DMAs a strided or overlapping HBM access pattern is split into
MAX_SPLIT = 1024


class HbmSplit(_OfTensor, _Viewable):
    """An HBM access pattern whose elements are no box (a stride that skips, a stride-0 repeat,
    overlapping windows: ``[[1, 3], [1, 510]]``): the DMAs of its pieces, one per element of one
    pattern entry (view ``axis``), each a box. A DMA moves every element it names, a repeated
    one again, so its bytes are the pieces' bytes; a DMA (``nisa.dma_copy``) into or out of it
    runs piece by piece."""

    def __init__(self, t: HbmTensor, axis: int, parts: list, shape: tuple, why: str):
        self.tensor, self.axis, self.parts, self._shape, self.why = t, axis, parts, shape, why

    @property
    def shape(self):
        return self._shape

    def _refuse(self, *_a, **_k):
        raise TraceError(f"{self.why} (loopsim splits it into one DMA per element of one pattern "
                         "entry for nisa.dma_copy only)")

    __getitem__ = reshape = ap = broadcast_to = _refuse

    def __repr__(self):
        return f"HBM {self.tensor.logical.name} pattern {list(self._shape)}"


def _split(t: HbmTensor, pattern, offset, kw, base, why: str) -> HbmSplit | None:
    """The pattern as one DMA per element of one of its entries, each piece a box, or None."""
    try:
        pat = [(int(p[0]), int(p[1])) for p in pattern]
    except (TypeError, ValueError, IndexError):
        return None
    shape = tuple(n for _, n in pat)
    for i, (st, n) in sorted(enumerate(pat), key=lambda e: e[1][1]):
        if n <= 1 or n > MAX_SPLIT:
            continue
        rest = [[s, 1 if j == i else m] for j, (s, m) in enumerate(pat)]
        parts = []
        try:
            for k in range(n):
                dims, order = _ap_dims(t, t.shape, rest, Sym.of(offset) + k * st, None, kw,
                                       hbm=True, base=base)
                h = t if base is None else HbmTensor(t._rec, t.logical, t._dtype, t.buffer)
                parts.append(h._view(dims, order, [m for _, m in rest]))
        except access.NotABox:
            continue
        return HbmSplit(t, i, parts, shape, why)
    return None


def _split_index(t: HbmTensor, key, why: str) -> HbmSplit | None:
    """An index of ``t`` with one index tile walking two grid axes along one dimension (rows
    ``i_h + i_kh``: overlapping windows) as one DMA per value of one of those axes, each a
    plain slice; None where no such split exists."""
    key = key if isinstance(key, tuple) else (key,)
    wide = [i for i, k in enumerate(key) if isinstance(k, access.Index) and not k.simple]
    if len(wide) != 1:
        return None
    w = key[wide[0]]
    order: list = []  # the grid axes in the view's order
    for k in key:
        if isinstance(k, access.Index):
            for a, _, _ in sorted(k.terms, key=lambda x: x[0] if isinstance(x[0], int) else 0):
                if a not in order:
                    order.append(a)
        elif isinstance(k, IndexTile):
            order.append(("arange", id(k)))
    shape = []
    for a in order:
        n = next((n for k in key if isinstance(k, access.Index) for b, _, n in k.terms if b == a), None)
        shape.append(n if n is not None else next(k.size for k in key if isinstance(k, IndexTile)
                                                  and ("arange", id(k)) == a))
    for a, c, n in sorted(w.terms, key=lambda x: x[2]):
        if a is None or n > MAX_SPLIT or any(
                isinstance(k, access.Index) and k is not w and any(b == a for b, _, _ in k.terms)
                for k in key):
            continue
        rest = tuple(x for x in w.terms if x[0] != a)
        parts = []
        try:
            for j in range(n):
                sub = access.Index(w.offset + c * j, rest)
                if not sub.simple:
                    raise access.NotABox(why)
                parts.append(t[key[:wide[0]] + (sub,) + key[wide[0] + 1:]])
        except access.NotABox:
            continue
        return HbmSplit(t, order.index(a), parts, tuple(shape), why)
    return None


def _prod(shape) -> int:
    n = 1
    for d in shape:
        n *= d
    return n


def _shape_arg(shape, size: int, what: str) -> tuple[int, ...]:
    if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
        shape = tuple(shape[0])
    if any(isinstance(d, bool) or not isinstance(d, int) or d <= 0 for d in shape):
        raise TraceError(f"reshape of {what} to {list(shape)}: dimensions must be positive integers")
    n = 1
    for d in shape:
        n *= d
    if n != size:
        raise TraceError(f"reshape of {what} ({size} elements) to {list(shape)} ({n} elements)")
    return tuple(int(d) for d in shape)


def _note(t, text: str) -> None:
    """Add ``FILE:LINE: text`` to the trace's notes (shown with the report)."""
    from loopsim.frontends.nki import work

    rec = t._rec if isinstance(t, HbmTensor) else t.tensor._rec if isinstance(t, HbmView) else \
        t.buf.rec
    notes = getattr(rec, "notes", None)
    if notes is not None:
        line = f"{work.call_site(rec)}: {text}"
        if line not in notes:
            notes.append(line)


def _in_units(pattern, offset, have: int, want: int, what: str):
    """An access pattern (``[[stride, num], ...]``, flat offset) in elements of ``have`` bytes
    as the pattern covering the same bytes in elements of ``want`` bytes: HBM is bytes, whatever
    element size a handle views them with. A larger element is ``have // want`` of the tensor's
    (one more innermost run); a smaller one must tile whole elements of the tensor (its offset,
    its strides and its one stride-1 run whole multiples of ``want // have``), else refused."""
    if have == want:
        return pattern, offset
    try:
        pat = [(int(p[0]), int(p[1])) for p in pattern]
    except (TypeError, ValueError, IndexError):
        raise TraceError(f"{what}: pattern {pattern!r} must be a list of [stride, num] pairs") from None
    off = Sym.of(offset)
    if have > want:
        r = have // want
        return [[st * r, n] for st, n in pat] + [[1, r]], off * r
    r = want // have
    unit = [i for i, (st, n) in enumerate(pat) if st == 1 and n > 1]
    whole = (len(unit) == 1 and pat[unit[0]][1] % r == 0 and off.const % r == 0
             and all(c % r == 0 for c in off.terms.values())
             and all(st % r == 0 for i, (st, n) in enumerate(pat) if n > 1 and i not in unit))
    if not whole:
        raise TraceError(f"{what}: pattern {pattern!r} at offset {off} in {have}-byte elements "
                         f"covers part of a {want}-byte element of the tensor: not modelled")
    return [[1, n // r] if i in unit else [st // r if n > 1 else st, n] for i, (st, n) in enumerate(pat)], off // r


def _tile_indexed(t: "HbmTensor", key):
    """``t[idx, cols]`` with an on-chip tile ``idx`` in the index (the older NKI's indirect DMA:
    the rows along that dimension are the tile's values, data): the view of as many rows as
    ``idx`` has partitions, from row 0, its rows chosen by ``idx`` (as ``.ap(vector_offset=idx)``
    gives); None where no entry of ``key`` is a tile."""
    key = key if isinstance(key, tuple) else (key,)
    at = [i for i, k in enumerate(key) if isinstance(k, Tile)]
    if not at:
        return None
    if len(at) > 1:
        raise TraceError(f"{t!r} indexed by on-chip tiles along {len(at)} dimensions (data indices "
                         "on several dimensions): not modelled; gather along one")
    d, idx = at[0], key[at[0]]
    n = idx.shape[0] if idx.shape else 1  # a one-element tile: one row (a scalar offset)
    own = _logical_dim(t, t, d) if d < len(t.shape) else None
    if own is None or n > t.logical.shape[own]:
        raise TraceError(f"{t!r} indexed by tile {idx!r} along dimension {d}: {n} rows chosen by "
                         "data where the tensor's own dimensions have no such rows: not modelled")
    view = t[key[:d] + (slice(0, n) if idx.shape else 0,) + key[d + 1:]]
    if not isinstance(view, HbmView):
        raise TraceError(f"{t!r} indexed by tile {idx!r}: its other indices make no box of the "
                         "tensor: not modelled")
    _note(t, f"{t!r} indexed by tile {idx!r} along dimension {d} (an indirect DMA: the rows it "
             f"reads are data): its bytes counted as {n} rows (ASSUMED: which rows, and so their "
             "reuse, is not known)")
    view.indirect = ("vector_offset" if idx.shape else "scalar_offset", own, idx)
    return view


def _indirect(kw) -> str | None:
    """``"vector_offset"`` or ``"scalar_offset"`` where an access pattern's rows are chosen by
    data at run time (an index tile, a register), else None (a known int or loop index)."""
    if kw.get("vector_offset") is not None:
        return "vector_offset"
    so = kw.get("scalar_offset")
    if so is not None and not (isinstance(so, (int, Sym)) and not isinstance(so, bool)):
        return "scalar_offset"
    return None


def _at_row_stride(handle: "HbmTensor", t: "HbmTensor", whole, pattern, offset, kw, base):
    """(dims, order) of a gather whose pattern is no box only because its outer stride, the
    rows the data picks along the tensor's first dimension, is not that dimension's stride
    (``[[H, T], [1, H]]`` on rows of H + 2): the pattern at the row stride, noted ASSUMED (which
    rows is data; the bytes are the pattern's). None where that is not the case or no box either."""
    if len(whole) < 2 or len(pattern) < 2 or _logical_dim(handle, t, kw.get("indirect_dim") or 0) != 0:
        return None
    rows = access.row_major(whole)[0]
    if int(pattern[0][0]) == rows:
        return None
    at_rows = [[rows, int(pattern[0][1])]] + [list(p) for p in pattern[1:]]
    try:
        found = _ap_dims(t, whole, at_rows, offset, None, kw, hbm=True, base=base)
    except access.NotABox:
        return None
    _note(t, f".ap of {t!r}: the outer stride {int(pattern[0][0])} of a gather is taken as the "
             f"tensor's row stride {rows} (ASSUMED: the rows it reads are data)")
    return found


def _logical_dim(handle: "HbmTensor", t: "HbmTensor", d) -> int | None:
    """The dimension of the tensor's own shape that ``indirect_dim`` ``d`` of ``handle``'s shape
    steps along (the one of the same row-major stride), None where none does (a reshape)."""
    if isinstance(d, bool) or not isinstance(d, int) or not 0 <= d < len(handle.shape):
        raise TraceError(f".ap of {handle!r}: indirect_dim={d!r} is not a dimension of its "
                         f"shape {list(handle.shape)}")
    if tuple(handle.shape) == tuple(t.logical.shape):
        return d
    # strides in bytes: a handle may view the tensor's bytes in elements of another size
    stride = access.row_major(handle.shape)[d] * handle.itemsize
    own = [st * itemsize(t.logical.dtype) for st in access.row_major(t.logical.shape)]
    return own.index(stride) if stride in own else None  # None: rows of no dimension of the tensor


def _ap_dims(t, shape, pattern, offset, dtype, kw, hbm: bool, base=None):
    """(dims, order) of an access pattern on ``t`` of ``shape`` (an indirect offset's row
    stride from it), decomposed over ``base`` (the tensor's own shape; default ``shape``)."""
    what = f".ap of {t!r}"
    so = kw.get("scalar_offset")
    data_offset = kw.get("vector_offset") is not None or (
        so is not None and not (isinstance(so, (int, Sym)) and not isinstance(so, bool)))
    if data_offset:
        # an indirect access (rows chosen by a tile or a register at run time): the bytes are
        # known, which rows are not; counted as the pattern's box at its static offset, ASSUMED
        _note(t, f"{what} with {'vector_offset' if kw.get('vector_offset') is not None else 'scalar_offset'}= "
                 "(an indirect access: the rows it reads are data): its bytes counted as the "
                 "pattern's box at its static offset (ASSUMED: which rows, and so their reuse, is "
                 "not known)")
        so = None
    if dtype is not None and nki_dtype(dtype).itemsize != t.dtype.itemsize:
        raise TraceError(f"{what}: reinterpreting {t.dtype} as {dtype} (another element size) is "
                         "not modelled")
    if so is not None:  # a known scalar offset along indirect_dim (an int or a loop index)
        d = kw.get("indirect_dim") or 0
        offset = Sym.of(offset) + Sym.of(so) * access.row_major(shape)[d]
    try:
        dims, view, order = access.decompose(shape if base is None else base, pattern, offset, what)
    except access.NotABox:
        if hbm:
            raise
        # on chip: a strided or repeated (stride 0) read of the box it covers
        view = tuple(int(p[1]) for p in pattern)
        return access.covered(shape, pattern, offset, what), view
    split = bool(order) and isinstance(order[0], tuple)
    return dims, (order if hbm or (not split and order == sorted(order)) else tuple(view))


def _size_1_entry(k) -> bool:
    """An index entry naming the one element of a size-1 dimension: 0, ``:`` or ``0:1``."""
    if isinstance(k, int) and not isinstance(k, bool):
        return k == 0
    return isinstance(k, slice) and k.step in (None, 1) and k.start in (None, 0) and k.stop in (None, 1)


def _slice_dims(sizes, starts, kept, key, hbm: bool = False, shaped: list | None = None):
    """Apply an index ``key`` to the kept dimensions; returns [(start, size, kept)] per dim.

    An index tile that is not a plain run (a stride, a window ``s*i + j``) covers the box from
    its lowest to its highest index: allowed on chip (``shaped`` receives the grid shape it
    spans), refused for HBM, whose bytes must be a box."""
    key = key if isinstance(key, tuple) else (key,)
    if any(k is Ellipsis for k in key):
        i = next(i for i, k in enumerate(key) if k is Ellipsis)
        n_kept = sum(kept)
        key = key[:i] + (slice(None),) * (n_kept - len(key) + 1) + key[i + 1:]
    out = [(a, s, k) for a, s, k in zip(starts, sizes, kept)]
    positions = [i for i, k in enumerate(kept) if k]
    if len(key) > len(positions) and not hbm and len(key) == len(kept):
        # the older NKI kept an integer-indexed tile dimension (t[:, i] then indexed [:, 0]): the
        # index names every dimension, the dropped ones of size 1
        positions = list(range(len(kept)))
    if len(key) > len(positions) and not hbm and all(
            _size_1_entry(k) for k in key[len(positions):]):
        # trailing entries for size-1 dimensions the older NKI kept on an op's result (an op of a
        # tile indexed t[0:128, n] has shape [128, 1] there): [0] or [:] of one element
        key = key[:len(positions)]
    if len(key) > len(positions):
        raise TraceError(f"index {key!r} has {len(key)} entries for a tile of {len(positions)} "
                         "dimensions")
    complex_index = False
    view: list = []  # the view's own shape, entry by entry (a grid index adds its axes)
    grid: list = []  # per view axis, the (buffer position, elements per step) it walks
    seen: dict = {}  # index-grid axis key -> its view axis
    for pos, k in zip(positions, key):
        base, size, _ = out[pos]
        if isinstance(k, slice):
            if k.step not in (None, 1):
                if hbm:
                    raise TraceError(f"a strided slice (step {k.step}) of an HBM tensor is not "
                                     "modelled (its bytes are not a box); load the rows and pick "
                                     "on chip")
                lo = Sym.of(0 if k.start is None else k.start)
                hi = Sym.of(size if k.stop is None else k.stop)
                n = (hi - lo)
                if not n.is_const() or n.const <= 0:
                    raise TraceError(f"slice {lo}:{hi} must have a constant positive size")
                out[pos] = (base + lo, n.const, True)
                view.append(-(-n.const // k.step))
                grid.append([(pos, k.step)])
                complex_index = True
                continue
            lo = Sym.of(0 if k.start is None else k.start)
            hi = Sym.of(size if k.stop is None else k.stop)
            n = hi - lo
            if not n.is_const() or n.const <= 0:
                raise TraceError(f"slice {lo}:{hi} must have a constant positive size")
            out[pos] = (base + lo, n.const, True)
            view.append(n.const)
            grid.append([(pos, 1)])
        elif isinstance(k, DS):
            out[pos] = (base + k.start, k.size, True)
            view.append(k.size)
            grid.append([(pos, 1)])
        elif isinstance(k, access.Index) and not k.simple:
            if hbm:
                raise access.NotABox(f"index tile {_index_text(k)} of an HBM tensor is a strided or "
                                 "overlapping access (its bytes are not a box, or are read more "
                                 "than once): not modelled; load the box once and index the "
                                 "window on chip")
            out[pos] = (base + k.low, k.extent, True)
            for a, c, n in sorted(k.terms, key=lambda t: t[0] if isinstance(t[0], int) else 0):
                if a is None or a not in seen:
                    if a is not None:
                        seen[a] = len(view)
                    view.append(n)
                    grid.append([(pos, c)])
                else:
                    grid[seen[a]].append((pos, c))
            complex_index = True
        elif isinstance(k, IndexTile):
            out[pos] = (base + k.offset, k.size, True)
            a = k.terms[0][0] if isinstance(k, access.Index) else None
            if a is not None and a in seen:
                grid[seen[a]].append((pos, 1))
                continue
            if a is not None:
                seen[a] = len(view)
            view.append(k.size)
            grid.append([(pos, 1)])
        elif isinstance(k, (int, Sym)) and not isinstance(k, bool):
            out[pos] = (base + Sym.of(k), 1, False)
        else:
            raise TraceError(f"index {k!r} is not modelled (slices, nl.ds, nl.arange, ints and "
                             "loop indices are)")
    if complex_index and shaped is not None:
        shaped.append((tuple(view), tuple(tuple(g) for g in grid) if len(grid) == len(view) else None))
    return out


def _index_text(k) -> str:
    parts = [f"{c}*axis{a}" for a, c, _ in k.terms]
    return " + ".join(parts + ([str(k.offset)] if str(k.offset) != "0" else []))


class LoopReduce:
    """What ``nl.loop_reduce(x, op, loop_indices)`` returns: assigned into a tile it accumulates
    ``x`` there across the loops (from the reduction's identity at their first iteration)."""

    def __init__(self, x, op: str):
        self.x, self.op = x, op


class DS:
    """``nl.ds(start, size)``."""

    def __init__(self, start, size):
        self.start = Sym.of(start)
        if isinstance(size, Sym) or not isinstance(size, int) or size <= 0:
            raise TraceError(f"nl.ds size {size!r} must be a positive integer")
        self.size = size


class Buffer:
    """An SBUF or PSUM allocation, at the loop depth where it was made.

    A reshaped buffer (``t.reshape(...)``) is another Buffer over the same storage: its
    ``binding`` is its origin's, re-expressed in its own axes (:func:`.access.reshape_binding`),
    so a tile written through one shape is read through the other."""

    def __init__(self, rec, name, shape, dtype, space, depth, line, nki=None):
        self.rec, self.name, self.dtype, self.space, self.depth, self.line = \
            rec, name, dtype, space, depth, line
        self.nki_dtype = nki_dtype(nki if nki is not None else dtype)
        self.shape = tuple(int(s) for s in shape)
        pars = [i for i, s in enumerate(shape) if isinstance(s, ParDim)]
        self.pax = pars[0] if pars else 0
        self.origin: Buffer | None = None  # the buffer this one reshapes
        self._binding: Binding | None = None
        self.fresh_load = None  # (LoadEv, source) of an nl.load result not yet used
        self.fresh_op = None  # (op name, inputs) of an nl.* elementwise result
        self.fresh_matmul = None  # the MatmulEv of a return-style nc_matmul/nl.matmul result
        self.stamp = -1  # the recorder's write count at the last write of its storage (-1: none)

    @property
    def binding(self):
        if self.origin is None:
            return self._binding
        b = self.origin.binding
        return None if b is None else self._rebound(b, self.origin.shape, self.shape)

    @binding.setter
    def binding(self, b) -> None:
        if self.origin is None:
            self._binding = b
            stamp = getattr(self.rec, "stamp", None)
            self.stamp = stamp() if stamp is not None else -1
        else:
            self.origin.binding = None if b is None else self._rebound(b, self.shape, self.origin.shape)

    def _rebound(self, b, old, new):
        """``b`` over axes ``old`` re-expressed over ``new`` (the same per-partition bytes). A
        reshape that merges axes holding different dimensions of the tensor (a shuffled layout),
        read or written through: the view holds the whole tile, its mixed axes along no one
        dimension, with a note."""
        try:
            return access.reshape_binding(b, old, new, self.name)
        except TraceError:
            note = (f"reshape of buffer {self.name} {list(self.origin.shape)} to {list(self.shape)} "
                    f"merges axes holding different dimensions of {b.logical.name}: the reshaped "
                    "view is read as holding the whole tile (ASSUMED: the same elements, their "
                    "order not followed)")
            notes = getattr(self.rec, "notes", None)
            if notes is not None and note not in notes:
                notes.append(note)
            return access.collapsed_binding(b, old, new)

    def reshaped(self, shape) -> "Buffer":
        root = self.origin or self
        nb = Buffer(self.rec, self.name, shape, self.dtype, self.space, self.depth, self.line,
                    self.nki_dtype)
        nb.origin = root
        nb.pax = 0
        if hasattr(root, "homes"):  # the same storage: its iterations, and the reads past them
            nb.homes, nb.escaped = root.homes, root.escaped
        return nb


class Tile(_Viewable):
    """A view of an on-chip buffer (what kernels hold and index): per buffer axis (offset, size,
    kept). Operators on tiles are elementwise engine ops; truth values are refused.

    ``view_shape``: the shape the kernel sees when it differs from the box of the buffer the
    view covers (a broadcast, a strided or windowed index tile): the ops read that box."""

    def __init__(self, buf: Buffer, offsets=None, sizes=None, kept=None, view_shape=None,
                 view_dtype=None):
        self.buf = buf
        n = len(buf.shape)
        self.offsets = offsets if offsets is not None else [Sym({}, 0)] * n
        self.sizes = sizes if sizes is not None else list(buf.shape)
        self.kept = kept if kept is not None else [True] * n
        self.view_shape = None if view_shape is None else tuple(view_shape)
        self.view_dtype = view_dtype  # the dtype a reinterpreting access pattern reads as
        self.grid = None  # an index-tile view: per view axis ((buffer axis, step), ...)

    def grid_axes(self, binding):
        """Per axis of an index-tile view, the tensor dimension it walks and its step there
        ((dim, elements), for :meth:`Recorder.bind`), from ``binding``; None where a view axis
        walks two buffer axes or one holding no dimension."""
        if self.grid is None:
            return None
        out = []
        for steps in self.grid:
            if not steps:  # an axis walking no buffer axis (a stride-0 repeat): a broadcast
                out.append(None)
                continue
            if len(steps) != 1:
                return None
            a, c = steps[0]
            hit = [(d, sc) for d, dm in enumerate(binding.dims) for b, sc in dm.axes if b == a]
            if len(hit) != 1:
                return None
            out.append((hit[0][0], hit[0][1] * c))
        return out

    @property
    def shape(self):
        if self.view_shape is not None:
            return self.view_shape
        return tuple(s for s, k in zip(self.sizes, self.kept) if k)

    @property
    def dtype(self):
        return self.view_dtype if self.view_dtype is not None else self.buf.nki_dtype

    @property
    def buffer(self):
        return self.buf.space

    def box_shape(self) -> tuple[int, ...]:
        """The shape of the box of the buffer this view covers (its kept axes)."""
        return tuple(n for n, k in zip(self.sizes, self.kept) if k)

    def as_view_of(self, src: "Tile") -> "Tile":
        """This whole tile seen with ``src``'s view shape when ``src`` reorders or reshapes its box
        (an index tile ``i_f2 * n + i_f1``): a copy of such a view holds the same box."""
        if src.view_shape is None or _prod(src.view_shape) != _prod(src.box_shape()):
            return self
        return Tile(self.buf, self.offsets, self.sizes, self.kept, src.view_shape)

    def _whole(self) -> bool:
        return self.view_shape is None and all(k for k in self.kept) and \
            list(self.sizes) == list(self.buf.shape) and all(o.same(Sym({}, 0)) for o in self.offsets)

    def __getitem__(self, key):
        if isinstance(key, Cond):  # the older NKI's masked tile x[i_p, i_f][mask]: as mask= is read
            return self
        if self.view_shape is not None and self._rows_retyped():
            return self._retyped_slice(key)
        if self.view_shape is not None:
            raise TraceError(f"indexing {self!r}, a broadcast or strided view, is not modelled; "
                             "index the tile first, then broadcast")
        entries = key if isinstance(key, tuple) else (key,)
        if not any(self.kept) and entries and all(
                (isinstance(k, int) and not isinstance(k, bool) and k == 0) or k == slice(None)
                for k in entries):
            return self  # one element (a loaded scalar, [1, 1] in the older NKI) indexed [0, 0]
        shaped: list = []
        dims = _slice_dims(self.sizes, self.offsets, self.kept, key, shaped=shaped)
        # a slice of a tile is relative to the tile's own start
        t = Tile(self.buf, [a for a, _, _ in dims], [s for _, s, _ in dims], [k for *_, k in dims],
                 shaped[0][0] if shaped else None)
        t.grid = shaped[0][1] if shaped else None
        return t

    def _rows_retyped(self) -> bool:
        """Whether this view is its box read in elements of another size (``t.view(dtype)``):
        every dimension the same but the last, whose bytes are the same."""
        v, n = self.view_shape, len(self.sizes)
        return self.view_dtype is not None and len(v) == n and self.grid is None \
            and tuple(v[:-1]) == tuple(self.sizes[:-1]) \
            and v[-1] * self.view_dtype.itemsize == self.sizes[-1] * self.buf.nki_dtype.itemsize

    def _retyped_slice(self, key) -> "Tile":
        """An index of a :meth:`_rows_retyped` view: the other dimensions as indexed, the last
        the buffer's elements holding the bytes of the elements indexed."""
        n = len(self.sizes)
        dims = _slice_dims(list(self.view_shape), [Sym({}, 0)] * n, [True] * n, key)
        start, size, kept = dims[-1]
        if not start.is_const():
            raise TraceError(f"indexing {self!r} (its bytes read as {self.view_dtype}) at a last-"
                             f"dimension offset {start} that varies is not modelled")
        new, old = self.view_dtype.itemsize, self.buf.nki_dtype.itemsize
        lo, hi = start.const * new // old, -(-(start.const + size) * new // old)
        offsets = [o + a for o, (a, _, _) in zip(self.offsets[:-1], dims[:-1])] + [self.offsets[-1] + lo]
        sizes = [m for _, m, _ in dims[:-1]] + [hi - lo]
        view = tuple(m for _, m, k in dims if k)
        return Tile(self.buf, offsets, sizes, [k for *_, k in dims[:-1]] + [kept or hi - lo > 1],
                    view, self.view_dtype)

    def reshape(self, *dims, shape=None) -> "Tile":
        """The whole buffer as another row-major shape (NkiTensor.reshape): the same storage."""
        shape = _shape_arg(dims if shape is None else (shape,), self.size, repr(self))
        if tuple(shape) == self.shape and self.view_shape is None:
            return self
        if not self._whole():
            if self.view_shape is None and [n for n in shape if n != 1] == \
                    [n for n in self.shape if n != 1]:
                return Tile(self.buf, self.offsets, self.sizes, self.kept, tuple(shape))
            raise TraceError(f"reshape of {self!r}, a slice of buffer {self.buf.name}"
                             f"{list(self.buf.shape)}, to {list(shape)} is not modelled; reshape "
                             "the whole buffer")
        access.reshape_groups(self.buf.shape, shape, repr(self))
        return Tile(self.buf.reshaped(shape))

    def broadcast_to(self, shape) -> "Tile":
        """A view repeating size-1 dimensions up to ``shape`` (NkiTensor broadcast): the ops
        reading it read this tile."""
        shape = tuple(shape)
        own = self.shape
        if 0 < len(own) < len(shape) and own == shape[:len(own)] and \
                any(a != b and a != 1 for a, b in zip(own[::-1], shape[::-1])):
            own = own + (1,) * (len(shape) - len(own))  # the older NKI's [P] tile is [P, 1]
        if len(shape) < len(own) or any(a != b and a != 1 for a, b in zip(own[::-1], shape[::-1])):
            raise TraceError(f"broadcast of {self!r} to {list(shape)}: only size-1 dimensions "
                             "repeat")
        return Tile(self.buf, self.offsets, self.sizes, self.kept, shape)

    broadcast = None  # set below: NkiTensor.broadcast(dim, size)

    def ap(self, pattern, offset=0, dtype=None, **kw) -> "Tile":
        """``.ap(pattern=[[stride, num], ...], offset=...)`` of an on-chip tile: the box of the
        buffer the pattern walks, the buffer laid out row-major (partition dimension first)."""
        if not self._whole():
            raise TraceError(f".ap on {self!r}, a slice of buffer {self.buf.name}, is not "
                             "modelled; call .ap on the whole buffer (offsets are from its start)")
        if dtype is not None and nki_dtype(dtype).itemsize != self.dtype.itemsize:
            return self._reinterpreted(pattern, offset, nki_dtype(dtype), kw)
        dims, view = _ap_dims(self, self.buf.shape, pattern, offset, dtype, kw, hbm=False)
        # a pattern walking the axes permuted: the kernel sees the pattern's shape, the ops read
        # the box it covers
        permuted = isinstance(view, tuple)
        t = Tile(self.buf, [a for a, _, _ in dims], [s for _, s, _ in dims], [k for *_, k in dims],
                 view if permuted else None)
        if permuted and any(int(p[0]) == 0 and int(p[1]) > 1 for p in pattern):
            t.grid = _repeat_grid(self.buf.shape, pattern)
        return t

    def _reinterpreted(self, pattern, offset, new, kw) -> "Tile":
        """An on-chip access pattern in units of another element size: the box of this buffer
        its bytes cover (the pattern rescaled to this buffer's elements), seen with the
        pattern's shape and dtype."""
        old = self.dtype.itemsize
        what = f".ap of {self!r} as {new}"

        def scaled(x):
            if (x * new.itemsize) % old:
                raise TraceError(f"{what}: {x} elements of {new.itemsize} B are not a whole number "
                                 f"of {old}-byte elements")
            return x * new.itemsize // old
        pat = [[int(p[0]), int(p[1])] for p in pattern]
        inner = [i for i, (st, n) in enumerate(pat) if st == 1]
        out = [[scaled(st) if st != 1 else 1, scaled(n) if i == (inner[-1] if inner else -1) else n]
               for i, (st, n) in enumerate(pat)]
        off = Sym.of(offset)
        off = Sym({v: scaled(c) for v, c in off.terms.items()}, scaled(off.const))
        dims = access.covered(self.buf.shape, out, off, what)
        return Tile(self.buf, [a for a, _, _ in dims], [n for _, n, _ in dims], [k for *_, k in dims],
                    tuple(int(p[1]) for p in pattern), new)

    def view(self, dtype) -> "Tile":
        """``t.view(dtype)``: the tile's bytes read as ``dtype`` (a reinterpreting cast). Of the
        same element size: the same box in another dtype; of another size: the whole buffer's
        row-major access pattern read as ``dtype`` (:meth:`ap`)."""
        new = nki_dtype(dtype)
        if new.itemsize == self.dtype.itemsize:
            if new == self.dtype:
                return self
            t = Tile(self.buf, self.offsets, self.sizes, self.kept, self.view_shape, new)
            t.grid = self.grid
            return t
        if not self._whole():
            raise TraceError(f"{self!r}.view({new}): reinterpreting a slice of buffer "
                             f"{self.buf.name} as another element size is not modelled; view the "
                             "whole buffer")
        shape = list(self.buf.shape)
        last = shape[-1] * self.dtype.itemsize
        if last % new.itemsize:
            raise TraceError(f"{self!r}.view({new}): its last dimension of {last} bytes is not a "
                             f"whole number of {new.itemsize}-byte elements")
        shape[-1] = last // new.itemsize  # the pattern counts elements of the new dtype
        return self.ap([[s, n] for s, n in zip(access.row_major(shape), shape)], 0, new)

    def __setitem__(self, key, value):
        target = self[key]
        if isinstance(value, LoopReduce):  # dst[...] = nl.loop_reduce(x, op, [k]): dst op= x over k
            rec = self.buf.rec
            if target.buf.binding is None:
                rec.memset(target)  # the reduction starts from its identity at the first iteration
            rec.op(value.op, "vector", target, [target, value.x])
            return
        self.buf.rec.assign(target, value)

    def __iadd__(self, other):
        return self.buf.rec.iadd(self, other)

    def _binop(name, swap=False):
        def f(self, other):
            a, b = (other, self) if swap else (self, other)
            return self.buf.rec.elementwise(name, [a, b])
        return f

    __add__, __radd__ = _binop("add"), _binop("add", True)
    __sub__, __rsub__ = _binop("subtract"), _binop("subtract", True)
    __mul__, __rmul__ = _binop("multiply"), _binop("multiply", True)
    __truediv__, __rtruediv__ = _binop("divide"), _binop("divide", True)
    __lt__, __le__ = _binop("less"), _binop("less_equal")
    __gt__, __ge__ = _binop("greater"), _binop("greater_equal")

    def __eq__(self, other):
        """Elementwise equality; against None (``if bias != None:``, as production kernels
        test an optional tile) a Python bool: a tile is never None."""
        return False if other is None else self.buf.rec.elementwise("equal", [self, other])

    def __ne__(self, other):
        return True if other is None else self.buf.rec.elementwise("not_equal", [self, other])

    __hash__ = object.__hash__

    def __neg__(self):
        return self.buf.rec.elementwise("negative", [self])

    def _data(self, *_):
        raise TraceError("data-dependent control flow: an if/while/int/float/bool here needs the "
                         f"values of a {list(self.shape)} tile; loopsim traces shapes, never tensor "
                         "values")

    __int__ = __float__ = __index__ = __iter__ = __len__ = _data

    def __bool__(self):
        """A tile tested for presence (``if bias_tile:``, as NKI's tensor objects are truthy) is
        True; the truth of a comparison (``if nl.max(t) > 0:``) needs data: refused."""
        if getattr(self.buf, "compared", False):
            self._data()
        return True

    def __repr__(self):
        return f"tile {self.buf.name}{list(self.shape)}"


def _repeat_grid(shape, pattern):
    """Per axis of an on-chip access pattern that repeats (a stride-0 entry), the buffer axis it
    walks and its step there (``[(axis, step)]``; ``[]`` for a repeated or one-element axis: a
    broadcast), the buffer laid out row-major; None where an entry walks no single axis."""
    strides = access.row_major(shape)
    grid = []
    for st, n in ((int(p[0]), int(p[1])) for p in pattern):
        if st == 0 or n == 1:
            grid.append([])
            continue
        hit = [a for a, s in enumerate(strides) if st % s == 0 and st // s * (n - 1) < shape[a]]
        if not hit:
            return None
        grid.append([(hit[0], st // strides[hit[0]])])
    return tuple(tuple(g) for g in grid)


def _broadcast(self, dim, size):
    shape = list(self.shape)
    if shape[dim] != 1:
        raise TraceError(f"broadcast of {self!r} along dimension {dim} of size {shape[dim]} "
                         "(only a size-1 dimension repeats)")
    shape[dim] = size
    return self.broadcast_to(tuple(shape))


Tile.broadcast = _broadcast


