"""The space a search walks: parameter values, loop orders and load placements of one spec.

Three pure transforms of :class:`loopsim.ir.kernel.Kernel` define it:

``bind(template, values)``
    the spec's nest at other parameter values (tile and block sizes); the nest text is parsed once,
    its loop extents and steps are re-evaluated from their expressions. A program of several ops
    (``[ops]`` or ``[nest.KERNEL]`` tables) is rebuilt from its text at each point.
``arrange(chain, order, levels)``
    a chain nest (every loop body holds at most one loop) with its loops in another order and each
    load at another level. A load may sit in the body of any loop from the innermost loop that
    defines one of its indices down to the compute statements that use it (hoisting moves it
    outwards); a store sits right after the body of the innermost loop that defines its indices, so
    an output tile leaves PSUM as soon as its loops let it. Compute statements stay innermost. Every
    statement keeps its accesses, so W is unchanged by construction.
``default_values(template, hw)``
    powers of two for every tile and block parameter: a matmul tile parameter (the step of the
    innermost loop of its K, M or N index) up to the sheet's limit (partitions for K_t, PE columns
    for M_t, the moving-tile limit for N_t), any other up to the largest dimension; the points kept
    are those where every loop's step divides its extent (:func:`clean`), so tiles and blocks are
    divisors of what they tile.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass, replace
from typing import Iterator, Mapping

from loopsim.ir import expr
from loopsim.frontends import program as program_mod
from loopsim.frontends import spec as spec_mod
from loopsim.base.errors import InputError, SpecError
from loopsim.base.limits import check_int
from loopsim.ir.kernel import Access, Kernel, Load, Loop, Matmul, Node, Statement, Store, walk

Program = program_mod.Program


@dataclass(frozen=True, slots=True)
class Template:
    """A spec read once. ``raw`` holds its parameters as written with ``--set`` applied (ints and
    expression strings), ``dims`` the parameters its tensor shapes name (problem sizes, never
    searched), ``loop_text`` each loop variable's (extent, step) text, ``kernel`` the nest at the
    spec's own values (None for a program of ops); for a program, ``program`` at the spec's values
    and ``stage_text`` each kernel's loop texts."""

    ref: str
    spec: spec_mod.SpecFile
    raw: tuple[tuple[str, int | str], ...]
    sets: tuple[tuple[str, int], ...]
    dims: frozenset[str]
    kernel: Kernel | None
    loop_text: tuple[tuple[str, str, str], ...]
    program: object = None
    stage_text: tuple[tuple[str, tuple[tuple[str, str, str], ...]], ...] = ()

    @property
    def is_reference(self) -> bool:
        """A kernel reference ``PATH.py::FUNCTION`` (traced; only its parameters are searched)."""
        return self.spec.tracer is not None

    @property
    def kernels(self) -> tuple[tuple[Kernel, tuple[tuple[str, str, str], ...]], ...]:
        """Every kernel at the spec's values with its loop texts (one for a single nest)."""
        if self.kernel is not None:
            return ((self.kernel, self.loop_text),)
        texts = dict(self.stage_text)
        return tuple((st.kernel, texts.get(st.name, ())) for st in self.program.stages)

    @property
    def params(self) -> dict[str, int]:
        return dict(self.kernel.params) if self.kernel is not None else \
            spec_mod.bind_params(self.spec, dict(self.sets))

    @property
    def free(self) -> tuple[str, ...]:
        """Parameters a search varies unless told: plain integers of the spec that are neither
        problem sizes nor fixed with ``--set``, in the spec's order (a kernel file's module-level
        constants only when ``--space`` names them)."""
        fixed = dict(self.sets)
        consts = set(self.spec.data.get("constants", ()))
        return tuple(n for n, v in self.spec.params.items()
                     if isinstance(v, int) and n not in self.dims and n not in fixed
                     and n not in consts)


def loop_texts(body: str) -> tuple[tuple[str, str, str], ...]:
    """(variable, extent text, step text) of every ``for`` header of a nest body, in order."""
    texts = []
    for line in body.splitlines():
        m = spec_mod._FOR.match(line.split("#", 1)[0].strip())
        if m:
            texts.append((m.group(1), m.group(2).strip(), m.group(3).strip()))
    return tuple(texts)


