"""The search: branch and bound over tile sizes, blocks, loop orders and load placements.

1. The space's points group by their matmul tile sizes. Every tiling in a group takes at least
   ``max(W/P, Q_lb/BW, Tensor Engine floor of the tiles)`` seconds (:mod:`.evaluate`), Q_lb the
   I/O lower bound of :mod:`loopsim.count.bound`; groups are visited from the smallest bound up.
2. A unit of work is one binding of every parameter. Its structures (loop orders x load
   placements) get their closed-form Q; those whose (bound T, Q) cannot reach the current N-th
   best are pruned, the rest get a full verdict from the closed forms (or, where the closed forms
   do not claim the nest, from the exact count).
3. The search stops when the N-th best T is below the bound of the next group.
4. The best :func:`wide` (N) by the roofline's T and the Pareto points are confirmed by the exact
   count (:func:`.evaluate.verdict`), which also runs the engine timeline; the top N are the best
   of them by the timeline's predicted T (pruning uses the roofline's bounds, which the timeline's
   T never beats, so a tiling pruned could only rank lower by the roofline, not by the timeline:
   the widening is what lets the timeline reorder them).

Determinism: units run in batches of a fixed size, each against the cutoff known before the batch,
so the same units are pruned and the same tilings found on one process, many, or a Dask cluster.
"""

from __future__ import annotations

import itertools
import math
import time
from dataclasses import dataclass, field

from loopsim.targets import hardware as hw_mod
from loopsim.count.bound import lower_bound
from loopsim.count.counts import check_tiles, kernel_dtype, shape_flops
from loopsim.base.errors import InputError, InternalError, SpecError
from loopsim.analyses.search import evaluate as ev
from loopsim.analyses.search import pareto, space

#: units per batch; fixed, so that pruning does not depend on the number of workers
BATCH = 16
#: a program's kernels in several loop orders: the options of each kernel kept (ranked with the
#: other kernels as written) to be combined with the other kernels' best
STAGE_KEEP = 3



def wide(top: int) -> int:
    """Tilings kept by the roofline's T for the timeline to rank: the top N and as many again."""
    return 2 * top + 4


@dataclass(frozen=True, slots=True)
class Problem:
    """What to search (picklable; every worker rebuilds its context from it)."""

    spec: str
    sets: tuple[tuple[str, int], ...]
    hardware: str
    space: tuple[str, ...] = ()          # --space items as given
    policy: str = "as-written"
    sbuf_bytes: int | None = None
    dtype: str | None = None
    structures: bool = True              # search loop orders and load placements
    top: int = 10
    # a kernel reference's --arg, --kwarg, --grid, --path, --register-value strings
    kernel_args: tuple = ((), (), None, (), ())
    buffers: tuple[tuple[str, int], ...] | None = None   # --buffers for every point
    exhaustive: bool = False             # every structure of a program in full (tests' reference)


@dataclass(frozen=True, slots=True)
class Unit:
    index: int
    values: tuple[tuple[str, int], ...]
    bound: float      # seconds no tiling of this unit can beat


@dataclass(frozen=True, slots=True)
class Cand:
    """A tiling found: its parameter values, structure index and verdict (no report)."""

    unit: int
    structure: int
    values: tuple[tuple[str, int], ...]
    verdict: ev.Score
    shape: tuple = ()   # the structure's (loop order, load levels); () when none is searched

    @property
    def key(self) -> tuple:
        """The verdict's rank key, then the tiling itself (values, loop order, load levels): a
        full tie goes the same way whatever order the space was walked in."""
        return (*self.verdict.key(), self.values, self.shape)


def _shape(ctx, i: int) -> tuple:
    s = ctx.structs[i]
    if isinstance(s, space.Placement):
        return (s.orders, (), s.choices)
    return () if s is None else (s.order, s.levels, s.tiles)


def _cut(score: ev.Score) -> tuple:
    """What no pruned candidate may beat: (rounded T, rounded DMA estimate) of the N-th best."""
    k = score.key()
    return (k[1], k[2])


