"""The timeline's compiled walk, prepared: a run of the nest (:class:`timeline._Run`) turned into
arrays once per statement (loop iterations, each access's affine region per axis, buffer slots,
queues, the durations it will need from the sheet), expanded and scheduled in one compiled pass
(:mod:`loopsim.targets.neuron._walk_kernel`, numba), and read back into the run's Scheduler, with
the same schedule as the Python walk. Python work grows with the statements and the distinct tile
extents, not the instructions. numba is imported only here, only when a run asks for it.

Units: seconds, elements, bytes."""

from __future__ import annotations

import itertools
import math

import numpy as np

from loopsim.count.counts import buffers_of
from loopsim.ir.kernel import Accumulate, Load, Loop, Matmul, Store
from loopsim.ir.ops import get as op_kind

#: runs larger than this many distinct extents per access, or with more PSUM banks than a bit
#: mask holds, stay in Python
_ENUM = 4096
_MAX_BANKS = 62


class Unsupported(Exception):
    """The run has something the compiled walk does not model: the Python walk runs it."""


def run_compiled(run, geometry) -> bool:
    """Walk and schedule ``run`` (a fresh :class:`timeline._Run`) compiled, filling its Scheduler and
    tallies as its Python walk would; False (the run untouched) where the compiled walk does not
    apply. ``geometry(access, loops, tensor)``: the per-axis (terms, offset, extent, size)."""
    try:
        prep = _Prep(run, geometry)
    except Unsupported:
        return False
    from loopsim.targets.neuron import _walk_kernel as wk

    caps = [max(1024, 2 * prep.size + 1024), 1 << 12, max(1024, prep.size + 1024), 4096]
    while caps[1] < min(2 * caps[0], 1 << 16):
        caps[1] <<= 1
    for _ in range(8):
        out = wk.walk(*prep.args(caps))
        status = out[0]
        if status == wk.OK:
            prep.read_back(out)
            return True
        if status == wk.MISS:
            prep.fill(out[19])
            continue
        caps = [2 * c for c in caps]  # FULL: an array too small
    return False