def template(ref: str, sets: Mapping[str, int], kernel_args: Mapping | None = None) -> Template:
    """Read spec ``ref`` (bundled name or path) once, with ``sets`` fixing parameters. A kernel
    reference ``PATH.py::FUNCTION`` (inputs in ``kernel_args``, as
    :func:`loopsim.model.pipeline.load`) is traced at its own values, EXECUTING the file; its
    integer keyword parameters are what a search varies, and its module-level integer constants
    where ``--space`` names them."""
    if "::" in ref:
        from loopsim.model import pipeline

        sf = pipeline.read(ref, kernel_args, dict(sets))
        if sf.tracer is not None:
            params = spec_mod.bind_params(sf, dict(sets))
            prog = pipeline.build(sf, params)
            raw = dict(sf.params)
            raw.update(sets)
            dims = frozenset(d for shape, _ in sf.data["nki"]["args"].values() for d in shape
                             if isinstance(d, str))
            return Template(ref, sf, tuple(raw.items()), tuple(sets.items()), dims, None, (), prog)
    sf = spec_mod.read(ref)
    params = spec_mod.bind_params(sf, dict(sets))
    raw = sf.params
    raw.update(sets)
    dims = frozenset(n for t in sf.data["tensors"].values() if isinstance(t, dict)
                     for d in t.get("shape", []) if isinstance(d, str)
                     for n in expr.parse(d, "shape").names)
    if program_mod.is_program(sf):
        prog = program_mod.program_from(sf, params)
        nests = sf.data.get("nest", {})
        stage_text = tuple((st.name, loop_texts(str(nests.get(st.name, {}).get("body", ""))))
                           for st in prog.stages)
        return Template(ref, sf, tuple(raw.items()), tuple(sets.items()), dims, None, (), prog,
                        stage_text)
    kernel = spec_mod.kernel_from(sf, params)
    return Template(ref, sf, tuple(raw.items()), tuple(sets.items()), dims, kernel,
                    loop_texts(sf.data["nest"]["body"]))


_EXPRS: dict[str, expr.Expr] = {}


def _value(text: str, env: Mapping[str, int]) -> int:
    e = _EXPRS.get(text)
    if e is None:
        e = _EXPRS[text] = expr.parse(text, "nest")
    v = e.evaluate(env)
    if v.denominator != 1:
        raise SpecError(f"'{text}' is not an integer ({v})")
    return int(v)


def resolve(tpl: Template, values: Mapping[str, int]) -> dict[str, int]:
    """All parameters of the spec with ``values`` in place of the spec's (expressions re-evaluated)."""
    raw = dict(tpl.raw)
    raw.update(values)
    out = {k: v for k, v in raw.items() if isinstance(v, int)}
    pending = [(k, v) for k, v in raw.items() if not isinstance(v, int)]
    while pending:  # the spec resolved once already, so every round makes progress
        later = []
        for k, text in pending:
            try:
                out[k] = _value(text, out)
            except expr.ExprError:
                later.append((k, text))
        if len(later) == len(pending):
            raise SpecError(f"{tpl.spec.path}: params: cannot evaluate {later[0][0]}={later[0][1]!r}")
        pending = later
    return {k: out[k] for k in raw}


def loop_sizes(tpl: Template, params: Mapping[str, int]) -> list[tuple[str, int, int]] | None:
    """Each loop's (variable, extent, step) at ``params``, in program order; None when one is not
    positive or a step exceeds its extent (a single clipped trip: not a tiling worth counting)."""
    out = []
    for var, e_text, s_text in tpl.loop_text:
        e, s = _value(e_text, params), _value(s_text, params)
        if e <= 0 or s <= 0 or s > e:
            return None
        out.append((var, e, s))
    return out


def stage_sizes_ok(tpl: Template, params: Mapping[str, int]) -> bool:
    """For a program: every loop of every kernel has a positive extent and a step no larger (a
    step above its extent is one clipped trip, the same tiling as a smaller step)."""
    for _, texts in tpl.stage_text:
        for _, e_text, s_text in texts:
            try:
                e, s = _value(e_text, params), _value(s_text, params)
            except (expr.ExprError, SpecError):
                return True  # not a plain expression of parameters: the program's own check decides
            if e <= 0 or s <= 0 or s > e:
                return False
    return True


def bind(tpl: Template, values: Mapping[str, int]) -> Kernel | Program | None:
    """The spec's kernel (or program) at ``values``; None when that point is not a tiling: a value
    or a loop step that is not positive, or a loop whose step exceeds its extent."""
    params = resolve(tpl, values)
    if any(v <= 0 for v in params.values()):
        return None
    if tpl.kernel is None:
        try:
            if tpl.is_reference:  # traced again at these values: EXECUTES the kernel file
                from loopsim.model import pipeline

                return pipeline.build(tpl.spec, params)
            return program_mod.program_from(tpl.spec, params)
        except SpecError:
            return None
    sizes = loop_sizes(tpl, params)
    if sizes is None:
        return None
    it = iter(sizes)

    def rebuild(body: tuple[Node, ...]) -> tuple[Node, ...]:
        out = []
        for n in body:
            if isinstance(n, Loop):
                _, e, s = next(it)  # program order: a loop before the loops of its body
                out.append(replace(n, extent=e, step=s, body=rebuild(n.body)))
            else:
                out.append(n)
        return tuple(out)

    try:
        return replace(tpl.kernel, body=rebuild(tpl.kernel.body), params=tuple(params.items()))
    except SpecError:
        return None