@dataclass(frozen=True, slots=True)
class UnitResult:
    index: int
    candidates: int        # structures given a bound or a verdict
    verdicts: int          # structures given a full verdict
    infeasible: int
    invalid: str           # why the unit is not a tiling ('' when it is)
    top: tuple[Cand, ...]
    front: tuple[Cand, ...]
    why_infeasible: str = ""   # one reason, when some structure is infeasible
    pruned: bool = False       # its bound could not reach the N-th best: not evaluated


class Context:
    """Everything derived from a :class:`Problem` once per process."""

    def __init__(self, p: Problem):
        self.problem = p
        self.hw = hw_mod.load(p.hardware)
        kargs = None
        if any(p.kernel_args):
            from loopsim.frontends.nki.load import parse_options

            kargs = parse_options(*p.kernel_args)
        self.tpl = space.template(p.spec, dict(p.sets), kargs)
        self.values = space.space_values(self.tpl, self.hw, list(p.space))
        self.user = set(space.parse_space(list(p.space), self.tpl))
        base = self.tpl.kernel
        self.chain = space.chain_of(base) if base is not None else None
        # a program's loads, each placed and split as its kernel's loops allow
        self.moves = space.program_moves(self.tpl) if p.structures and base is None else ()
        # a program's kernels whose nests are chains: their loop orders too
        self.orders = space.program_orders(self.tpl) if p.structures and base is None and \
            not self.tpl.is_reference and self.tpl.program is not None else ()
        self.staged = any(len(os) > 1 for _, os in self.orders)
        if self.staged:
            self._staged_structures()
        elif self.moves:
            self.structs = tuple(space.placements(self.moves))
        elif self.chain is not None and p.structures:
            self.structs = tuple(space.structures(self.chain))
        elif self.chain is not None:
            self.structs = (space.as_written(self.chain),)
        else:
            self.structs = (None,)
        # the closed forms count one buffer per load
        self.fast = self.chain is not None and ev.fast_claims(self.chain, p.policy) and \
            p.buffers is None and space.BUFFERS not in self.values
        self.axes = space.index_axes(base) if base is not None else ()
        loop_vars = [v for v, _, _ in self.tpl.loop_text]
        self.distinct_vars = len(set(loop_vars)) == len(loop_vars)
        self.roles = space.tile_roles(base, self.tpl)
        self.matmuls = space.matmul_tiles(self.tpl)
        if base is not None:
            self.dtype = p.dtype or kernel_dtype(base)
            self.W = shape_flops(base)
            from loopsim.count.lnc import kernel_cores

            self.cores = kernel_cores(base)
        else:
            from loopsim.model.pipeline import program_dtype

            self.dtype = p.dtype or program_dtype(self.tpl.program)
            self.W = sum(shape_flops(st.kernel) for st in self.tpl.program.stages)
            self.cores = 1
            # the work every point must do: the spec's own values, counted
            self.base_W = ev.verdict(self.tpl.program, self.hw, sbuf_bytes=p.sbuf_bytes,
                                     dtype=p.dtype, model="roofline").W
        self.lb = lower_bound(base, self.hw, p.sbuf_bytes) if base is not None else None
        if base is not None:
            self.compulsory_Q = base.compulsory_bytes
        else:
            prog = self.tpl.program
            tm = prog.tensor_map
            self.compulsory_Q = sum(tm[t].bytes for t in prog.inputs) + \
                sum(t.bytes for t in prog.tensors if t.output)
        from loopsim.count.counts import capacity_units

        self.capacity = capacity_units(self.hw, p.sbuf_bytes)
        self.reset()

    def _staged_structures(self) -> None:
        """Every (loop order of each kernel x placement of its loads), as :class:`space.Placement`
        over the program; ``stage_opts[i]``: kernel ``i``'s own (order, its loads' choices)."""
        per_stage = []
        self._moves = {}
        for si, (_, os) in enumerate(self.orders):
            opts = []
            for o in range(len(os)):
                ms = [m for m in space.program_moves(self.tpl, self._one(si, o)) if m.stage == si]
                opts += [(o, c.choices) for c in space.placements(tuple(ms))]
            per_stage.append(tuple(opts))
        self.stage_opts = tuple(per_stage)
        structs, self.index = [], {}
        for combo in itertools.product(*self.stage_opts):
            s = space.Placement(tuple(c for _, cs in combo for c in cs), tuple(o for o, _ in combo))
            self.index[combo] = len(structs)
            structs.append(s)
        self.structs = tuple(structs)

    def _one(self, si: int, o: int) -> tuple[int, ...]:
        return tuple(o if i == si else 0 for i in range(len(self.orders)))

    def moves_for(self, orders: tuple[int, ...]) -> tuple:
        """The movable loads of the program with its kernels in loop orders ``orders``."""
        if not any(orders):
            return self.moves
        m = self._moves.get(orders)
        if m is None:
            m = self._moves[orders] = space.program_moves(self.tpl, orders)
        return m

    def reset(self) -> None:
        """Zero the counts :func:`units` keeps (one search at a time per process)."""
        self.skipped_groups = 0  # tile sizes whose one instruction does not fit SBUF
        self.seen = self.not_tilings = self.unfit = 0

    def floor(self, tiles: dict[str, int]) -> float:
        """Seconds no tiling with these tile parameter values can beat: W/P, compulsory Q (every
        input read once, every output written once) and the I/O lower bound of a matmul-shaped
        nest through HBM and the DMA engines, and the Tensor Engine floor of
        every matmul with its tiles (a tile not searched at the sheet's limit), summed over the
        matmuls of a kernel and the kernels of a program (they run one after another)."""
        t = max(self.W / self.hw.P(self.dtype), ev.memory_floor(self.hw, self.compulsory_Q))
        if self.lb is not None:
            t = max(t, ev.memory_floor(self.hw, self.lb.Q))
        te = 0.0
        for mm in self.matmuls:
            size = {}
            for role, name in mm.tiles:
                lim = space.role_limit(role, self.hw) or (mm.k, mm.m, mm.n)["KMN".index(role)]
                size[role] = tiles.get(name, lim) if name is not None else lim
            te += ev.tensor_engine_floor(self.hw, self.dtype, mm.m, mm.n, mm.k, size["K"],
                                         size["M"], size["N"], self.cores)
        return max(t, te)

    def kernel(self, values) -> object:
        """The kernel (or program) at ``values``, with the buffers asked for (the searched
        ``buffers`` value, else ``--buffers``)."""
        params, n = space.split_buffers(self.tpl, dict(values))
        buffers = (("*", n),) if n is not None else self.problem.buffers
        return space.with_buffers(space.bind(self.tpl, params), buffers)

    def arranged(self, values, structure: int):
        return self.structured(self.kernel(values), self.structs[structure])

    def structured(self, k, s):
        """Kernel (or program) ``k`` with structure ``s`` (None: as it is)."""
        if s is None or k is None:
            return k
        if isinstance(s, space.Placement):
            if any(s.orders):
                k = space.reorder_program(self.tpl, k, s.orders)
            return space.place(k, self.moves_for(s.orders), s)
        return space.arrange(self.chain, s, k)


