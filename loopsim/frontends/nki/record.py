"""What a traced kernel did: loops, DMAs, matmuls and engine ops, and where each tile came from.

Every on-chip buffer carries a *binding*: which logical tile it holds (an HBM tensor's tile, a
matmul accumulator, or the result of engine ops) as an affine map from buffer coordinates to the
logical tensor's coordinates. Statements are recorded against logical tiles, so a matmul reading
``lhsT_tiles[k]`` is recorded as reading ``lhsT[128·k : 128·k + 128, ...]`` whichever loop filled
the buffer. Engine ops are not statements one by one: their results are *derived* values carrying
the tiles they came from and the ops applied, and become one loopsim op (``online_softmax``,
``exp``, ``add``, ...) only where a matmul reads them or a store writes them out.

Numbers are elements (sizes, offsets) and never tensor values: the record tracks shapes only.
"""

from __future__ import annotations

import linecache
import math
import os
import re
import sys

from loopsim.frontends.nki import pieces
from loopsim.frontends.nki.dtypes import itemsize
from loopsim.frontends.nki.errors import TraceError
from loopsim.frontends.nki.events import (ARITH, AccumulateEv, Binding, DimMap, LoadEv, Logical, LoopRec, MatmulEv, OpEv,
                     StoreEv, TileRef, fmt_tile, same_tile)
from loopsim.frontends.nki.symbolic import Cond, IndexTile, LoopVar, NeedsConcrete, Sym
from loopsim.frontends.nki.registers import Values
from loopsim.frontends.nki.views import Buffer, HbmTensor, HbmView, Tile, dtype_name

#: the site of a launch-grid axis (+ (axis,)): in ``concrete`` when the grid runs program by
#: program (a kernel branching on ``nl.program_id``)
GRID_SITE = ("<grid>",)

_PKG = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))) + os.sep


def user_frame():
    """The innermost frame of the user's code (a kernel file or a helper it imports): the first
    frame outside the loopsim package."""
    f = sys._getframe(1)
    while f is not None and (f.f_code.co_filename.startswith(_PKG) or
                             f.f_code.co_filename.startswith("<frozen")):
        f = f.f_back
    return f