def index_axes(kernel: Kernel) -> tuple[tuple[int, tuple[str, ...]], ...]:
    """Every indexed tensor axis of the nest: (dimension, index variables), deduplicated."""
    tm = kernel.tensor_map
    return tuple(dict.fromkeys((tm[a.tensor].shape[ax], terms)
                               for s, _ in kernel.statements() for a, _ in s.accesses()
                               for ax, terms in enumerate(a.index) if terms))


def clean_sizes(axes, sizes: list[tuple[str, int, int]]) -> bool:
    """:func:`clean` from the loop sizes alone (``axes`` from :func:`index_axes`), for a nest whose
    loop variables are all distinct."""
    sizes = {v: (e, s) for v, e, s in sizes}
    for dim, terms in axes:
        span = dim
        for e, s in sorted((sizes[v] for v in terms), key=lambda es: -es[1]):
            if e != span or e % s:
                return False
            span = s
    return True


def clean(kernel: Kernel) -> bool:
    """Every tile index is an exact cover of its dimension: the outermost loop of the index spans
    the dimension, each inner loop spans the step of the one outside it, and every step divides its
    extent. Then no tile is ragged and no iteration runs past a tensor's edge (the closed forms of
    :mod:`loopsim.analyses.search.evaluate` hold)."""
    tm = kernel.tensor_map
    for stmt, loops in kernel.statements():
        by_var = {l.var: l for l in loops}
        for acc, _ in stmt.accesses():
            t = tm[acc.tensor]
            if not acc.plain:  # an offset, coefficient or explicit extent: no closed form here
                return False
            for axis, terms in enumerate(acc.index):
                if not terms:
                    continue
                ls = sorted((by_var[v] for v in terms), key=lambda l: -l.step)
                span = t.shape[axis]
                for l in ls:
                    if l.extent != span or l.extent % l.step:
                        return False
                    span = l.step
    return True


# ---------------------------------------------------------------------------------------------
# chains: loop orders and load placements


@dataclass(frozen=True, slots=True)
class Chain:
    """A nest whose loop bodies each hold at most one loop: its loops outer to inner (headers;
    their bodies are rebuilt), its loads and stores, and the compute statements of the innermost
    body. ``kernel`` is the nest it came from."""

    kernel: Kernel
    loops: tuple[Loop, ...]
    loads: tuple[Load, ...]
    stores: tuple[Store, ...]
    compute: tuple[Statement, ...]
    variants: tuple[tuple[Load, ...], ...] = ()   # per load: as written first, then its splits

    def load(self, i: int, variant: int) -> Load:
        """Load ``i`` as variant ``variant`` (0: as written)."""
        return self.variants[i][variant] if self.variants else self.loads[i]


def split_variants(ld: Load, compute: tuple[Statement, ...], loop_vars) -> tuple[Load, ...]:
    """``ld`` as written, then with each non-empty subset of its ':' axes indexed as the compute
    statements index that axis of its tensor (``load x[:, :]`` -> ``x[b, :]``, ``x[:, d]``,
    ``x[b, d]`` for ``matmul ... x[b, d]``): the same tile walked by the loop that walks it, so
    less of the tensor is on chip at once. An axis the compute statements index in two ways, or
    by a loop outside the chain, stays whole."""
    if not ld.tile.plain:
        return (ld,)
    axes = []
    for ax, terms in enumerate(ld.tile.index):
        if terms:
            continue
        used = {a.index[ax] for st in compute for a, _ in st.accesses()
                if a.tensor == ld.tile.tensor and len(a.index) > ax}
        if len(used) == 1:
            (t,) = used
            if t and all(v in loop_vars for v in t):
                axes.append((ax, t))
    out = [ld]
    for r in range(1, len(axes) + 1):
        for combo in itertools.combinations(axes, r):
            index = list(ld.tile.index)
            for ax, t in combo:
                index[ax] = t
            flat = [v for terms in index for v in terms]
            if len(flat) == len(set(flat)):
                out.append(replace(ld, tile=Access(ld.tile.tensor, tuple(index))))
    return tuple(out)