_CONTEXTS: dict[Problem, Context] = {}


def context(p: Problem) -> Context:
    c = _CONTEXTS.get(p)
    if c is None:
        _CONTEXTS.clear()
        c = _CONTEXTS[p] = Context(p)
    return c


# ---------------------------------------------------------------------------------------------
# one unit (runs on a worker)


def run_unit(job: tuple[Problem, Unit, tuple | None]) -> UnitResult:
    """Evaluate every structure of one binding against ``cutoff`` (:func:`_cut` of the N-th
    best known before the batch; None: nothing known)."""
    p, unit, cutoff = job
    ctx = context(p)
    n_s = len(ctx.structs)
    if cutoff is not None and ev.round_T(unit.bound) > cutoff[0]:
        return UnitResult(unit.index, 0, 0, 0, "", (), (), pruned=True)
    kernel = ctx.kernel(unit.values)
    if kernel is None:
        return UnitResult(unit.index, 0, 0, 0, "not a tiling", (), ())
    if ctx.tpl.kernel is not None:
        try:
            check_tiles(kernel, ctx.hw)
        except SpecError as e:
            return UnitResult(unit.index, 0, 0, 0, str(e), (), ())
    top: list[Cand] = []
    found: list[Cand] = []
    verdicts = infeasible = 0
    why = ""
    cut = cutoff

    def keep(c: Cand) -> None:
        nonlocal cut, infeasible, why
        if not c.verdict.feasible:
            infeasible += 1
            why = why or "; ".join(c.verdict.reasons)
            return
        found.append(c)
        top.append(c)
        top.sort(key=lambda x: x.key)
        del top[wide(p.top):]
        if len(top) >= p.top:
            k = _cut(top[p.top - 1].verdict)
            cut = k if cut is None else min(cut, k)

    if ctx.fast and space.clean(kernel):
        need = ev.loads_cost(ctx.chain, kernel, ctx.hw)
        if need > ctx.capacity:
            unit_ = " per partition" if ctx.hw.lanes else ""
            whole = [str(ld) for ld, vs in zip(ctx.chain.loads, ctx.chain.variants)
                     if any(not t for t in vs[-1].tile.index)]
            hint = (f" (each ':' tile split where the compute statements index it); "
                    f"{', '.join(whole)} keep whole axes no loop of the chain walks") if whole else \
                " (each ':' tile split where the compute statements index it)"
            return UnitResult(unit.index, n_s, 0, n_s, "", (), (),
                              f"SBUF: the loads need {need:,} bytes{unit_} at once, more than "
                              f"{ctx.capacity:,}{hint}")
        m = ev.chain_model(ctx.chain, kernel, ctx.hw, sbuf_bytes=p.sbuf_bytes, dtype=p.dtype)
        qs = [ev.chain_q(m, s) for s in ctx.structs]
        # (T, transfers' time) no structure can beat: the transfers take at least Q at the DMA
        # bandwidth
        lbs = [(ev.round_T(max(unit.bound, ev.memory_floor(ctx.hw, q))),
                ev.round_T(q / m.transfer_bw) if m.transfer_bw else 0.0) for q in qs]
        for i in sorted(range(n_s), key=lambda i: (lbs[i], qs[i], i)):
            if cut is not None and lbs[i] > cut:
                break
            verdicts += 1
            keep(Cand(unit.index, i, unit.values, ev.model_verdict(m, ctx.structs[i], qs[i]),
                      _shape(ctx, i)))
    elif ctx.staged and not p.exhaustive:
        # kernels run one after another and each is counted on its own: T and Q add up over
        # them, so each kernel's options are ranked with the others as written, and the best
        # STAGE_KEEP of every kernel are combined
        done: dict[int, ev.Score] = {}

        def score(i: int):
            if i not in done:
                done[i] = ev.verdict(ctx.structured(kernel, ctx.structs[i]), ctx.hw,
                                     policy=p.policy, sbuf_bytes=p.sbuf_bytes, dtype=p.dtype,
                                     model="floor")
            return done[i]

        base = [opts[0] for opts in ctx.stage_opts]
        v0 = score(ctx.index[tuple(base)])
        if v0.report is not None and v0.W != ctx.base_W:
            return UnitResult(unit.index, 0, 0, 0, f"W = {v0.W:,} FLOPs, not the {ctx.base_W:,} "
                              "of the spec's own values: not a tiling of the same work", (), ())
        best = []
        for si, opts in enumerate(ctx.stage_opts):
            ranked = []
            for opt in opts:
                combo = list(base)
                combo[si] = opt
                v = score(ctx.index[tuple(combo)])
                st = v.report.stages[si] if v.report is not None else None
                ranked.append(((0, ev.round_T(st.verdict.T), st.counts.Q) if st is not None and
                               st.verdict.feasible else (1,), opts.index(opt), opt))
            best.append([opt for *_, opt in sorted(ranked)[:STAGE_KEEP]])
        for combo in itertools.product(*best):
            i = ctx.index[tuple(combo)]
            score(i)
        for i, v in sorted(done.items()):
            verdicts += 1
            keep(Cand(unit.index, i, unit.values, v.stripped(), _shape(ctx, i)))
    else:
        for i, s in enumerate(ctx.structs):
            k = ctx.structured(kernel, s)
            v = ev.verdict(k, ctx.hw, policy=p.policy, sbuf_bytes=p.sbuf_bytes, dtype=p.dtype,
                           model="floor")
            if ctx.tpl.kernel is None and v.report is not None and v.W != ctx.base_W:
                # a program or traced kernel whose loops skip work at these values (N // BN = 0)
                return UnitResult(unit.index, 0, 0, 0, f"W = {v.W:,} FLOPs, not the {ctx.base_W:,} "
                                  "of the spec's own values: not a tiling of the same work", (), ())
            verdicts += 1
            keep(Cand(unit.index, i, unit.values, v.stripped(), _shape(ctx, i)))
    return UnitResult(unit.index, n_s, verdicts, infeasible, "", tuple(top), tuple(_fronts(found)),
                      why)