class _Prep:
    def __init__(self, run, geometry):
        self.run = run
        k = run.k
        self.geometry = geometry
        c = run.c
        if c.psum_banks > _MAX_BANKS:
            raise Unsupported("banks")
        self.names: list[str] = []
        self.name_kind: list[str] = []
        self.kinds: list[str] = []
        self.tensors = {t.name: n for n, t in enumerate(k.tensors)}
        for t in k.tensors:
            if type(t.elem_bytes) is not int:
                raise Unsupported("elem_bytes")
        self.tn = np.array([(len(t.shape), t.partition_axis, t.elem_bytes) for t in k.tensors],
                           np.int64).reshape(-1, 3)
        self.R = max(1, max((len(t.shape) for t in k.tensors), default=1))
        self.vars: dict[str, int] = {}
        self.vals: dict[str, set] = {}
        self.ncores = 1
        # accesses
        self.ac_t, self.ax_ptr, self.tm_ptr = [], [0], [0]
        self.ax_off, self.ax_ext, self.ax_dim, self.t_var, self.t_coef = [], [], [], [], []
        self.geoms: list = []
        # the nest, breadth by body: each body's nodes contiguous
        self.nest: list[list[int]] = []
        self.its: list[tuple[int, int]] = []
        self._loops_seen(k.body)
        root = self._body(k.body)
        self.root = np.array(root, np.int64)
        # statements by label
        stmts = k.statements()
        self.nst = len(stmts)
        self.st = np.zeros((self.nst, 16), np.int64)
        self.st_chunk = np.zeros((self.nst, self.R), np.int64)
        self.st_acc: list[int] = []
        self.work: list[tuple[int, int, int, int]] = []
        self.batch: list[int] = []
        self.eng_tabs: dict[tuple, int] = {}  # (engine, passes, type, dtype) -> table id
        self.eng_key: list[tuple] = []
        self.stmt_of: dict[int, object] = {}
        base = 0
        for lb, (s, loops) in enumerate(stmts):
            base = self._statement(lb, s, loops, base)
        ev = run._evac_engine()
        self.evac_q = self._name(ev or "vector", ev or "vector")
        self.evac_tab = self._tab(ev, 1, "fp32") if ev else -1
        self.nslots = base
        self.acc_slots = self.ncores * sum(self._executions(loops) for s, loops in stmts
                                           if isinstance(s, Accumulate))
        self.size = sum(self._executions(loops) * (int(self.st[lb, 6]) + 1 + (int(self.st[lb, 8] - self.st[lb, 7])))
                        for lb, (s, loops) in enumerate(stmts))
        self.dma: dict[int, dict[tuple[int, int], float]] = {lb: {} for lb in range(self.nst)}
        self.eng: list[dict[int, float]] = [{} for _ in self.eng_key]
        self._enumerate(stmts)

    # -- the nest ----------------------------------------------------------------------------
    def _loops_seen(self, body):
        for n in body:
            if isinstance(n, Loop):
                self.vars.setdefault(n.var, len(self.vars))
                self._loops_seen(n.body)

    def _iterations(self, node):
        n = node.trips
        kept = self.run.keep.get(id(node), n)
        return range(n) if kept >= n else list(range(kept - 1)) + [n - 1]

    def _executions(self, loops) -> int:
        return math.prod(len(self._iterations(l)) for l in loops)

    def _body(self, body) -> tuple[int, int]:
        """Nodes of ``body`` (the walk's: loops and the statements it models) as rows of the nest,
        contiguous; returns their (lo, hi)."""
        nodes = [n for n in body if isinstance(n, Loop) or self._kind(n) is not None]
        lo = len(self.nest)
        for n in nodes:
            self.nest.append([0] * 7)
        for r, n in zip(range(lo, lo + len(nodes)), nodes):
            if isinstance(n, Loop):
                its = self._iterations(n)
                i0 = len(self.its)
                self.its.extend((i, i * n.step) for i in its)
                i1 = len(self.its)
                self.vals.setdefault(n.var, set()).update(i * n.step for i in its)
                if n.spmd:
                    self.ncores = max(self.ncores, n.trips)
                b = self._body(n.body)
                self.nest[r] = [0, self.vars[n.var], int(n.spmd), i0, i1, b[0], b[1]]
            else:
                self.nest[r] = [1, self.run.stmt_id[id(n)], 0, 0, 0, 0, 0]
        return lo, lo + len(nodes)

    @staticmethod
    def _kind(node):
        if isinstance(node, Load):
            return 0
        if isinstance(node, Store):
            return 1
        if isinstance(node, Matmul):
            return 2
        if isinstance(node, Accumulate):
            return 3
        if hasattr(node, "inputs"):
            return 4
        return None

    # -- names, accesses, tables ---------------------------------------------------------------
    def _name(self, name: str, kind: str) -> int:
        try:
            return self.names.index(name)
        except ValueError:
            self.names.append(name)
            self.name_kind.append(kind)
            if kind not in self.kinds:
                self.kinds.append(kind)
            return len(self.names) - 1

    def _tab(self, engine, passes, dtype) -> int:
        key = (engine, passes, type(passes), dtype)
        t = self.eng_tabs.get(key)
        if t is None:
            t = self.eng_tabs[key] = len(self.eng_key)
            self.eng_key.append(key)
        return t

    def _access(self, a, loops) -> int:
        t = self.run.tm[a.tensor]
        geom = self.geometry(a, loops, t)
        for terms, off, ext, dim in geom:
            if not all(type(x) is int for x in (off, ext, dim, *(c for _, c in terms))):
                raise Unsupported("geometry")
            for v, _ in terms:
                if v not in self.vars:
                    raise Unsupported("variable")
            self.ax_off.append(off)
            self.ax_ext.append(ext)
            self.ax_dim.append(dim)
            for v, c in terms:
                self.t_var.append(self.vars[v])
                self.t_coef.append(c)
            self.tm_ptr.append(len(self.t_var))
        self.ax_ptr.append(len(self.ax_off))
        self.ac_t.append(self.tensors[a.tensor])
        self.geoms.append((geom, t))
        return len(self.ac_t) - 1

    def _statement(self, lb: int, s, loops, base: int) -> int:
        run, k = self.run, self.run.k
        kind = self._kind(s)
        if kind is None:
            return base
        row = self.st[lb]
        row[0] = kind
        row[14] = 1 if loops else 0
        row[6] = 1
        acc0 = len(self.st_acc)
        if kind == 0:
            t = run.tm[s.tile.tensor]
            self.st_acc.append(self._access(s.tile, loops))
            row[3] = self._name(f"dma:{s}", "dma")
            row[4] = buffers_of(k, t.name) if loops else 1
            chunk = s.chunks(t.partition_axis)
            geom = self.geoms[-1][0]
            for a, c in enumerate(chunk[:self.R]):
                self.st_chunk[lb, a] = c
            n = 1
            for a, (_, _, ext, _) in enumerate(geom):
                c = chunk[a] if a < len(chunk) else 0
                if c:
                    n *= -(-ext // c)
            if len(chunk) > len(geom):
                raise Unsupported("chunk")
            row[6] = n
        elif kind == 1:
            t = run.tm[s.tile.tensor]
            self.st_acc.append(self._access(s.tile, loops))
            row[3] = self._name(f"dma:{s}", "dma")
            row[4] = buffers_of(k, t.name) if loops else 1
            row[13] = int(t.name in run.mm_out)
        elif kind == 2:
            for a in (s.stationary, s.moving, s.out):
                self.st_acc.append(self._access(a, loops))
            row[3] = self._name("tensor", "tensor")
            roles = run.roles[id(s)]
            row[10] = roles.n_moving
            row[11] = len(self.batch)
            self.batch.extend(bs for bs, _, _ in roles.batch)
            row[12] = len(self.batch)
        elif kind == 3:
            for a in (s.out, s.src):
                self.st_acc.append(self._access(a, loops))
        else:
            if not s.inputs and not (op_kind(s.kind) is not None and op_kind(s.kind).per_output):
                raise Unsupported("op without inputs")
            self.st_acc.append(self._access(s.out, loops))
            mask = 0
            for n, a in enumerate(s.inputs):
                self.st_acc.append(self._access(a, loops))
                if a.tensor in run.mm_out:
                    mask |= 1 << n
            if len(s.inputs) > 60:
                raise Unsupported("inputs")
            row[15] = mask
            work = run.work_of(s)
            if not work:
                raise Unsupported("work")
            dtype = run.tm[s.out.tensor].dtype
            row[7] = len(self.work)
            for engine, passes in work:
                self.work.append((self._name(engine, engine), -2 if engine == "tensor" else
                                  self._tab(engine, passes, dtype), 0, self._tab(engine, 1, "fp32")))
            row[8] = len(self.work)
            kd = op_kind(s.kind)
            row[9] = int(kd is not None and kd.per_output)
            row[4] = buffers_of(k, s.out.tensor) if loops else 1
        row[1], row[2] = acc0, len(self.st_acc)
        self.stmt_of[lb] = (s, loops)
        row[5] = base
        return base + int(row[4]) * int(row[6])

    # -- durations -----------------------------------------------------------------------------
    def _extents(self, a: int):
        """The tile extents access ``a`` can have (per axis: the full extent and the edge ones its
        loops reach), or None when there are too many to list."""
        geom, _ = self.geoms[a]
        axes = []
        for terms, off, ext, dim in geom:
            S = {off}
            for v, c in terms:
                S = {s + c * x for s in S for x in self.vals.get(v, ())}
                if len(S) > _ENUM:
                    return None
            axes.append(sorted({min(ext, dim - s) for s in S if s < dim}))
        if math.prod(map(len, axes)) > _ENUM:
            return None
        return axes

    def _enumerate(self, stmts) -> None:
        """Fill the tables with the durations the run can ask for (a first guess: what it still
        lacks comes back as misses)."""
        ns: set[int] = set()
        for lb, (s, loops) in ((lb, x) for lb, x in enumerate(stmts) if lb in self.stmt_of):
            kind = int(self.st[lb, 0])
            a0 = int(self.st[lb, 1])
            t = self.geoms[a0][1] if kind in (0, 1) else None
            if kind in (0, 1):
                axes = self._extents(a0)
                if axes is None:
                    continue
                if kind == 0:
                    ch = self.st_chunk[lb]
                    axes = [sorted({p for E in ex for p in ((min(E, int(ch[a])), E - int(ch[a]) * ((E - 1) // int(ch[a])))
                                                                if ch[a] else (E,))})
                            for a, ex in enumerate(axes)]
                combos = list(itertools.product(*axes))
                if len(combos) > _ENUM:
                    continue
                self.fill(np.array([(0, lb, math.prod(e), e[t.partition_axis]) for e in combos], np.int64),
                          guess=True)
            elif kind in (2, 4):
                for a in range(a0, int(self.st[lb, 2])):
                    axes = self._extents(a)
                    if axes is not None and math.prod(map(len, axes)) <= _ENUM:
                        ns.update(math.prod(e) for e in itertools.product(*axes))
        if len(ns) <= _ENUM:
            self.fill(np.array([(1, tab, n, 0) for tab in range(len(self.eng_key)) for n in sorted(ns)],
                               np.int64).reshape(-1, 4), guess=True)

    def fill(self, miss, guess: bool = False) -> None:
        """Add the durations of ``miss`` rows: (0, label, elements, rows) a transfer, (1, table,
        elements, 0) an engine instruction. ``guess``: rows the run may never ask for (one the
        sheet cannot cost is left out: the Python walk would not have asked either)."""
        run = self.run
        for what, i, n, rows in miss.tolist():
            try:
                if what == 0:
                    if (n, rows) not in self.dma[i]:
                        s, _ = self.stmt_of[i]
                        t = run.tm[s.tile.tensor]
                        tr = bool(s.transpose) if isinstance(s, Load) else False  # as _Run._store
                        self.dma[i][(n, rows)] = run._dma_rate(n, rows, t, tr)[0]
                elif n not in self.eng[i]:
                    engine, passes, _, dtype = self.eng_key[i]
                    self.eng[i][n] = run._engine_time(engine, n, passes, dtype)
            except Exception:
                if not guess:
                    raise

    # -- the call and its results --------------------------------------------------------------
    def args(self, caps):
        i64 = np.int64
        dk_lo, dk_n, dk_rows, dk_dur = [0], [], [], []
        for lb in range(self.nst):
            for (n, rows), d in self.dma[lb].items():
                dk_n.append(n)
                dk_rows.append(rows)
                dk_dur.append(d)
            dk_lo.append(len(dk_n))
        ek_lo, ek_n, ek_dur = [0], [], []
        for tab in self.eng:
            for n in sorted(tab):
                ek_n.append(n)
                ek_dur.append(tab[n])
            ek_lo.append(len(ek_n))
        kind_code = {k: n for n, k in enumerate(self.kinds)}
        c = self.run.c
        names = np.array([(kind_code[k], int(k == "dma")) for k in self.name_kind], i64).reshape(-1, 2)
        tkind = kind_code.get("tensor", -1)
        fc = np.array([c.dma_fixed, c.te_fill, c.te_cycle, c.te_slow])
        ic = np.array([self.ncores, len(self.vars), self.R, c.mm_init, c.psum_banks, c.psum_bank_bytes,
                       tkind, self.evac_q, self.evac_tab, self.nslots + self.acc_slots + 1, 0], i64)
        a = lambda x: np.array(x, i64)  # noqa: E731
        return (a(self.nest).reshape(-1, 7), a(self.its).reshape(-1, 2), self.root, self.st,
                a(self.st_acc), self.st_chunk, a(self.work).reshape(-1, 4), a(self.batch + [0]),
                a(self.ac_t + [0]), a(self.ax_ptr), a(self.tm_ptr), a(self.ax_off + [0]),
                a(self.ax_ext + [0]), a(self.ax_dim + [0]), a(self.t_var + [0]), a(self.t_coef + [0]),
                self.tn, a(dk_lo), a(dk_n + [0]), a(dk_rows + [0]), np.array(dk_dur + [0.0]),
                a(ek_lo), a(ek_n + [0]), np.array(ek_dur + [0.0]), names, fc, ic, a(caps))

    def read_back(self, out) -> None:
        """The compiled run's instructions into the run's Scheduler, its queues into its cores,
        its tallies into the run."""
        (_, ni, nq, queue, label, start, end, pred, why, lag, qcore, qname, ps, pe, po, pn,
         flags, lat, dma_bytes, _, _) = out
        run = self.run
        s = run.sched
        for q in range(nq):
            core, nm = int(qcore[q]), int(qname[q])
            name = self.names[nm]
            qid = s.queue_id(f"{name}@{core}" if core else name, self.name_kind[nm])
            assert qid == q
            cs = run.cores.get(core) or run._core(core)
            cs.queues[name] = q
        queue = queue[:ni]
        s.queue = queue.tolist()
        s.kind = np.array(s.kinds, dtype=object)[queue].tolist() if ni else []
        s.label = label[:ni].tolist()
        s.start, s.end = start[:ni].tolist(), end[:ni].tolist()
        s.pred, s.why, s.lag = pred[:ni].tolist(), why[:ni].tolist(), lag[:ni].tolist()
        s.arrays = {"queue": queue, "start": start[:ni], "end": end[:ni], "pred": pred[:ni],
                    "why": why[:ni], "lag": lag[:ni]}
        s.shared = bool(flags[0])
        for core in range(len(pn)):
            if pn[core]:
                n = int(pn[core])
                s._pipes[f"dma{core}"] = (ps[core, :n].tolist(), pe[core, :n].tolist(), po[core, :n].tolist())
        if flags[1]:
            run.notes.add("no Vector/Scalar roof on the sheet: PSUM evacuation costs nothing")
        run.latency = float(lat)
        run.dma_bytes = int(dma_bytes.sum())
        run.dma_bytes_core = {c: int(b) for c, b in enumerate(dma_bytes) if b}


def path_share(sched) -> dict[str, float]:
    """Seconds of each engine kind on a compiled run's critical path, kinds in the order the path
    meets them (as timeline() sums them along Scheduler.critical_path)."""
    from loopsim.targets.neuron import _walk_kernel as wk

    a = sched.arrays
    if not len(a["end"]):
        return {}
    kinds = list(dict.fromkeys(sched.kinds))
    code = np.array([kinds.index(k) for k in sched.kinds], np.int64)[a["queue"]]
    path, share, _ = wk.critical_path(a["pred"], a["end"], code, a["start"], len(kinds))
    met, first = np.unique(code[path], return_index=True)
    return {kinds[k]: float(share[k]) for k in met[np.argsort(first)].tolist()}