def chain_of(kernel: Kernel, *, split: bool = True) -> Chain | None:
    """The chain of ``kernel``, or None when some loop body holds two loops or a compute statement
    is not innermost (then only parameters are searched)."""
    loops: list[Loop] = []
    body = kernel.body
    loads, stores, compute = [], [], []
    while True:
        inner = [n for n in body if isinstance(n, Loop)]
        if len(inner) > 1:
            return None
        for n in body:
            if isinstance(n, Load):
                loads.append(n)
            elif isinstance(n, Store):
                stores.append(n)
            elif not isinstance(n, Loop):
                if inner:
                    return None
                compute.append(n)
        if not inner:
            break
        loops.append(inner[0])
        body = inner[0].body
    if not compute:
        return None
    vars_ = {l.var for l in loops}
    variants = tuple(split_variants(ld, tuple(compute), vars_) if split else (ld,) for ld in loads)
    return Chain(kernel, tuple(loops), tuple(loads), tuple(stores), tuple(compute), variants)


def _depth(stmt: Statement, order: tuple[Loop, ...]) -> int:
    """1 + position of the innermost loop of ``order`` whose variable ``stmt`` indexes (0: none)."""
    vs = {v for a, _ in stmt.accesses() for v in a.variables}
    return max((i + 1 for i, l in enumerate(order) if l.var in vs), default=0)


@dataclass(frozen=True, slots=True)
class Structure:
    """One loop order (variables outer to inner), one level per load (the loop variable whose
    body holds it, '' for the top level) and one tile variant per load (:func:`split_variants`;
    () or 0: as written)."""

    order: tuple[str, ...]
    levels: tuple[str, ...]
    tiles: tuple[int, ...] = ()

    def variant(self, i: int) -> int:
        return self.tiles[i] if self.tiles else 0

    def loads(self, chain: Chain) -> tuple[Load, ...]:
        """The loads as this structure writes them."""
        return tuple(chain.load(i, self.variant(i)) for i in range(len(chain.loads)))

    def describe(self, chain: Chain) -> dict:
        return {"order": list(self.order),
                "loads": {str(ld): lv or "(top)" for ld, lv in zip(self.loads(chain), self.levels)},
                "split": [str(chain.load(i, v)) for i, v in enumerate(self.tiles) if v]}


def structures(chain: Chain) -> Iterator[Structure]:
    """Every loop order, every tile variant of every load and every legal placement of it, in a
    fixed order (the spec's own order and tiles first)."""
    n = len(chain.loops)
    counts = [len(v) for v in chain.variants] if chain.variants else [1] * len(chain.loads)
    for perm in orders(chain):
        for tiles in itertools.product(*(range(c) for c in counts)):
            lds = [chain.load(i, t) for i, t in enumerate(tiles)]
            spans = [range(_depth(ld, perm), n + 1) for ld in lds]
            for depths in itertools.product(*spans):
                yield Structure(tuple(l.var for l in perm),
                                tuple(perm[d - 1].var if d else "" for d in depths),
                                tiles if any(tiles) else ())


def orders(chain: Chain) -> Iterator[tuple[Loop, ...]]:
    """Every order of the chain's loops, outer to inner, the spec's own first (n! of them): the
    orders a single nest's search and a program kernel's search walk."""
    return itertools.permutations(chain.loops)


def reorder(chain: Chain, order: tuple[str, ...], kernel: Kernel | None = None) -> Kernel:
    """The chain's nest (loops and params from ``kernel`` when given) with its loops in ``order``,
    each load as written at the outermost level its indices allow (:func:`_depth`: the placement
    that loads that tile fewest times), each store right after its loops (:func:`arrange`)."""
    by_var = {l.var: l for l in chain.loops}
    perm = tuple(by_var[v] for v in order)
    levels = tuple(perm[d - 1].var if d else "" for d in (_depth(ld, perm) for ld in chain.loads))
    return arrange(chain, Structure(tuple(order), levels), kernel)


def as_written(chain: Chain) -> Structure:
    """The structure of the nest the chain came from."""
    level = {}
    for node, loops in walk(chain.kernel.body):
        if isinstance(node, Load):
            level[id(node)] = loops[-1].var if loops else ""
    return Structure(tuple(l.var for l in chain.loops), tuple(level[id(ld)] for ld in chain.loads))