def _fronts(cands: list[Cand]) -> list[Cand]:
    """Candidates on the front of T against SBUF peak or of T against Q."""
    a = pareto.front(cands, lambda c: ev.round_T(c.verdict.T), lambda c: c.verdict.sbuf_peak_bytes,
                     lambda c: c.key)
    b = pareto.front(cands, lambda c: ev.round_T(c.verdict.T), lambda c: c.verdict.Q,
                     lambda c: c.key)
    return list({(c.unit, c.structure): c for c in a + b}.values())


# ---------------------------------------------------------------------------------------------
# the driver


@dataclass
class Outcome:
    """What a search found. ``top`` and the fronts are exact (confirmed) candidates with their
    verdicts (reports included); counts are structures (candidates)."""

    problem: Problem
    values: dict
    space_size: int
    evaluated: int = 0
    verdicts: int = 0
    infeasible: int = 0
    units: int = 0
    seconds: float = 0.0
    interrupted: bool = False
    top: list = field(default_factory=list)
    front_sbuf: list = field(default_factory=list)
    front_q: list = field(default_factory=list)
    lower_bound_Q: int | None = None
    structures_searched: bool = True
    points: int = 0              # parameter points of the space (each x its structures)
    structures: int = 1          # structures per point
    pruned_floor: int = 0        # points whose floor (W/P, I/O bound, Tensor Engine) could not win
    pruned_structure: int = 0    # candidates whose Q (through HBM and the DMA) could not win
    not_tilings: int = 0         # points skipped: a step above its extent, or (default values) not dividing it
    unfit: int = 0               # points skipped: one instruction's tiles exceed SBUF
    invalid: int = 0             # points refused: tiles beyond the sheet's limits, a kernel's own check
    runner_ups: list = field(default_factory=list)   # best of other tilings (other values), confirmed
    W_over_P: float = 0.0        # seconds
    T_lower_bound_Q: float | None = None   # the I/O lower bound's time through HBM and the DMA

    def accounting(self) -> dict:
        """Where every point of the space went (points; ``pruned_structure`` in candidates)."""
        return {"points": self.points, "structures_per_point": self.structures,
                "candidates": self.space_size, "evaluated_in_full": self.verdicts,
                "infeasible": self.infeasible,
                "pruned_by_floor": self.pruned_floor, "pruned_by_structure_bound": self.pruned_structure,
                "skipped_not_tilings": self.not_tilings, "skipped_instruction_exceeds_sbuf": self.unfit,
                "refused": self.invalid}