class Recorder:
    """State of one trace: the loop stack, the recorded body, tensors and buffers.

    ``concrete``: the loop sites (file, line) to run iteration by iteration (the loader fills it
    from :class:`NeedsConcrete`); ``sites``: every loop site this trace entered."""

    def __init__(self, path: str, func: str, concrete=frozenset()):
        self.path, self.func = path, func
        self.shown = path  # the path as the user gave it, for messages
        self.root: list = []
        self.stack: list = []  # LoopRec (symbolic loop) or IterFrame (one concrete iteration)
        self.logicals: list[Logical] = []
        self.grid: list[LoopVar] = []
        self.names: set[str] = set()
        self.running = False
        self.concrete = frozenset(concrete)
        self.sites: set = set()
        self.notes: list[str] = []  # what the trace assumed or stubbed, for the report
        self.pending = None  # a NeedsConcrete found where it could not be raised (a __del__)
        self.pids: list | None = None  # the program ids, when the grid runs program by program
        self.shared: dict = {}  # HBM tensors the programs of such a grid allocate, by call site
        self.gathers: dict = {}  # (site, tensor, dimension, loops) -> its gathered tensor
        self.registers = Values()  # the run-time register values the user stated (--register-value)
        self.writes = 0  # on-chip writes so far (Buffer.stamp: when a buffer was last written)

    def stamp(self) -> int:
        """The next write's number: buffers compare theirs with a loop's start."""
        self.writes += 1
        return self.writes

    # -- locations and names -------------------------------------------------------------
    def line(self) -> int:
        f = sys._getframe(1)
        while f is not None:
            if f.f_code.co_filename == self.path:
                return f.f_lineno
            f = f.f_back
        return 0

    def source_line(self) -> str:
        n = self.line()
        return linecache.getline(self.path, n) if n else ""

    def unique(self, name: str) -> str:
        base = re.sub(r"\W", "_", name) or "t"
        if not base[0].isalpha():
            base = "t" + base
        n, i = base, 1
        while n in self.names:
            n = f"{base}_{i}"
            i += 1
        self.names.add(n)
        return n

    def assigned_name(self, default: str) -> str:
        m = re.match(r"\s*(\w+)\s*(\[.*\])?\s*[+]?=(?!=)", self.source_line())
        return m.group(1) if m else default

    @property
    def body(self) -> list:
        if self.pending is not None:
            e, self.pending = self.pending, None
            raise e
        return self.stack[-1].body if self.stack else self.root

    @property
    def depth(self) -> int:
        return len(self.stack)

    def in_scope(self) -> set:
        return {r.var for r in self.stack} | set(self.grid)

    # -- loops ---------------------------------------------------------------------------
    def loop(self, trips: int, kind: str, start: int = 0, step: int = 1):
        """The iterator of one loop: symbolic (one pass, the index a :class:`Sym`) or, at a site
        in ``concrete``, one pass per iteration with integer indices, re-rolled at its end."""
        f = user_frame()
        site = (f.f_code.co_filename, f.f_lineno) if f is not None else None
        text = linecache.getline(*site) if site else ""
        m = re.match(r"\s*for\s+(\w+)\s+in\b", text)
        var = LoopVar(m.group(1) if m else "i", trips, kind, self.line(), site)
        if site is not None:
            self.sites.add(site)
        if site in self.concrete:
            return _ConcreteIter(self, var, start, step)
        return _LoopIter(self, var, start, step)

    def grid_var(self, axis: int, trips: int) -> LoopVar:
        v = LoopVar(f"pid{axis}", trips, "grid", 0, GRID_SITE + (axis,))
        self.grid.append(v)
        return v

    # -- tensors and buffers --------------------------------------------------------------
    def hbm(self, name: str, shape, dtype, *, line: int = 0, buffer: str = "hbm") -> HbmTensor:
        if self.pids is not None and self.running:
            # programs of a grid run one by one share what they allocate in HBM (shared_hbm)
            f = user_frame()
            key = (f.f_code.co_filename, f.f_lineno, name) if f is not None else (name,)
            if key in self.shared:
                return self.shared[key]
            t = self.shared[key] = self._hbm(name, shape, dtype, line, buffer)
            return t
        return self._hbm(name, shape, dtype, line, buffer)

    def _hbm(self, name, shape, dtype, line, buffer) -> HbmTensor:
        lg = Logical("hbm", self.unique(name), dtype_name(dtype), tuple(int(d) for d in shape), line)
        self.logicals.append(lg)
        return HbmTensor(self, lg, dtype, buffer)

    def alloc(self, shape, dtype, space: str, name: str | None = None) -> Tile:
        shape = tuple(shape)
        for d in shape:
            if isinstance(d, Sym) or isinstance(d, bool) or not isinstance(d, int) or d <= 0:
                raise TraceError(f"buffer shape {shape!r} must be positive integers")
        b = Buffer(self, name or self.assigned_name("buf"), shape, dtype_name(dtype, "fp32" if space == "psum" else "bf16"),
                   space, self.depth, self.line(), dtype)
        # the concrete iterations it was allocated in, and those that had ended when it was
        # read (a tile kept in a list and read by a later loop)
        b.homes = [f for f in self.stack if isinstance(f, IterFrame)]
        b.escaped = set()
        return Tile(b)

    # -- binding and resolving tiles ------------------------------------------------------
    def note(self, text: str) -> None:
        """Add ``text`` to the trace's notes once."""
        if text not in self.notes:
            self.notes.append(text)

    def resolve(self, t: Tile, what: str) -> tuple[TileRef | None, list]:
        """The logical tile a view holds (None: a constant) and, per kept axis of the view, the
        logical dimension it runs along (None: a broadcast axis)."""
        b = t.buf.binding
        if b is None:
            raise TraceError(f"{what} reads buffer {t.buf.name} before anything was written to it")
        try:
            b = pieces.lookup(t.buf, t.offsets, t.sizes) or b
        except pieces.PermutedPieces as e:
            from loopsim.frontends.nki import work

            self.note(f"{work.call_site(self)}: {e}: the buffer is read from here on as data "
                      "loopsim does not follow (ASSUMED: its bytes count where they were loaded; an "
                      "op reading it reads no tensor, a matmul's work is charged to the Tensor "
                      "Engine, not to W)")
            t.buf.binding = b = Binding(self._const(), ())
        homes = getattr(t.buf, "homes", None)
        if homes:
            live = {id(f) for f in self.stack}
            t.buf.escaped.update(id(f) for f in homes if id(f) not in live)
        starts, sizes, axis_of = [], [], [None] * len(t.offsets)
        for d, dm in enumerate(b.dims):
            s, n = dm.start, dm.size
            if dm.axes:
                n = 1
                for a, scale in dm.axes:
                    s = s + t.offsets[a] * scale
                    n += scale * (t.sizes[a] - 1)
                    if t.kept[a] and axis_of[a] is None:
                        axis_of[a] = d
            starts.append(s)
            sizes.append(n)
        kept_axes = [axis_of[a] for a in range(len(t.offsets)) if t.kept[a]]
        ref = TileRef(b.logical, tuple(starts), tuple(sizes))
        return ref, kept_axes

    def bind(self, dst: Tile, ref: TileRef, axis_of: list) -> set:
        """Make ``dst`` hold ``ref`` (whose kept axes run along ``axis_of``); returns the loop
        variables the buffer's coordinates absorb (a buffer filled by a loop)."""
        kept = [a for a in range(len(dst.offsets)) if dst.kept[a]]
        # an entry (d, scale): that axis steps ``scale`` elements of dimension d (a DMA walking a
        # tensor axis in pieces); a plain d steps one
        scale_of = [dd[1] if isinstance(dd, tuple) else 1 for dd in axis_of]
        axis_of = [dd[0] if isinstance(dd, tuple) else dd for dd in axis_of]
        if all(d is None for d in axis_of) and len(kept) != len(axis_of):
            # a value along no tensor axis (a per-row statistic, a one-element tile broadcast)
            # into a slot of another shape
            dst.buf.binding = Binding(ref.logical, tuple(DimMap(s, n, ()) for s, n in
                                                         zip(ref.starts, ref.sizes)))
            return set()
        if len(kept) != len(axis_of):
            # shapes equal but for axes of one element ([128, 1] into [128]): squeeze them
            keep = [i for i, d in enumerate(axis_of) if d is not None and ref.sizes[d] != 1]
            axis_of, scale_of = [axis_of[i] for i in keep], [scale_of[i] for i in keep]
            kept = [a for a in kept if dst.sizes[a] != 1]
            if len(kept) != len(axis_of):
                raise TraceError(f"shape mismatch: writing a {len(axis_of)}-D tile into {dst!r}")
        local = {r.var for r in self.stack[dst.buf.depth:]}
        absorbed: set = set()
        dims = []
        for d in range(len(ref.starts)):
            start = ref.starts[d]
            axes = [(kept[i], scale_of[i]) for i, dd in enumerate(axis_of) if dd == d]
            for a, sc in axes:
                start = start - dst.offsets[a] * sc
            for a in range(len(dst.offsets)):
                # a buffer axis indexed by loops inside the allocation: the tile it holds moves
                # with that index, by a whole number of elements per buffer coordinate
                mine = {u: k for u, k in dst.offsets[a].terms.items() if u in local}
                if not mine or any(a == x for x, _ in axes):
                    continue
                v, k = next(iter(mine.items()))
                c = start.terms.get(v, 0)
                if c == 0 or c % k or any(start.terms.get(u, 0) != c // k * ku for u, ku in mine.items()):
                    continue  # not this logical dimension (or the same place each iteration)
                axes.append((a, c // k))
                start = start - dst.offsets[a] * (c // k)
                absorbed.update(mine)
            dims.append(DimMap(start, ref.sizes[d], tuple(axes)))
        new = Binding(ref.logical, tuple(dims))
        if absorbed or dst.buf.origin is not None:
            dst.buf.binding = new
        else:  # one piece of a buffer the kernel may fill piece by piece
            dst.buf.binding = pieces.add(dst.buf, dst.offsets, dst.sizes, new)
        return absorbed

    def _moved(self, src: Tile, val: Logical, ref: TileRef, dref: TileRef) -> bool:
        """An engine op's value, read by nothing but the store that writes it out at another
        index than its input's (``out[128 * t ...] = x_gathered[512 * blk + 128 * t ...] * a``):
        its tile is placed at the store's index (a value's coordinates are its input's only by
        convention), so the op writes the output's tile and the store moves it. False where the
        op made more than the stored tile."""
        ev = getattr(val, "ev", None)
        if ev is None or ev.value is not val or tuple(ev.out.sizes) != tuple(ref.sizes):
            return False
        delta = [Sym.of(b) - a for a, b in zip(ref.starts, dref.starts)]
        ev.out = TileRef(val, tuple(Sym.of(a) + d for a, d in zip(ev.out.starts, delta)), ev.out.sizes)
        val.home = ev.out
        b = src.buf.binding
        if b is not None and b.logical.find() is val:
            src.buf.binding = Binding(b.logical, tuple(DimMap(dm.start + d, dm.size, dm.axes)
                                                      for dm, d in zip(b.dims, delta)))
        return True

    def check_scope(self, ref: TileRef, what: str) -> None:
        out = ref.vars() - self.in_scope()
        if out:
            v = next(iter(out))
            sites = {u.site for u in out if u.site is not None and u.kind != "grid"}
            if sites:  # a tile kept past its loop (a list of tiles): run that loop concretely
                raise NeedsConcrete(f"{what} reads a tile written in loop {v.name} after that "
                                    "loop ended", sites)
            raise TraceError(f"{what} reads a tile written in loop {v.name} after that loop ended "
                             "(the buffer holds one iteration's tile): not modelled")

    # -- statements ----------------------------------------------------------------------
    def dma(self, dst, src) -> None:
        line = self.line()
        if isinstance(src, HbmTensor):
            src = src.full()
        if isinstance(dst, HbmTensor):
            dst = dst.full()
        if isinstance(src, HbmView) and isinstance(dst, Tile):
            gathered = self._gathered(src) if src.indirect else None  # None: the static box
            lg = gathered.logical if gathered else src.tensor.logical
            lg.loaded = True
            ref = gathered or TileRef(lg, tuple(a for a, _, _ in src.dims), tuple(s for _, s, _ in src.dims))
            axis_of = getattr(src, "order", None) or [d for d, (_, _, k) in enumerate(src.dims) if k]
            if axis_of and isinstance(axis_of[0], tuple):  # axes walked in pieces
                if _squeezed(list(src.shape)) != _squeezed([s for s, k in zip(dst.sizes, dst.kept) if k]):
                    raise TraceError(f"load of {src.shape} from {lg.name} into {dst!r}: shapes differ")
            elif _squeezed([ref.sizes[d] for d in axis_of]) != _squeezed(
                    [s for s, k in zip(dst.sizes, dst.kept) if k]):
                if math.prod(src.shape) != math.prod(dst.shape) and (
                        math.prod(ref.sizes) * itemsize(lg.dtype) != math.prod(dst.shape) * itemsize(dst.dtype)):
                    raise TraceError(f"load of {src.shape} from {lg.name} into {dst!r}: shapes differ")
                # a load that reshapes (or reads bytes viewed as other elements) ([1024] into [128, 8]): its bytes are exact; the tile is
                # not followed element by element on chip (a broadcast operand, say)
                from loopsim.frontends.nki import work

                self.notes.append(f"{work.call_site(self)}: a load reshapes {lg.name}{list(src.shape)} "
                                  f"into {dst!r}; its bytes count, its elements are not followed on chip")
                ev = LoadEv(ref, (), line, dst.buf)
                self.body.append(ev)
                dst.buf.binding = Binding(self._const(), ())
                return ev
            absorbed = self.bind(dst, ref, axis_of)
            self._vote(dst, weak=True)
            order = [r.var for r in self.stack if isinstance(r, LoopRec)]
            if absorbed and set(order[len(order) - len(absorbed):]) != absorbed:
                raise TraceError(f"buffer {dst.buf.name} is filled by loops "
                                 f"{', '.join(sorted(v.name for v in absorbed))} that are not the "
                                 "innermost loops around the DMA: not modelled")
            # a gather (vector_offset=): one descriptor per index, so one transfer per row; a
            # scalar_offset= DMA is the box's transfer from a start address read at run time
            gather = gathered is not None and src.indirect[0] == "vector_offset"
            ev = LoadEv(ref, tuple(v for v in order if v in absorbed), line, dst.buf,
                        chunk=(1,) if gather else ())
            self.body.append(ev)
            return ev
        elif isinstance(src, Tile) and isinstance(dst, HbmView):
            self.store(dst, src, line)
        elif isinstance(src, Tile) and isinstance(dst, Tile):
            self.copy(dst, src)
        else:
            raise TraceError(f"a DMA from {src!r} to {dst!r} is not modelled (HBM <-> SBUF and "
                             "SBUF <-> SBUF are)")

    def _gathered(self, view: HbmView) -> TileRef | None:
        """The tile of an indirect access (``vector_offset=``/``scalar_offset=`` from data): the
        DMA moves the pattern's rows from addresses chosen at run time. Those rows are a tensor
        of their own, ``NAME_gathered`` (the tensor's shape, its indirect dimension holding a
        block of rows per index): an index tile read from a tensor of indices gives the rows of
        its elements, so two DMAs with the same indices read the same rows; any other index
        (a register, a computed tile) gives each execution fresh rows (one block per iteration of
        the loops around the DMA that its static pattern does not walk)."""
        from loopsim.frontends.nki import work

        how, d, index = view.indirect
        lg0 = view.tensor.logical
        if d is None:  # rows of no dimension of the tensor (a pattern on a reshaped handle)
            from loopsim.frontends.nki import work

            self.notes.append(f"{work.call_site(self)}: {how}= on a reshaped handle of {lg0.name}: "
                              "rows of no dimension of the tensor, counted as the pattern's box at "
                              "its static offset (ASSUMED: which rows, and so their reuse, is not "
                              "known)")
            return None
        n = view.dims[d][1]
        site = work.call_site(self)
        keyed = self._index_run(index, n)
        if keyed is not None:
            ilg, first, per, ops = keyed
            key = (id(lg0), d, id(ilg), per, ops)
            rows, linear = math.prod(ilg.shape) * per, first
            why = f"one block of {per:,} row{'s' * (per != 1)} per element of {ilg.name}"
        else:
            used = {v for k, (a, _, _) in enumerate(view.dims) if k != d for v in a.terms}
            held = self._index_held(index, view)
            frames = [(r.var, Sym.of(r.index) if isinstance(r, IterFrame) else Sym({r.var: 1}, 0))
                      for r in self.stack]
            if self.pids is None:
                frames = [(g, Sym({g: 1}, 0)) for g in self.grid] + frames
            frames = [(v, i) for v, i in frames if v not in used and v not in held]
            key = (site, id(lg0), d, tuple(v for v, _ in frames))
            execs, per = math.prod(v.trips for v, _ in frames), n
            rows, linear, inner = n * execs, Sym({}, 0), 1
            for v, i in reversed(frames):
                linear = linear + i * inner
                inner *= v.trips
            why = f"fresh rows per execution ({execs:,})"
        lg = self.gathers.get(key)
        if lg is None:
            shape = tuple(rows if k == d else s for k, s in enumerate(lg0.shape))
            lg = self.gathers[key] = Logical("hbm", self.unique(f"{lg0.name}_gathered"), lg0.dtype,
                                              shape, self.line())
            self.logicals.append(lg)
        dma = "one descriptor per row" if how == "vector_offset" else \
            "one DMA of the box from a start address read at run time"
        note = (f"{site}: {how}= reads {n:,} row{'s' * (n != 1)} of {lg0.name} (dimension {d}) "
                f"at addresses chosen at run time: counted as rows of {lg.name}{list(lg.shape)}, "
                f"{why}, every row a fresh HBM read, {dma} (ASSUMED: whether indices repeat is "
                "data)")
        self.note(note)
        starts = tuple(linear * per if k == d else a for k, (a, _, _) in enumerate(view.dims))
        return TileRef(lg, starts, tuple(s for _, s, _ in view.dims))

    def _index_held(self, index, view) -> set:
        """The loops run concretely around an indirect DMA whose iterations all see one value of
        its index tile: the tile was last written before the loop began (a block's row index
        set once, then ``for t in range(n): dma(src=x.ap(offset=128 * t, scalar_offset=blk))``
        reads n pieces of that one row, not n fresh rows). Only an index that is its whole
        buffer (a part, ``ids.ap(offset=t)``, may move with the loop). An iteration finding the
        tile written since the loop began, after an earlier one took it as unchanged, is
        refused."""
        if not isinstance(index, Tile) or index.view_shape is not None or any(
                Sym.of(o).terms or Sym.of(o).const for o in index.offsets) or \
                tuple(index.sizes) != index.buf.shape:
            return set()  # a part of its buffer: which part may move with the loop
        buf = index.buf
        while buf.origin is not None:
            buf = buf.origin
        held = set()
        for r in self.stack:
            it = getattr(r, "owner", None)
            if not isinstance(r, IterFrame) or it is None:
                continue
            if buf.stamp <= it.started:
                it.held.add(id(buf))
                held.add(r.var)
            elif id(buf) in it.held:
                raise TraceError(f"the index {index!r} of an indirect DMA of "
                                 f"{view.tensor.logical.name} is written inside loop {r.var.name} "
                                 "after an earlier iteration read it: not modelled")
        return held

    def _index_run(self, index, n: int):
        """(tensor of indices, flat position of the index in it, rows per index, the ops that
        made the index from it) where ``index`` is a tile holding one value of a tensor of
        indices (copied on chip, or computed from it by ops); else None."""
        if not isinstance(index, Tile) or index.buf.binding is None:
            return None
        try:
            ref, _ = self.resolve(index, "an indirect DMA's index")
        except TraceError:
            return None
        lg, ops = ref.logical.find(), ()
        if lg.kind == "op" and not lg.materialised:
            srcs = [s for s in _rebased(lg, ref, self.in_scope()) if s.logical.find().kind == "hbm"]
            if len(srcs) != 1:
                return None
            ops, ref, lg = lg.data_ops, srcs[0], srcs[0].logical.find()
        if lg.kind != "hbm" or lg.shape is None or math.prod(ref.sizes) != 1:
            # one index value only: where a tile of many indices lands on chip (transposed,
            # reshaped) is followed too loosely to name each row's index
            return None
        first = Sym({}, 0)
        for k, a in enumerate(ref.starts):
            first = first + a * math.prod(lg.shape[k + 1:])
        return lg, first, n, ops

    def store(self, dst: HbmView, src: Tile, line: int) -> None:
        if dst.indirect:  # a scatter: the bytes are known, which rows they land in is data
            from loopsim.frontends.nki import work

            note = (f"{work.call_site(self)}: {dst.indirect[0]}= writes rows of "
                    f"{dst.tensor.logical.name} at addresses chosen at run time: counted as the "
                    "pattern's box at its static offset (ASSUMED: which rows is data)")
            self.note(note)
        ref, axis_of = self.resolve(src, "store")
        lg = dst.tensor.logical
        dref = TileRef(lg, tuple(a for a, _, _ in dst.dims), tuple(s for _, s, _ in dst.dims))
        dkept = [d for d, (_, _, k) in enumerate(dst.dims) if k]
        order = getattr(dst, "order", None)
        # an access pattern walking a tensor axis in pieces ([[D, 128], [128 * D, 4], [1, D]]:
        # rows p + 128 t): the view's shape is the tile's; the store writes the box it covers
        pieces = bool(order) and isinstance(order[0], tuple)
        if (_squeezed(list(dst.shape)) if pieces else
                _squeezed([dref.sizes[d] for d in dkept])) != _squeezed(src.shape):
            if math.prod(dref.sizes) != math.prod(src.shape):
                raise TraceError(f"store of {src!r} into {lg.name}{list(dst.shape)}: shapes differ")
            # a store that reshapes (a [32, 128] tile into 64 rows of 64): its bytes are exact;
            # the tile is not followed element by element into the tensor
            from loopsim.frontends.nki import work

            self.notes.append(f"{work.call_site(self)}: a store reshapes {src!r} into "
                              f"{lg.name}{[dref.sizes[d] for d in dkept]}; its bytes count, its "
                              "elements are not followed")
            pieces = True
        lg.output = True
        st = ref.logical.find() if ref is not None else None
        if st is not None and st.kind == "op" and st.stat and not st.materialised:
            # a reduction written out (an average pool, a row sum): its engine work is charged
            # here, as no op statement will carry it; the store writes the output's tile
            from loopsim.frontends.nki import work

            ops = st.stat_ops + st.data_ops
            work.charge(self, f"{'+'.join(dict.fromkeys(ops))} (a reduction stored)", "vector",
                        math.prod(ref.sizes), max(1, len(ops)))
            ref = None
        fresh = None  # an engine op's value no op has read, made a tensor by this store
        if ref is not None and ref.logical.kind == "op" and not ref.logical.find().kind == "hbm":
            lg0 = ref.logical.find()
            fresh = lg0 if lg0.kind == "op" and not lg0.materialised and not lg0.read else None
            ref = self.materialise(ref, "store", into_store=True)
        if ref is not None:
            src_lg = ref.logical.find()
            if src_lg.kind in ("acc", "op", "sum") and src_lg is not lg and not pieces:
                aligned = len(ref.starts) == len(dref.starts) and all(
                    axis_of[i] == dkept[i] for i in range(len(dkept))) and all(
                    x == y for x, y in zip(ref.sizes, dref.sizes))
                same = aligned and all(a.same(b) for a, b in zip(ref.starts, dref.starts))
                if aligned and not same and src_lg is fresh and not dst.indirect and \
                        self._moved(src, src_lg, ref, dref):
                    same = True
                # stored at the index it was computed for: the accumulator is that tensor;
                # elsewhere (another layout or rank), it stays an on-chip tensor of its own and
                # the store writes the output's tile (the same bytes)
                if same:
                    src_lg.parent = lg
                    if src_lg.pa_weak is not None and lg.pa_weak is None:
                        lg.pa_weak = src_lg.pa_weak
                    if src_lg.pa_strong is not None:
                        lg.pa_strong = src_lg.pa_strong
        if lg.pa_weak is None and not pieces:
            kept = [a for a in range(len(src.offsets)) if src.kept[a]]
            if src.buf.pax in kept:
                lg.pa_weak = dkept[kept.index(src.buf.pax)]
        self.body.append(StoreEv(dref, line))

    def copy(self, dst: Tile, src: Tile, transpose: bool = False, engine_work: bool = True) -> None:
        """dst = src on chip; ``engine_work=False``: the movement is a DMA's, already charged (a
        DMA transpose landing its tile), so a permuting copy charges no engine."""
        parts = None if transpose else pieces.held(src.buf, src.offsets, src.sizes)
        if parts is not None and self._copy_pieces(dst, src, parts):
            return
        ref, axis_of = self.resolve(src, "copy")
        if transpose:
            axis_of = axis_of[::-1]
        kept = sum(1 for k in dst.kept if k)
        if ref is not None and _squeezed(src.shape) != _squeezed(dst.shape) and \
                math.prod(src.shape) == math.prod(dst.shape) and \
                sum(1 for d in axis_of if d is not None) != kept:
            # a copy that permutes elements through index patterns (an SBUF-to-SBUF transpose):
            # on-chip movement only; the copy's work is charged and dst holds a fresh tile
            from loopsim.frontends.nki import work

            if engine_work:
                work.charge(self, "copy (a reshaping access pattern)", "vector", math.prod(dst.shape), 1)
            c = self._const()
            c.data = True  # data still: a matmul reading it does the kernel's FLOPs
            dst.buf.binding = Binding(c, ())
            self.notes.append(f"{work.call_site(self)}: a copy into {dst!r} permutes its elements "
                              "through access patterns; loopsim keeps the data movement, not which "
                              "element lands where")
            return
        self._bind_value(dst, ref, axis_of, src)

    def _copy_pieces(self, dst: Tile, src: Tile, parts: list) -> bool:
        """A copy of a region holding several pieces (transposed tiles side by side in PSUM,
        copied to SBUF at once): piece by piece, each landing at its place in ``dst``."""
        sk = [a for a, k in enumerate(src.kept) if k]
        dk = [b for b, k in enumerate(dst.kept) if k]
        if len(sk) != len(dk) or any(src.sizes[a] != dst.sizes[b] for a, b in zip(sk, dk)):
            return False
        for p in parts:
            offs, sizes = list(dst.offsets), list(dst.sizes)
            for a, b in zip(sk, dk):
                offs[b] = dst.offsets[b] + (p.offsets[a] - src.offsets[a])
                sizes[b] = p.sizes[a]
            self.copy(Tile(dst.buf, offs, sizes, list(dst.kept)),
                      Tile(src.buf, list(p.offsets), list(p.sizes), list(src.kept)))
        return True

    def _bind_value(self, dst: Tile, ref: TileRef | None, axis_of, src: Tile | None = None) -> None:
        if ref is None:
            held = src.buf.binding.logical.find() if src is not None and src.buf.binding else None
            c = self._const()
            c.data = bool(held is not None and held.kind == "const" and held.data)
            dst.buf.binding = Binding(c, ())
            return
        self.bind(dst, ref, axis_of)
        self._vote(dst, weak=True)

    def _const(self) -> Logical:
        return Logical("const", "const", "fp32")

    def memset(self, dst: Tile) -> None:
        dst.buf.binding = Binding(self._const(), ())

    def _vote(self, t: Tile, weak: bool) -> None:
        b = t.buf.binding
        lg = b.logical.find()
        for d, dm in enumerate(b.dims):
            if any(a == t.buf.pax and s == 1 for a, s in dm.axes) and lg.pa_weak is None:
                lg.pa_weak = d

    def matmul(self, dst: Tile, stationary: Tile, moving: Tile, *, transpose_x: bool = False) -> None:
        line = self.line()
        for t in (stationary, moving):
            b = t.buf.binding
            if b is not None and t.buf.space == "sbuf" and b.logical.find().kind == "acc":
                # another matmul's result, copied out of PSUM and read as an operand (chained
                # matmuls, A @ B then (A @ B) @ C): the copy is the op that makes the operand
                self.op("copy", "vector", t, [t])
        sref, s_axes = self.resolve(stationary, "matmul stationary operand")
        mref, m_axes = self.resolve(moving, "matmul moving operand")
        if transpose_x:
            s_axes = s_axes[::-1]
        const = [t for t, r, ax in ((stationary, sref, s_axes), (moving, mref, m_axes))
                 if r is None or r.logical.find().kind == "const" or None in ax]
        if any(r is not None and (r.logical.find().data or (
                r.logical.find().kind in ("hbm", "op", "acc") and None in ax and
                all(n > 1 for n in t.shape)))
               for t, r, ax in ((stationary, sref, s_axes), (moving, mref, m_axes))):
            # data whose placement is not followed (a permuting copy; axes of a data tile loopsim
            # cannot map): the Tensor Engine still does the kernel's FLOPs
            return self._window_matmul(dst, stationary, moving, None)
        if const:
            return self._broadcast_matmul(dst, stationary, moving, const)
        if len(s_axes) != 2 or len(m_axes) != 2:
            raise TraceError("matmul operands must be 2-D tiles of tensors")
        if s_axes[0] == s_axes[1] or m_axes[0] == m_axes[1]:
            return self._window_matmul(dst, stationary, moving, s_axes[0] == s_axes[1])
        sref = self.materialise(sref, "matmul")
        mref = self.materialise(mref, "matmul")
        self.check_scope(sref, "matmul")
        self.check_scope(mref, "matmul")
        ks, md = s_axes
        km, nd = m_axes
        if sref.sizes[ks] != mref.sizes[km]:
            raise TraceError(f"matmul contraction sizes differ: {sref.sizes[ks]} vs {mref.sizes[km]}")
        sref.logical.find().pa_strong = ks
        mref.logical.find().pa_strong = km
        starts = (sref.starts[md], mref.starts[nd])
        sizes = (sref.sizes[md], mref.sizes[nd])
        out_lg = None
        if dst.buf.binding is not None:
            cur, cur_axes = self.resolve(dst, "matmul output")
            if cur is not None and cur.logical.find().kind == "acc" and cur_axes == [0, 1] and all(
                    a.same(b) for a, b in zip(cur.starts, starts)) and tuple(cur.sizes) == sizes:
                out_lg = cur.logical.find()
        if out_lg is None:
            # the accumulator has the dtype the kernel gives its buffer (PSUM: fp32)
            dt = dst.buf.dtype if dst.buf.space == "psum" else sref.logical.find().dtype
            out_lg = Logical("acc", self.unique(dst.buf.name), dt, line=line)
            self.logicals.append(out_lg)
            self.bind(dst, TileRef(out_lg, starts, sizes), [0, 1])
        out = TileRef(out_lg, starts, sizes)
        from loopsim.frontends.nki.work import call_site

        ev = MatmulEv(out, sref, mref, line, (md, nd), call_site(self))
        self.body.append(ev)
        return ev

    def _window_matmul(self, dst: Tile, stationary: Tile, moving: Tile, in_stationary: bool | None) -> None:
        """A matmul with an operand whose two axes walk one tensor axis (an im2col tile: element
        (s, q) of x[s + q], a sliding window; ``in_stationary`` None: an operand whose elements a
        permuting copy placed, order not followed): no einsum indexes it, so its work is charged
        from the instruction's shapes, M x N outputs of K multiply-adds (2*K*M*N FLOPs of W,
        ASSUMED in that the operands' reuse is not followed); the operands' loads stay in the
        nest (their bytes exact); the result is made from both operands."""
        from loopsim.frontends.nki import work

        k = stationary.shape[0] if stationary.shape else 1
        m = stationary.shape[1] if len(stationary.shape) > 1 else 1
        n = moving.shape[1] if len(moving.shape) > 1 else 1
        w = work.charge_matmul(work.call_site(self), m, n, k, work.executions(self))
        self.work = list(getattr(self, "work", ())) + [w]
        if in_stationary is None:
            note = (f"{w.where}: an operand of nc_matmul holds data whose element order loopsim "
                    "does not follow (copied through a permuting access pattern): kept as Tensor "
                    "Engine work outside the nest")
        else:
            note = (f"{w.where}: the {'stationary' if in_stationary else 'moving'} operand of "
                    "nc_matmul is a sliding window (its two axes walk one axis of its tensor): "
                    "kept as Tensor Engine work outside the nest")
        self.note(note)
        self.op("copy", "tensor", dst, [stationary, moving], reduce=True)
        return None

    def _broadcast_matmul(self, dst: Tile, stationary: Tile, moving: Tile, const: list) -> None:
        """A matmul with a constant operand (a ones or identity tile: a broadcast or a
        transpose on the Tensor Engine): its work is charged exactly (M x N outputs, K
        multiply-adds each) and its result is the other operand's value, broadcast."""
        from loopsim.frontends.nki import work

        k = stationary.shape[0] if stationary.shape else 1
        m = stationary.shape[1] if len(stationary.shape) > 1 else 1
        n = moving.shape[1] if len(moving.shape) > 1 else 1
        work.charge(self, "nc_matmul (constant operand)", "tensor", m * n, k)
        data = [t for t in (stationary, moving) if all(t is not c for c in const)]
        if not data:
            self.memset(dst)
            return None
        self.op("copy", "tensor", dst, data, reduce=True)
        return None

    def iadd(self, dst: Tile, other):
        """``acc += nl.matmul(...)`` (or ``+=`` of another tile): accumulate into ``dst``."""
        if isinstance(other, Tile) and other.buf.fresh_matmul is not None:
            ev = other.buf.fresh_matmul
            other.buf.fresh_matmul = None
            if dst.buf.binding is not None:
                cur, _ = self.resolve(dst, "accumulation")
                if cur is not None and cur.logical.find().kind == "acc" and cur.logical.find() is not ev.out.logical:
                    ev.out.logical.parent = cur.logical.find()
                    return dst
            self.bind(dst, ev.out, [0, 1])
            return dst
        self.op("add", "vector", dst, [dst, other])
        return dst

    def assign(self, dst: Tile, value) -> None:
        if isinstance(value, Tile):
            if value.buf is dst.buf:
                return
            fresh = value.buf.fresh_load
            if fresh is not None and self.body and self.body[-1] is fresh[0]:
                self.body.pop()  # t[...] = nl.load(src): the DMA writes the slot directly
                self.dma(dst, fresh[1])
                return
            fresh = value.buf.fresh_op
            if fresh is not None and (not self.body or not isinstance(self.body[-1], LoopRec)):
                if self.body and isinstance(self.body[-1], OpEv) and self.body[-1].value is \
                        value.buf.binding.logical:
                    self.body.pop()  # t[...] = nl.add(t[...], ps): the op writes the slot
                self.op(fresh[0], "vector", dst, fresh[1])
                return
            self.copy(dst, value)
        elif isinstance(value, (int, float)):
            self.memset(dst)
        else:
            raise TraceError(f"assigning {value!r} to a tile is not modelled")

    # -- engine ops ----------------------------------------------------------------------
    def elementwise(self, name: str, args: list, dtype=None) -> Tile:
        tiles = [a for a in args if isinstance(a, Tile)]
        if not tiles:
            raise TraceError(f"{name} of no tile")
        shape = max((t.shape for t in tiles), key=math.prod)
        out = self.alloc(shape, dtype or tiles[0].dtype, "sbuf", self.assigned_name(name))
        self.op(name, "vector", out, args)
        out.buf.fresh_op = (name, list(args))
        out.buf.compared = name in _COMPARISONS  # its truth is a data-dependent branch
        return out

    def op(self, name: str, engine: str, dst: Tile, inputs: list, *, reduce: bool = False) -> None:
        """An engine op writing ``dst`` from ``inputs`` (tiles or Python scalars).

        Data inputs (tiles of tensors, or values derived from them) give the result's sources;
        statistics (reductions, and values made only from statistics) and constants contribute
        only the ops they record. ``tensor_tensor(acc, acc, psum, add)`` into a zeroed SBUF tile
        is an SBUF accumulation of the matmul's PSUM tile (:class:`AccumulateEv`)."""
        line = self.line()
        sources: list[TileRef] = []
        data_ops: list[str] = []
        stat_ops: list[str] = []
        running = False
        elem_ops = math.prod(dst.sizes)  # this instruction's: one per element it writes
        first = first_stat = None
        cands: list = []  # (ref, axes) of each data input, in order
        finished: list = []  # tiles of loops that have ended (read as reductions over them)
        in_place = None  # the content of dst's own region read by the op
        permuted = False  # an input is data whose element order is not followed
        for x in inputs:
            if not isinstance(x, Tile):
                if isinstance(x, (Sym, IndexTile, Cond)):
                    raise TraceError(f"{name} of a loop index is not modelled")
                continue
            ref, axes = self.resolve(x, name)
            if getattr(x, "grid", None) and len(axes) != sum(1 for k in dst.kept if k):
                # an index-tile view (a window, a stride) of another rank: its axes walk the
                # tensor by their own steps
                axes = x.grid_axes(x.buf.binding) or axes
            else:
                axes = _scaled(x, axes)
            lg = ref.logical.find()
            if lg.kind == "op" and not lg.materialised and _drained(lg, x, self.in_scope()):
                ref = self.materialise(ref, name)
                lg = ref.logical.find()
            if x.buf is dst.buf:
                in_place = lg
                if lg.kind == "sum" and name == "add" and not reduce:
                    continue  # sum += tile, again (a K-block loop traced concretely)
            carried = x.buf.depth < self.depth
            if lg.kind == "const":
                data_ops += lg.data_ops
                elem_ops += lg.elem_ops
                running = running or carried
                permuted = permuted or lg.data
                continue
            if lg.kind == "op" and not lg.materialised:
                elem_ops += lg.elem_ops
                lg.read = True
                if lg.stat:
                    stat_ops += lg.data_ops + lg.stat_ops
                    running = running or carried or lg.running
                    first_stat = first_stat or ref
                    continue
                running = running or lg.running
                data_ops += lg.data_ops
                stat_ops += lg.stat_ops
                for s in self._made_from(lg, ref, name):
                    if not any(same_tile(s, q) for q in sources):
                        sources.append(s)
                first = first or (ref, axes)
                cands.append((ref, axes))
                continue
            if ref.vars() - self.in_scope():
                finished.append(ref)
                continue  # a tile of a finished loop: a reduction over that loop
            if not any(same_tile(ref, q) for q in sources):
                sources.append(TileRef(lg, ref.starts, ref.sizes))
            first = first or (ref, axes)
            cands.append((ref, axes))
        if (name == "add" and not reduce and not data_ops and not stat_ops and len(sources) == 1
                and sources[0].logical.find().kind == "acc" and dst.buf.space == "sbuf"
                and in_place is not None and in_place.kind in ("const", "sum")):
            self._accumulate(dst, sources[0], first[1], in_place, line)
            return
        f = user_frame()  # the instruction (its call site in the user's code, its op) and the
        # iterations of loops traced concretely it runs in
        site = (f.f_code.co_filename, f.f_lineno, name) if f is not None else None
        iters = tuple(x for x in self.stack if isinstance(x, IterFrame))
        held = dst.buf.binding.logical.find() if dst.buf.binding is not None else None
        if (in_place is None and held is not None and held.kind == "op" and not held.materialised
                and not held.stat and not held.read and first is not None
                and list(dst.sizes) != list(dst.buf.shape)
                and not (site is not None and held.site == site and held.iters != iters)):
            # a write into part of a buffer that holds another part's value no op has read yet
            # (RoPE's two halves x_out[:h] and x_out[h:]): the buffer's content is made by both.
            # Not where the same instruction made that part in an earlier iteration (a loop
            # writing the buffer piece by piece, inter[i][:, 512*b ...]): each piece is its
            # iteration's value, and the pieces are one tensor once the loop re-rolls
            data_ops, stat_ops = list(held.data_ops) + data_ops, list(held.stat_ops) + stat_ops
            elem_ops += held.elem_ops
            sources += [q for q in held.sources if not any(same_tile(q, r) for r in sources)]
        (stat_ops if reduce else data_ops).append(name)
        if first is None and first_stat is None:
            c = self._const()
            c.data_ops, c.elem_ops = tuple(data_ops), elem_ops
            c.data = permuted
            dst.buf.binding = Binding(c, ())
            return
        val = Logical("op", dst.buf.name, dst.buf.dtype, line=line)
        val.site, val.iters = site, iters
        val.sources, val.data_ops, val.stat_ops = tuple(sources), tuple(data_ops), tuple(stat_ops)
        val.running, val.stat = running, reduce or first is None
        val.elem_ops = elem_ops
        if val.stat:
            base = first[0] if first is not None else first_stat
            dst.buf.binding = Binding(val, tuple(DimMap(s, n, ()) for s, n in zip(base.starts, base.sizes)))
            return
        def fits(c) -> bool:
            return len([k for k in dst.kept if k]) == len(c[1]) or _same_but_unit(dst, *c)

        # the first data input whose axes match the output's (a broadcast operand of another
        # rank, [T, 1] beside [T, 1, H], is not the one the output follows)
        fref, faxes = next((c for c in cands if fits(c)), first)
        ref = TileRef(val, fref.starts, fref.sizes)
        val.home = ref  # where the value was made: its sources are at these loop indices
        if fits((fref, faxes)):
            self.bind(dst, ref, faxes)
        else:
            for f in finished:  # not a reduction: a tile kept past its loop; run that loop concretely
                sites = {u.site for u in f.vars() - self.in_scope() if u.site is not None and u.kind != "grid"}
                if sites:
                    raise NeedsConcrete(f"{name} reads a tile written in a loop after it ended", sites)
            # NKI operands are access patterns walked element by element: an output of another
            # rank than every input ([1, 4, 4] from [1, 16]) holds the input's tile whole
            from loopsim.frontends.nki import work

            note = (f"{work.call_site(self)}: {name}: output {dst!r} has another rank than its inputs "
                    f"({', '.join(str(list(c[0].sizes)) for c in cands)}): it is read as holding "
                    f"the tile of {fref.logical.find().name} whole (ASSUMED: the same elements, "
                    "their order not followed)")
            self.note(note)
            dst.buf.binding = Binding(val, tuple(DimMap(s, n, ()) for s, n in zip(ref.starts, ref.sizes)))
        val.ev = OpEv(val, ref, line)
        self.body.append(val.ev)

    def _made_from(self, lg: Logical, ref: TileRef, name: str) -> tuple:
        """The sources of derived value ``lg`` read at ``ref``, every one a tile of the loops
        open here (:func:`_rebased`). A value made in a symbolic loop that has ended (its buffer
        holds one iteration's value) asks for that loop to run concretely; where that does not
        help, the read is refused, never its sources dropped."""
        scope = self.in_scope()
        srcs = _rebased(lg, ref, scope)
        out = {v for s in srcs for v in s.vars() - scope}
        if not out:
            return srcs
        sites = {v.site for v in out if v.site is not None and v.kind != "grid"}
        if sites - self.concrete:
            raise NeedsConcrete(f"{name} reads a value made in a loop after it ended", sites - self.concrete)
        v = min(out, key=lambda u: u.name)
        raise TraceError(f"{name} reads {lg.find().name}, a value made from tiles of loop {v.name} "
                         "after that loop ended: which iteration's tiles it holds is not followed")

    def _accumulate(self, dst: Tile, src: TileRef, axes, current: Logical, line: int) -> None:
        out = current if current.kind == "sum" else None
        if out is None:
            out = Logical("sum", self.unique(dst.buf.name), dst.buf.dtype, line=line)
            self.logicals.append(out)
        ref = TileRef(out, src.starts, src.sizes)
        self.bind(dst, ref, axes)
        self._vote(dst, weak=True)
        self.body.append(AccumulateEv(ref, src, line))

    def materialise(self, ref: TileRef, by: str, into_store: bool = False) -> TileRef:
        """A derived value read by a matmul or a store becomes a tensor of its own (one op), or,
        stored, an epilogue of the one accumulator it scales."""
        lg = ref.logical.find()
        if lg.kind != "op" or lg.materialised:
            return TileRef(lg, ref.starts, ref.sizes)
        if lg.stat:
            raise TraceError(f"{by} of a per-row statistic ({', '.join(lg.stat_ops)}) is not modelled")
        accs = {id(s.logical.find()) for s in lg.sources if s.logical.find().kind == "acc"}
        if into_store and len(lg.sources) == 1 and accs and set(lg.data_ops) <= ARITH:
            acc = lg.sources[0].logical.find()
            lg.parent = acc
            return TileRef(acc, ref.starts, ref.sizes)
        if set(lg.data_ops) <= {"copy"} and len(lg.sources) == 1 and not (
                by == "matmul" and lg.sources[0].logical.find().kind == "acc"):
            src = lg.sources[0].logical.find()
            lg.parent = src
            return TileRef(src, ref.starts, ref.sizes)
        lg.materialised = True
        lg.kind = "op"
        lg.name = self.unique(lg.name)
        self.logicals.append(lg)
        return TileRef(lg, ref.starts, ref.sizes)


def _drained(lg: Logical, x, scope: set) -> bool:
    """Whether a derived value read from an SBUF buffer was made from a matmul's PSUM tile in a
    loop that has ended: the op that made it drained PSUM there (one instruction, its result in
    SBUF), so it is a tensor of its own and the accumulator's tile is free after that op (a
    software pipeline's stage evacuating ``qk`` before a later loop's ``exp`` reads it). A value
    that also takes a row statistic (``qk - max(qk)``) stays in its consumer's chain (the online
    softmax): the statistic's own loop read every tile of the accumulator before it."""
    home = getattr(lg, "home", None)
    return (not lg.stat and not lg.stat_ops and x.buf.space == "sbuf" and home is not None
            and bool(home.vars() - scope) and any(s.logical.find().kind == "acc" for s in lg.sources))


def _rebased(lg: Logical, ref: TileRef, scope: set) -> tuple:
    """The sources of a derived value read at ``ref``: a value made in a loop that has ended
    (its tiles at that loop's index, ``lg.rolled`` where a concrete loop re-rolled, else where
    it was made) and read at a tile of the loops open here has its sources at the index the
    read names (``norm[:, i]`` made in one ``for i`` and read in the next; ``inter[k]`` made by
    iteration k of a loop run concretely, read by a later loop)."""
    home = getattr(lg, "rolled", None) or getattr(lg, "home", None)
    if home is None or len(home.starts) != len(ref.starts):
        return lg.sources
    sub: dict = {}
    for _ in range(2):  # a dimension two ended loops index: one solved by another dimension
        for a, b in zip(home.starts, ref.starts):
            a = _subst_all(a, sub)
            outs = [u for u in a.terms if u not in scope]
            if len(outs) != 1:
                continue
            u = outs[0]
            c = a.terms[u]
            rest = Sym.of(b) - a.without({u})
            if c <= 0 or rest.const % c or any(x % c for x in rest.terms.values()):
                continue
            e = Sym({w: x // c for w, x in rest.terms.items()}, rest.const // c)
            lo, hi = pieces.span(e)
            if 0 <= lo and hi < u.trips:
                sub[u] = e
    if not sub:
        return lg.sources
    return tuple(TileRef(s.logical, tuple(_subst_all(x, sub) for x in s.starts), s.sizes)
                 for s in lg.sources)


def _subst_all(x: Sym, sub: dict) -> Sym:
    """``x`` with each loop variable of ``sub`` replaced by its expression."""
    x = Sym.of(x)
    for v, e in sub.items():
        c = x.terms.get(v, 0)
        if c:
            x = x.without({v}) + e * c
    return x


_COMPARISONS = {"less", "less_equal", "greater", "greater_equal", "equal", "not_equal"}


def _scaled(t: Tile, axis_of: list) -> list:
    """``axis_of`` (the logical dimension of each kept axis of ``t``) with ``(d, scale)`` where
    the axis steps ``scale`` elements of d (a tile whose axes walk one dimension in pieces,
    [128 rows, 4 blocks of 128 rows] of a [512, ...] tensor): the scales an output bound from
    it keeps."""
    b = t.buf.binding
    kept = [a for a in range(len(t.offsets)) if t.kept[a]]
    if b is None or len(kept) != len(axis_of):
        return axis_of
    out = []
    for a, d in zip(kept, axis_of):
        sc = next((s for ax, s in b.dims[d].axes if ax == a), 1) if isinstance(d, int) else 1
        out.append(d if sc == 1 else (d, sc))
    return out


def _same_but_unit(dst: Tile, ref: TileRef, axis_of: list) -> bool:
    """Whether an op's output tile and its input (``ref`` read along ``axis_of``) have the same
    shape once their axes of one element are dropped (``dst[128, 1]`` from ``src[0:128, j]``, an
    integer index dropping the column): :meth:`Recorder.bind` squeezes those axes."""
    dims = [d[0] if isinstance(d, tuple) else d for d in axis_of]
    src = [ref.sizes[d] for d in dims if d is not None and ref.sizes[d] != 1]
    return src == [n for n, k in zip(dst.sizes, dst.kept) if k and n != 1]


def _squeezed(shape) -> list:
    """A shape without its axes of one element: [128, 1, 8] and [128, 8] hold the same tile."""
    return [n for n in shape if n != 1]


class IterFrame:
    """One iteration of a loop traced concretely: what it recorded, until the loop re-rolls."""

    __slots__ = ("var", "body", "index", "owner")

    def __init__(self, var: LoopVar, index: int, owner=None):
        self.var, self.index, self.body, self.owner = var, index, [], owner


def _close_above(rec: Recorder, frame) -> None:
    """Close every loop left open above ``frame`` on the stack (a ``return`` or ``break`` out of
    a loop traced concretely): each one's recorded iterations, the last one partial, re-roll
    where they can. A symbolic loop left so cannot know its trip count: it must run concretely."""
    from loopsim.frontends.nki.reroll import reroll

    while rec.stack and rec.stack[-1] is not frame:
        top = rec.stack.pop()
        if isinstance(top, IterFrame) and top.owner is not None:
            it = top.owner
            it.i = it.var.trips  # finished: a later next() stops
            rec.body.extend(reroll(it.var, it.bodies + [top.body], rec.notes))
        else:
            raise NeedsConcrete(f"loop {top.var.name} was left early (break or return)",
                                {top.var.site} if top.var.site else set())


class _ConcreteIter:
    """Yields the loop's integer indices, one recorded iteration each; at the end the
    iterations are re-rolled into one loop where their tiles move affinely
    (:func:`loopsim.frontends.nki.reroll.reroll`). Left early (``break``/``return``: the
    iterator is dropped unfinished), the iterations recorded so far stand for the loop."""

    def __init__(self, rec: Recorder, var: LoopVar, start: int, step: int):
        self.rec, self.var, self.start, self.step = rec, var, start, step
        self.i = -1
        self.bodies: list[list] = []
        self.frame = None
        self.started = rec.writes  # writes before the loop began (Buffer.stamp above it: since)
        self.held: set = set()  # ids of index buffers taken as unchanged by its iterations

    def __iter__(self):
        return self

    def __next__(self):
        from loopsim.frontends.nki.reroll import reroll

        rec = self.rec
        if self.i >= self.var.trips:
            raise StopIteration
        if self.i >= 0:
            if self.frame not in rec.stack:
                raise TraceError(f"loop {self.var.name} was left early (break, or an inner loop "
                                 "not run to its end): not modelled")
            _close_above(rec, self.frame)
            rec.stack.pop()
            self.bodies.append(self.frame.body)
        self.i += 1
        if self.i == self.var.trips:
            self.frame = None
            rec.body.extend(reroll(self.var, self.bodies, rec.notes))
            raise StopIteration
        self.frame = IterFrame(self.var, self.i, self)
        rec.stack.append(self.frame)
        return self.start + self.step * self.i

    def __del__(self):
        rec, f = self.rec, self.frame
        if f is not None and self.i < self.var.trips and rec.running and rec.stack and \
                any(x is f for x in rec.stack):
            try:
                _close_above(rec, f)
                rec.stack.pop()
                self.i = self.var.trips
                self.frame = None
                rec.body.extend(_reroll()(self.var, self.bodies + [f.body], rec.notes))
            except NeedsConcrete as e:
                rec.pending = e


def _reroll():
    from loopsim.frontends.nki.reroll import reroll

    return reroll


class _LoopIter:
    """Yields the loop's symbolic index once; the second ``next`` closes the loop's record.
    Left early (``break``/``return``), it asks for the loop to run concretely."""

    def __init__(self, rec: Recorder, var: LoopVar, start: int, step: int):
        self.rec, self.var, self.start, self.step, self.state = rec, var, start, step, 0
        self.node = None

    def __iter__(self):
        return self

    def __next__(self):
        rec = self.rec
        if self.state == 0:
            self.state = 1
            node = self.node = LoopRec(self.var)
            rec.body.append(node)
            rec.stack.append(node)
            return Sym({self.var: self.step}, self.start)
        if self.state == 1:
            if not any(x is self.node for x in rec.stack):
                raise TraceError(f"loop {self.var.name} was left early (break, or an inner loop "
                                 "not run to its end): not modelled")
            _close_above(rec, self.node)
            rec.stack.pop()
            self.state = 2
        raise StopIteration

    def __del__(self):
        if self.state == 1 and self.rec.running and self.var.site is not None:
            self.rec.pending = NeedsConcrete(f"loop {self.var.name} was left early (break or "
                                             "return)", {self.var.site})