def arrange(chain: Chain, s: Structure, kernel: Kernel | None = None) -> Kernel:
    """The chain's nest with loops in ``s.order`` and loads at ``s.levels``; loops and params are
    taken from ``kernel`` (the chain's kernel at other parameter values) when given."""
    k = kernel or chain.kernel
    by_var = {n.var: n for n, _ in walk(k.body) if isinstance(n, Loop)}
    order = tuple(by_var[v] for v in s.order)
    n = len(order)
    pos = {v: i + 1 for i, v in enumerate(s.order)}
    pre: list[list[Node]] = [[] for _ in range(n + 1)]
    post: list[list[Node]] = [[] for _ in range(n + 1)]
    for ld, lv in zip(s.loads(chain), s.levels):
        pre[pos[lv] if lv else 0].append(ld)
    pre[n].extend(chain.compute)
    for st in chain.stores:
        post[_depth(st, order)].append(st)
    body: tuple[Node, ...] = tuple(pre[n] + post[n])
    for d in range(n - 1, -1, -1):
        body = tuple(pre[d]) + (replace(order[d], body=body),) + tuple(post[d])
    return replace(k, body=body)


# ---------------------------------------------------------------------------------------------
# parameter values


@dataclass(frozen=True, slots=True)
class MatmulTiles:
    """One matmul statement of a kernel: its K, M, N sizes (the batch folded into M) and, per
    role, the free parameter that is its tile (the step of the innermost loop of that index,
    written as the parameter's name), or None."""

    kernel: str
    m: int
    n: int
    k: int
    tiles: tuple[tuple[str, str | None], ...]   # (role, parameter) for K, M, N


def matmul_tiles(tpl: Template) -> tuple[MatmulTiles, ...]:
    """Every matmul statement of every kernel of the spec (at its own values)."""
    from loopsim.ir.tiles import matmul_roles

    free = set(tpl.free)
    out = []
    for kernel, texts in tpl.kernels:
        step_text = {v: s for v, _, s in texts}
        tm = kernel.tensor_map
        for stmt, loops in kernel.statements():
            if not isinstance(stmt, Matmul):
                continue
            r = matmul_roles(stmt, kernel)
            step = {l.var: l.step for l in loops}
            tiles = []
            for acc, axis, role in ((stmt.stationary, r.k_stationary, "K"),
                                    (stmt.stationary, r.m_stationary, "M"),
                                    (stmt.moving, r.n_moving, "N")):
                terms = [v for v in acc.index[axis] if v in step]
                name = step_text.get(min(terms, key=lambda v: step[v]), "") if terms else ""
                tiles.append((role, name if name in free else None))
            a, b = tm[stmt.stationary.tensor], tm[stmt.moving.tensor]
            batch = math.prod(tm[stmt.out.tensor].shape[o] for _, _, o in r.batch)
            out.append(MatmulTiles(kernel.name, a.shape[r.m_stationary] * batch,
                                   b.shape[r.n_moving], a.shape[r.k_stationary], tuple(tiles)))
    return tuple(out)


def tile_roles(kernel: Kernel | None, tpl: Template) -> dict[str, str]:
    """Free parameters that set a matmul tile: name -> "K", "M" or "N" (the first role it has in
    any matmul of any kernel of the spec; see :func:`matmul_tiles`)."""
    out: dict[str, str] = {}
    for mt in matmul_tiles(tpl):
        for role, name in mt.tiles:
            if name is not None:
                out.setdefault(name, role)
    return out


def role_limit(role: str, hw) -> int | None:
    """The sheet's limit on a matmul tile of ``role`` (None when the sheet has none)."""
    return hw.tile_limits().get(role)


def tile_limit(tpl: Template, name: str, hw) -> int | None:
    """The tightest sheet limit over every matmul tile role parameter ``name`` plays."""
    lims = [role_limit(role, hw) for mt in matmul_tiles(tpl) for role, n in mt.tiles if n == name]
    lims = [x for x in lims if x]
    return min(lims) if lims else None


def powers_of_two(lo: int, hi: int) -> tuple[int, ...]:
    out, v = [], 1
    while v <= hi:
        if v >= lo:
            out.append(v)
        v *= 2
    return tuple(out)