def plan(ctx: Context):
    """Units in the order of their bounds: (bound, tile values) groups, each with its bindings."""
    tiles = [n for n in ctx.values if n in ctx.roles]
    blocks = [n for n in ctx.values if n not in ctx.roles]
    groups = []
    for g, combo in enumerate(space.combos(tuple(tiles), ctx.values)):
        groups.append((ev.round_T(ctx.floor(combo)), g, ctx.floor(combo), combo))
    groups.sort(key=lambda x: x[:2])
    return groups, tuple(blocks)


def units(ctx: Context, groups, blocks):
    """Every binding of the space in bound order; bindings that are not tilings (a step above its
    extent) or, among the default values, not clean (a step that does not divide) are skipped."""
    from loopsim.count.counts import working_set
    from loopsim.count.counts import capacity_units

    index = 0
    cap = capacity_units(ctx.hw, ctx.problem.sbuf_bytes)
    n_block = space.size({b: ctx.values[b] for b in blocks})
    for _, _, bound, tile_vals in groups:
        first = True
        for j, combo in enumerate(space.combos(blocks, ctx.values)):
            ctx.seen += 1
            values = {**tile_vals, **combo}
            if ctx.tpl.stage_text and not space.stage_sizes_ok(
                    ctx.tpl, space.resolve(ctx.tpl, space.split_buffers(ctx.tpl, values)[0])):
                ctx.not_tilings += 1
                continue
            if ctx.tpl.kernel is not None:
                params = space.resolve(ctx.tpl, space.split_buffers(ctx.tpl, values)[0])
                sizes = space.loop_sizes(ctx.tpl, params)
                if sizes is None:
                    ctx.not_tilings += 1
                    continue
                if not (ctx.user & values.keys()):
                    if ctx.distinct_vars:
                        if not space.clean_sizes(ctx.axes, sizes):
                            ctx.not_tilings += 1
                            continue
                    else:
                        k = ctx.kernel(values)
                        if k is None or not space.clean(k):
                            ctx.not_tilings += 1
                            continue
                if first:  # one instruction's tiles depend on the tile sizes only
                    first = False
                    k = ctx.kernel(values)
                    if k is not None and working_set(k, ctx.hw) > cap:
                        ctx.skipped_groups += 1
                        ctx.unfit += n_block - j
                        ctx.seen += n_block - j - 1
                        break
            yield Unit(index, tuple(sorted(values.items())), bound)
            index += 1


