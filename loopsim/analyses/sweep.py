"""Tilings side by side: specs x ``--vary`` parameter products -> analysed rows, ranked.

``--vary TN=128,256,512 --vary TM=64,128`` expands to the product of the listed values, applied
to every spec that has the parameter. Every row goes through :func:`loopsim.model.pipeline.analyze` and
rows are ranked by its verdict: feasible first, then the attainable time T, then the tie-breaks
of :func:`loopsim.model.verdict.rank_key` (DMA estimate, instructions, Q, SBUF peak). A point that is not a valid tiling (its spec refuses those
values) or cannot be counted stays in the table as a row with its reason, below every analysed row.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

from loopsim.model import pipeline
from loopsim.frontends import spec as spec_mod
from loopsim.base import values
from loopsim.base.errors import InputError, LoopsimError, SpecError
from loopsim.frontends.program import Program


def parse_vary(items: list[str] | None) -> dict[str, tuple[int, ...]]:
    """``["TN=128,256", "TM=32..128:x2"]`` -> {"TN": (128, 256), "TM": (32, 64, 128)}: the one
    ``NAME=values`` grammar (:mod:`loopsim.base.values`), every value listed."""
    return {n: values.listed(v, "--vary", n) for n, v in values.parse_all(items, "--vary").items()}


@dataclass(frozen=True, slots=True)
class Variant:
    """One tiling to analyse: ``spec`` as the user named it, the bound program (None when the
    point is not a valid tiling: ``error`` says why), the varied values."""

    label: str
    spec: str
    program: Program | None
    varied: tuple[tuple[str, int], ...]
    name: str = ""
    params: tuple[tuple[str, int], ...] = ()
    error: str = ""


def expand(specs: list[str], sets: dict[str, int], vary: dict[str, tuple[int, ...]], *,
           lnc_cores: int | None = None, split: str | None = None, buffers=None,
           kernel_args=None) -> list[Variant]:
    """Every spec at every combination of the ``vary`` values it has parameters for
    (``kernel_args``: inputs of kernel references ``PATH.py::FUNCTION``, see pipeline.read)."""
    for name in vary:
        if name in sets:
            raise InputError(f"--vary {name} and --set {name} both given; use one")
    known = {**sets, **{n: v[0] for n, v in vary.items() if v}}
    read: dict[str, object] = {}  # a spec named twice is read once
    for s in specs:
        if s not in read:
            read[s] = pipeline.read(s, kernel_args, known)
    files = [(s, read[s]) for s in specs]
    for name in vary:
        if not any(name in sf.params for _, sf in files):
            has = "; ".join(f"{sf.path} has {', '.join(sf.params) or '(none)'}" for _, sf in files)
            raise InputError(f"--vary {name}: no spec has a parameter {name} ({has})")
    for name, value in sets.items():
        if not any(name in sf.params for _, sf in files):
            has = "; ".join(f"{sf.path} has {', '.join(sf.params) or '(none)'}" for _, sf in files)
            raise SpecError(f"--set {name}={value}: no spec has a parameter {name} ({has})")
    out = []
    for arg, sf in files:
        names = [n for n in vary if n in sf.params]
        own_sets = {k: v for k, v in sets.items() if k in sf.params}
        kname = str(sf.data["kernel"].get("name", sf.path))
        for combo in itertools.product(*(vary[n] for n in names)):
            varied = tuple(zip(names, combo))
            label = " ".join([kname] + [f"{n}={v}" for n, v in varied])
            params = ()
            try:
                bound = spec_mod.bind_params(sf, {**own_sets, **dict(varied)})
                params = tuple(bound.items())
                prog = pipeline.build(sf, bound, lnc_cores=lnc_cores, split=split, buffers=buffers)
            except LoopsimError as e:
                if not varied:  # nothing varied: the spec itself is bad input
                    raise
                out.append(Variant(label, arg, None, varied, kname, params, str(e)))
                continue
            out.append(Variant(label, arg, prog, varied, prog.name, prog.params))
    labels = [v.label for v in out]
    if len(set(labels)) != len(labels):
        out = [Variant(f"{v.label} ({v.spec})", v.spec, v.program, v.varied, v.name, v.params,
                       v.error) for v in out]
    return out


@dataclass(frozen=True, slots=True)
class Row:
    """One tiling; ``analysis`` is None when it could not be analysed (``error`` says why)."""

    variant: Variant
    analysis: pipeline.Analysis | None
    error: str = ""
    best: bool = False

    @property
    def key(self) -> tuple:
        if self.analysis is None:
            return (True, float("inf"), 0.0, 0, 0, 0, 1, self.variant.label)
        return (*pipeline.rank_key(self.analysis), 0, self.variant.label)

    @property
    def feasible(self) -> bool:
        return self.analysis is not None and self.analysis.feasible


def analyze_one(v: Variant, hw, **kw) -> Row:
    """One row: the variant analysed, or the reason it could not be."""
    if v.program is None:
        return Row(v, None, v.error)
    try:
        return Row(v, pipeline.analyze(v.program, hw, **kw))
    except LoopsimError as e:
        return Row(v, None, str(e))


def rank(rows: list[Row]) -> list[Row]:
    """Feasible rows first, then by T, Q and SBUF peak, then (every key tied) by label; rows that
    could not be analysed last. The first feasible row is marked best."""
    rows = sorted(rows, key=lambda r: r.key)
    best = next((r for r in rows if r.feasible), None)
    return [Row(r.variant, r.analysis, r.error, r is best) for r in rows]


def analyze_all(variants: list[Variant], hw, *, jobs: int | None = 1, scheduler: str | None = None,
                quiet: bool = True, **kw) -> list[Row]:
    """Analyse every variant (``kw`` as :func:`loopsim.model.pipeline.analyze`) and rank them, on
    ``jobs`` local processes or the Dask cluster at ``scheduler``: the same rows whatever runs
    them. ``jobs=None``: in this process while the sweep is short (:func:`loopsim.analyses.parallel.here_s`),
    the rest on every core. A progress bar on stderr after a second, unless ``quiet``. Variants
    whose programs are equal (a spec named twice) are analysed once and share the analysis."""
    from functools import partial

    from loopsim.analyses.parallel import here_s, pmap

    first: dict[Program, int] = {}  # program -> its place in ``todo``
    todo, slot = [], []
    for v in variants:
        i = len(todo)
        if v.program is not None:
            try:
                i = first.setdefault(v.program, i)
            except TypeError:  # a program holding something unhashable: analysed on its own
                pass
        if i == len(todo):
            todo.append(v)
        slot.append(i)
    done = pmap(partial(analyze_one, hw=hw, **kw), todo, jobs=jobs, scheduler=scheduler,
                desc="analyse", quiet=quiet, unit="tiling", here_s=here_s(jobs))
    return rank([Row(v, done[i].analysis, done[i].error) for v, i in zip(variants, slot)])