def default_values(tpl: Template, hw) -> dict[str, tuple[int, ...]]:
    """Every free parameter over powers of two: a tile parameter up to its hardware limit, any
    other up to the largest problem size."""
    params = tpl.params
    top = max((params[d] for d in tpl.dims if d in params), default=1)
    out = {}
    for name in tpl.free:
        if tpl.is_reference:  # a traced kernel: each point is a trace, so near its own value
            v = params[name]
            out[name] = powers_of_two(max(1, v // REFERENCE_SPAN), v * REFERENCE_SPAN)
            continue
        lim = tile_limit(tpl, name, hw)
        out[name] = powers_of_two(1, min(lim, top) if lim else top)
    return out


#: a kernel reference's integer keyword parameter is searched over the powers of two from its
#: default / 8 to its default x 8 unless ``--space`` says otherwise
REFERENCE_SPAN = 8
#: most points (parameter combinations) a search space may have, before structures
MAX_POINTS = 10**8


def parse_space(items: list[str] | None, tpl: Template) -> dict[str, tuple[int, ...]]:
    """``--space NAME=...`` in the one ``NAME=values`` grammar (:mod:`loopsim.base.values`):
    ``TN=128,256,512`` (listed), ``TN=64..512:x2`` (LO, 2 LO, ... up to HI), ``TN=128..512:128``
    (a step). A bare ``LO..HI`` means every integer there, as it does for ``--vary``; a search
    space of every integer is refused with the stepped spellings (it is tile sizes by the
    hundred, most of them ragged). Names must be parameters of the spec not fixed by ``--set``."""
    from loopsim.base.values import GRAMMAR, listed, parse

    out: dict[str, tuple[int, ...]] = {}
    names = tpl.spec.params
    for item in items or ():
        name, eq, text = item.partition("=")
        name, text = name.strip(), text.strip()
        if not eq or not name.isidentifier() or not text:
            raise InputError(f"--space {item}: expected {GRAMMAR}")
        if name not in names and name != BUFFERS:
            raise InputError(f"--space {name}: {tpl.spec.path} has no parameter {name}; it has: "
                             f"{', '.join(names)} (and {BUFFERS}: SBUF buffers per load)")
        if name in dict(tpl.sets):
            raise InputError(f"--space {name} and --set {name} both given; use one")
        if name in out:
            raise InputError(f"--space {name}: given twice; list all its values in one --space")
        if ".." in text and ":" not in text:
            lo, _, hi = text.partition("..")
            raise InputError(f"--space {name}={text}: a bare LO..HI is every integer from LO to HI; "
                             f"give a step for a search space: {name}={lo}..{hi}:x2 (LO, 2 LO, 4 LO, "
                             f"...) or {name}={lo}..{hi}:{lo.strip() or 'STEP'}")
        if ".." in text:
            hi_t = text.partition("..")[2].partition(":")[0].strip().replace("_", "")
            if hi_t.isdigit():
                check_int(int(hi_t), f"--space {name}", InputError)
        _, vals = parse(item.strip(), "--space")
        vals = listed(vals, "--space", name)
        for v in vals:
            check_int(v, f"--space {name}", InputError)
        out[name] = tuple(vals)
    return out


#: the --space name of the buffers every load inside a loop rotates through (1: none, 2: double
#: buffering), searched like a parameter (a spec parameter of that name takes precedence)
BUFFERS = "buffers"


def with_buffers(k, buffers: tuple[tuple[str, int], ...] | None):
    """A kernel or program whose loads rotate through ``buffers`` (None: as the spec says)."""
    if buffers is None or k is None:
        return k
    if isinstance(k, Kernel):
        return replace(k, buffers=buffers)
    return replace(k, stages=tuple(replace(st, kernel=replace(st.kernel, buffers=buffers))
                                   for st in k.stages))


def split_buffers(tpl: Template, values: Mapping[str, int]) -> tuple[dict, int | None]:
    """(the parameter values, the searched buffer count or None)."""
    if BUFFERS in values and BUFFERS not in tpl.spec.params:
        rest = {k: v for k, v in values.items() if k != BUFFERS}
        return rest, values[BUFFERS]
    return dict(values), None


def space_values(tpl: Template, hw, items: list[str] | None) -> dict[str, tuple[int, ...]]:
    """The values of every searched parameter: the defaults, with ``--space`` replacing some."""
    vals = default_values(tpl, hw)
    vals.update(parse_space(items, tpl))
    vals = {n: v for n, v in vals.items() if v}
    if size(vals) > MAX_POINTS:
        raise InputError(f"--space: {size(vals):,} points ({' x '.join(str(len(v)) for v in vals.values())}"
                         f" values of {', '.join(vals)}) exceed the {MAX_POINTS:,} a search walks; "
                         "narrow some with --space or fix some with --set")
    return vals


def combos(names: tuple[str, ...], vals: Mapping[str, tuple[int, ...]]) -> Iterator[dict[str, int]]:
    for c in itertools.product(*(vals[n] for n in names)):
        yield dict(zip(names, c))


def size(vals: Mapping[str, tuple[int, ...]]) -> int:
    return math.prod(len(v) for v in vals.values())


# ---------------------------------------------------------------------------------------------
# programs: load placements in every kernel


@dataclass(frozen=True, slots=True)
class Movable:
    """One load of a program's kernel that a search may place: the stage, its ordinal among the
    kernel's loads (program order), and its options, as written first: (tile index, the ordinal of
    the loop whose body it starts, -1 for the kernel's top level)."""

    stage: int
    load: int
    text: str
    options: tuple[tuple[tuple[tuple[str, ...], ...], int], ...]
    loop_vars: tuple[str, ...]   # variable of every loop of the kernel, by ordinal


def _loop_ordinals(kernel: Kernel) -> dict[int, int]:
    """id(loop) -> its ordinal (program order, outer loops before the loops of their bodies)."""
    return {id(n): i for i, n in enumerate(n for n, _ in walk(kernel.body) if isinstance(n, Loop))}


def movable_loads(kernel: Kernel, stage: int = 0) -> tuple[Movable, ...]:
    """The placements of each load of ``kernel`` (a tree nest: a loop body may hold several
    loops). A load of a tensor the kernel never writes may take each tile :func:`split_variants`
    gives it (its ':' axes indexed as every statement that reads it indexes them, by loops
    enclosing all those statements) and sits at the start of the body of the innermost loop its
    tile's indices need, hoisted as far as they allow (the placement that loads that tile fewest
    times), or as written; a tile that keeps whole an axis a loop around its place walks (it
    would load more than that loop's body reads) is not offered. A load whose readers share no
    loop it could be split by keeps its tile."""
    ords = _loop_ordinals(kernel)
    loop_vars = tuple(n.var for n, _ in walk(kernel.body) if isinstance(n, Loop))
    written = {a.tensor for s, _ in kernel.statements() if not isinstance(s, Load)
               for a, kind in s.accesses() if a is getattr(s, "out", None) or isinstance(s, Store)}
    out = []
    loads = [(n, ls) for n, ls in walk(kernel.body) if isinstance(n, Load)]
    for i, (ld, where) in enumerate(loads):
        t = ld.tile.tensor
        readers = [(s, ls) for s, ls in kernel.statements()
                   if not isinstance(s, (Load, Store)) and any(a.tensor == t for a, _ in s.accesses())]
        if t in written or not readers or not ld.tile.plain or ld.chunk:
            continue
        common: list[Loop] = []
        for level in zip(*(ls for _, ls in readers)):
            if any(l is not level[0] for l in level):
                break
            common.append(level[0])
        if len(where) > len(common) or any(a is not b for a, b in zip(where, common)):
            continue  # written outside its readers' common loops: left as it is
        chain_vars = {l.var for l in common}
        if len(chain_vars) != len(common):
            continue
        here = ords[id(where[-1])] if where else -1
        opts = [(ld.tile.index, here)]
        variants = split_variants(ld, tuple(s for s, _ in readers), chain_vars)
        full = variants[-1].tile.index  # every axis that can be split, split
        for v in variants:
            need = {x for terms in v.tile.index for x in terms}
            if not need <= chain_vars:
                continue
            depth = max((j for j, l in enumerate(common) if l.var in need), default=-1)
            outer = {l.var for l in common[:depth + 1]}
            if any(not t and f and set(f) <= outer for t, f in zip(v.tile.index, full)):
                continue  # an axis a loop around it walks, loaded whole: more than its body reads
            opt = (v.tile.index, ords[id(common[depth])] if depth >= 0 else -1)
            if opt not in opts:
                opts.append(opt)
        if len(opts) > 1:
            out.append(Movable(stage, i, str(ld), tuple(opts), loop_vars))
    return tuple(out)


@dataclass(frozen=True, slots=True)
class Placement:
    """One option per movable load of a program (:func:`movable_loads`); 0: as written. ``orders``:
    per kernel, the index of its loop order in :func:`program_orders` (() or 0: as written); the
    movable loads are those of the kernels in those orders (:func:`program_moves`)."""

    choices: tuple[int, ...]
    orders: tuple[int, ...] = ()

    def describe(self, moves: tuple[Movable, ...], names=()) -> dict:
        """``names``: per kernel, (kernel name, its loop orders) (:func:`program_orders`)."""
        order = [f"{name}:{','.join(os[o])}" for (name, os), o in zip(names, self.orders) if o]
        loads, split = {}, []
        for m, c in zip(moves, self.choices):
            index, at = m.options[c]
            text = _load_text(m.text, index)
            loads[text] = m.loop_vars[at] if at >= 0 else "(top)"
            if index != m.options[0][0]:
                split.append(text)
        return {"order": order, "loads": loads, "split": split}


def _load_text(text: str, index) -> str:
    name = text.removeprefix("load ").split("[", 1)[0]
    return f"load {name}[{', '.join(' + '.join(t) if t else ':' for t in index)}]"


def placements(moves: tuple[Movable, ...]) -> Iterator[Placement]:
    """Every combination of the movable loads' options, as written first."""
    for c in itertools.product(*(range(len(m.options)) for m in moves)):
        yield Placement(tuple(c))


def place_kernel(kernel: Kernel, moves, choices) -> Kernel:
    """``kernel`` with each movable load (of this kernel) at its chosen option."""
    chosen = {m.load: m.options[c] for m, c in zip(moves, choices) if c}
    if not chosen:
        return kernel
    inserts: dict[int, list[Node]] = {}
    loads = [n for n, _ in walk(kernel.body) if isinstance(n, Load)]
    for i, (index, at) in chosen.items():
        ld = loads[i]
        inserts.setdefault(at, []).append(replace(ld, tile=Access(ld.tile.tensor, index)))
    moved = {id(loads[i]) for i in chosen}
    count = itertools.count()

    def rebuild(body) -> list[Node]:
        out: list[Node] = []
        for n in body:
            if isinstance(n, Load) and id(n) in moved:
                continue
            if isinstance(n, Loop):
                o = next(count)
                out.append(replace(n, body=tuple(inserts.get(o, []) + rebuild(n.body))))
            else:
                out.append(n)
        return out

    return replace(kernel, body=tuple(inserts.get(-1, []) + rebuild(kernel.body)))


def place(prog: Program, moves: tuple[Movable, ...], p: Placement) -> Program:
    """The program with its loads placed as ``p`` says (stages without a movable load as they are)."""
    if not any(p.choices):
        return prog
    stages = []
    for si, st in enumerate(prog.stages):
        mine = [(m, c) for m, c in zip(moves, p.choices) if m.stage == si]
        if any(c for _, c in mine):
            st = replace(st, kernel=place_kernel(st.kernel, [m for m, _ in mine],
                                                 [c for _, c in mine]))
        stages.append(st)
    return replace(prog, stages=tuple(stages))


def _written(tpl: Template) -> list[bool]:
    """Per kernel of a program spec: whether the spec writes its nest ([nest.KERNEL] table)."""
    if tpl.kernel is not None or tpl.is_reference or tpl.program is None:
        return [False] * (len(tpl.program.stages) if tpl.program is not None else 0)
    nests = tpl.spec.data.get("nest", {})
    return [isinstance(nests, dict) and isinstance(nests.get(st.name), dict)
            for st in tpl.program.stages]


def program_moves(tpl: Template, orders: tuple[int, ...] = ()) -> tuple[Movable, ...]:
    """The movable loads of every kernel of a program spec whose nests the spec writes
    ([nest.KERNEL] tables), each kernel in its loop order ``orders`` (() : as written); none for a
    kernel reference (its trace is its structure)."""
    prog = reorder_program(tpl, tpl.program, orders) if any(orders) else tpl.program
    return tuple(m for si, (st, w) in enumerate(zip(prog.stages, _written(tpl))) if w
                 for m in movable_loads(st.kernel, si))


def program_orders(tpl: Template) -> tuple[tuple[str, tuple[tuple[str, ...], ...]], ...]:
    """Per kernel of a program spec: (its name, its loop orders, as written first, by variable).
    A kernel whose nest the spec writes as a chain with distinct loop variables has every order of
    :func:`orders`; any other only its own (none for a kernel with no loop)."""
    out = []
    for st, w in zip(tpl.program.stages, _written(tpl)):
        ch = chain_of(st.kernel, split=False) if w else None
        vs = tuple(l.var for l in ch.loops) if ch is not None else ()
        if ch is None or len(set(vs)) != len(vs):
            out.append((st.name, (vs,)))
            continue
        out.append((st.name, tuple(tuple(l.var for l in perm) for perm in orders(ch))))
    return tuple(out)


def reorder_program(tpl: Template, prog: Program, orders: tuple[int, ...]) -> Program:
    """``prog`` (the template's program at some values) with kernel ``i`` in its loop order
    ``orders[i]`` of :func:`program_orders` (0: as written, kept as it is)."""
    if not any(orders):
        return prog
    names = program_orders(tpl)
    stages = []
    for st, base, (_, os), o in zip(prog.stages, tpl.program.stages, names, orders):
        if o:
            st = replace(st, kernel=reorder(chain_of(base.kernel, split=False), os[o], st.kernel))
        stages.append(st)
    return replace(prog, stages=tuple(stages))