def search(p: Problem, pool, progress=None) -> Outcome:
    """Run the search on ``pool`` (:class:`loopsim.analyses.parallel.Pool`); see the module docstring."""
    from loopsim.analyses.parallel import Interrupted

    t0 = time.perf_counter()
    ctx = context(p)
    from loopsim.base.limits import MAX_TOP

    if not 1 <= p.top <= MAX_TOP:
        raise InputError(f"--top {p.top} must be between 1 and {MAX_TOP}")
    for name, vals in ctx.values.items():
        if not vals:
            raise InputError(f"--space {name}: no values")
    ctx.reset()
    points = space.size(ctx.values)
    out = Outcome(p, ctx.values, points * len(ctx.structs),
                  lower_bound_Q=ctx.lb.Q if ctx.lb else None,
                  structures_searched=p.structures and (ctx.chain is not None or bool(ctx.moves)
                                                        or ctx.staged),
                  points=points, structures=len(ctx.structs),
                  W_over_P=ctx.W / ctx.hw.P(ctx.dtype),
                  T_lower_bound_Q=ev.memory_floor(ctx.hw, ctx.lb.Q) if ctx.lb else None)
    kinds: dict = {}
    groups, blocks = plan(ctx)
    stream = units(ctx, groups, blocks)
    top: list[Cand] = []
    found: list[Cand] = []
    pending = next(stream, None)
    reasons: list[str] = []
    infeasible_why = ""
    while pending is not None:
        cutoff = None
        if len(top) >= p.top:
            cutoff = _cut(top[p.top - 1].verdict)
            if ev.round_T(pending.bound) > cutoff[0]:
                out.pruned_floor += 1  # the pending unit, drawn from the stream but not run
                break
        batch = [pending] + list(itertools.islice(stream, BATCH - 1))
        pending = next(stream, None)
        try:
            results = pool.map(run_unit, [(p, u, cutoff) for u in batch], progress=progress,
                               note=lambda r: _note(top))
        except Interrupted as e:
            results = [e.done[i] for i in sorted(e.done)]
            out.interrupted = True
            pending = None
        for r in results:
            out.units += 1
            out.evaluated += r.candidates
            out.verdicts += r.verdicts
            out.infeasible += r.infeasible
            out.pruned_structure += r.candidates - max(r.verdicts, r.infeasible)
            out.pruned_floor += r.pruned
            out.invalid += bool(r.invalid)
            if r.top:
                kinds[r.top[0].values] = r.top[0]
                if len(kinds) > 4 * wide(3):
                    kinds = {c.values: c for c in sorted(kinds.values(), key=lambda c: c.key)[:wide(3) + 1]}
            if r.invalid and len(reasons) < 3:
                reasons.append(r.invalid)
            infeasible_why = infeasible_why or r.why_infeasible
            top = sorted(top + list(r.top), key=lambda c: c.key)[:wide(p.top)]
            found = _fronts(found + list(r.front))
    if not top:
        if out.interrupted:
            raise KeyboardInterrupt
        where = f"{ctx.tpl.spec.path} on {ctx.hw.name}"
        if out.evaluated == 0 and not ctx.skipped_groups:
            why = f" ({reasons[0]})" if reasons and reasons[0] != "not a tiling" else ""
            raise InputError(f"{where}: the search space is empty: no binding of "
                             f"{', '.join(ctx.values) or 'its parameters'} is a tiling (steps must "
                             f"divide extents, tiles stay within the sheet's limits){why}")
        why = infeasible_why or "one matmul instruction's tiles do not fit"
        raise InputError(f"{where}: no feasible tiling among {out.evaluated:,} candidates "
                         f"(SBUF {capacity_bytes(ctx):,} bytes): {why}")
    out.pruned_floor += points - ctx.seen
    out.not_tilings, out.unfit = ctx.not_tilings, ctx.unfit
    exact: dict[tuple, Cand] = {}  # (unit, structure) -> confirmed: each timeline runs once

    def exactly(c: Cand) -> Cand:
        key = (c.unit, c.structure)
        if key not in exact:
            exact[key] = confirm(ctx, c)
        return exact[key]

    out.top = sorted(map(exactly, top), key=lambda c: c.key)[:p.top]
    best_values = out.top[0].values
    others = [c for c in sorted(kinds.values(), key=lambda c: c.key) if c.values != best_values]
    # as the top: the best few by the roofline, confirmed (with the timeline), ranked by that
    out.runner_ups = sorted(map(exactly, others[:wide(3)]), key=lambda c: c.key)[:3]
    fr = [exactly(c) for c in found]
    out.front_sbuf = pareto.front(fr, lambda c: ev.round_T(c.verdict.T),
                                  lambda c: c.verdict.sbuf_peak_bytes, lambda c: c.key)
    out.front_q = pareto.front(fr, lambda c: ev.round_T(c.verdict.T), lambda c: c.verdict.Q,
                               lambda c: c.key)
    out.seconds = time.perf_counter() - t0
    return out


def _note(top: list[Cand]) -> str | None:
    if not top:
        return None
    from loopsim.base.fmt import fmt_time

    return f"best T {fmt_time(top[0].verdict.T)}"


def confirm(ctx: Context, c: Cand) -> Cand:
    """The candidate with its exact verdict; a closed form that disagrees is a bug, not an answer."""
    p = ctx.problem
    k = ctx.arranged(c.values, c.structure)
    v = ev.verdict(k, ctx.hw, policy=p.policy, sbuf_bytes=p.sbuf_bytes, dtype=p.dtype)
    # a closed-form verdict must equal the exact count's without the timeline (one kernel: its
    # roofline T); an exact one (model "floor") was the exact count already
    if not c.verdict.exact and (v.Q, v.feasible, v.sbuf_peak_bytes, ev.round_T(ev.roofline_T(v))) != \
            (c.verdict.Q, c.verdict.feasible, c.verdict.sbuf_peak_bytes, ev.round_T(c.verdict.T)):
        raise InternalError(f"search: the closed form of {dict(c.values)} structure {c.structure} "
                            f"gives Q={c.verdict.Q:,}, T={c.verdict.T:.6g} s; the exact count gives "
                            f"Q={v.Q:,}, T={v.T:.6g} s")
    return Cand(c.unit, c.structure, c.values, v, c.shape)


def structure_of(ctx: Context, c: Cand) -> dict | None:
    s = ctx.structs[c.structure]
    if isinstance(s, space.Placement):
        return s.describe(ctx.moves_for(s.orders), ctx.orders)
    return None if s is None else s.describe(ctx.chain)


def kernel_of(ctx: Context, c: Cand):
    return ctx.arranged(c.values, c.structure)


def capacity_bytes(ctx: Context) -> int:
    return ctx.hw.sbuf_bytes if ctx.problem.sbuf_bytes is None else ctx.problem.sbuf_bytes
