"""The Python API: what the commands do, as functions with typed, frozen results.

``import loopsim`` exposes :func:`analyze`, :func:`search`, :func:`compare` and :func:`calibrate`
(imported on first use, so ``import loopsim`` stays light). Each takes what the command takes: a
spec (a bundled name, a ``.toml`` path, or a kernel reference ``PATH.py::FUNCTION``, which
EXECUTES that file) and a hardware sheet (a name or a ``.toml`` path); bad input raises
:class:`loopsim.base.errors.LoopsimError` with the command's one-line message. Every result has
``.to_dict()`` (what the command prints with ``--json``), ``_repr_html_`` (a table in a notebook)
and ``.plot()`` (a matplotlib Axes). Times are seconds, bytes and FLOPs integers.
"""

from __future__ import annotations

import html
from dataclasses import dataclass
from typing import Mapping, Sequence

from loopsim.base.errors import InputError


def _sets(sets, set_) -> dict[str, int]:
    if sets is not None and set_ is not None:
        raise InputError("give sets= or set= (the same keyword), not both")
    out = dict(sets if sets is not None else set_ if set_ is not None else {})
    for k, v in out.items():
        if not isinstance(k, str) or type(v) is not int:
            raise InputError(f"sets: {k}={v!r} must be a name and an integer")
    return out


def _kernel_args(args, kwargs, grid, registers=None) -> dict:
    from loopsim.analyses.batch import kernel_args

    return kernel_args(args, kwargs, grid, registers)


def _buffers(buffers) -> tuple[tuple[str, int], ...] | None:
    if buffers is None:
        return None
    if isinstance(buffers, int):
        return (("*", buffers),)
    return tuple(dict(buffers).items())


def _table(rows: Sequence[tuple[str, object]], title: str) -> str:
    cells = "".join(f"<tr><th style='text-align:left'>{html.escape(k)}</th>"
                    f"<td style='text-align:right'>{html.escape(str(v))}</td></tr>" for k, v in rows)
    return f"<table><caption>{html.escape(title)}</caption>{cells}</table>"


def _axes(ax):
    if ax is None:
        from matplotlib.figure import Figure

        ax = Figure(figsize=(6, 3.2), layout="constrained").subplots()
    return ax


def _time_scale(seconds: Sequence[float]) -> tuple[float, str]:
    """(factor, unit) so that the largest time reads in ns, µs, ms or s."""
    from loopsim.analyses.search.figure import time_unit

    return time_unit(seconds)


# ---------------------------------------------------------------------------------------------
# analyze


@dataclass(frozen=True)
class Analyzed:
    """The verdict on one kernel (``entitle``): ``T`` seconds bound by ``limit``, whether it can
    run (``feasible``, ``reasons``), W FLOPs, Q bytes; ``analysis`` holds everything else
    (:class:`loopsim.model.pipeline.Analysis`)."""

    analysis: object

    @property
    def T(self) -> float:
        return self.analysis.T

    @property
    def limit(self) -> str:
        return self.analysis.limit

    @property
    def feasible(self) -> bool:
        return self.analysis.feasible

    @property
    def reasons(self) -> tuple[str, ...]:
        return self.analysis.infeasible_reasons

    @property
    def W(self) -> int:
        return self.analysis.W

    @property
    def Q(self) -> int:
        return self.analysis.Q

    @property
    def times(self) -> dict[str, float]:
        """Seconds each roof and ceiling implies; T is the largest."""
        return self.analysis.times

    def to_dict(self) -> dict:
        """What ``loopsim entitle --json`` prints."""
        from loopsim.render.json import analysis_dict, clean

        return clean(analysis_dict(self.analysis))

    def _repr_html_(self) -> str:
        from loopsim.base.fmt import fmt_time

        a = self.analysis
        rows = [("T (attainable)", f"{fmt_time(a.T)} ({a.limit})"),
                ("can run", "yes" if a.feasible else "no: " + "; ".join(a.infeasible_reasons)),
                ("W", f"{a.W:,} FLOPs"), ("Q", f"{a.Q:,} bytes"),
                ("SBUF peak", f"{a.sbuf_peak_bytes:,} bytes")]
        rows += [(f"{n}", fmt_time(t)) for n, t in a.times.items()]
        return _table(rows, f"{a.name} on {a.hardware.name}")

    def plot(self, ax=None):
        """The time each roof and ceiling implies, as bars (T is the longest): an Axes."""
        ax = _axes(ax)
        names, ts = zip(*self.analysis.times.items())
        f, unit = _time_scale(ts)
        ax.barh(names, [t * f for t in ts],
                color=["C3" if n == self.limit else "C0" for n in names])
        ax.invert_yaxis()
        ax.set_xlabel(f"time ({unit})")
        ax.set_title(f"{self.analysis.name}: T = {self.T * f:.4g} {unit} ({self.limit})",
                     fontsize="medium")
        return ax


def analyze(spec: str, hardware: str, *, sets: Mapping[str, int] | None = None,
            policy: str = "as-written", sbuf_bytes: int | None = None, dtype: str | None = None,
            lnc: int | None = None, split: str | None = None, buffers=None,
            args: Mapping | None = None, kwargs: Mapping | None = None, grid=None,
            registers: Sequence[str] | None = None, roofs: str = "spec", **options) -> Analyzed:
    """``loopsim entitle SPEC -H HARDWARE``: the verdict on one kernel.

    ``sets`` (also spelled ``set``): parameter values; ``buffers``: an int (every load) or
    {tensor: n}; ``args``/``kwargs``/``grid``/``registers``: a kernel reference's inputs
    (``--arg``, ``--kwarg``, ``--grid``, ``--register-value`` strings); ``options``: ``allow_scope_mismatch``, ``link_bw``, ``replay``.
    """
    from loopsim.model import pipeline
    from loopsim.targets import hardware as hw_mod

    sets = _sets(sets, options.pop("set", None))
    allowed = {"allow_scope_mismatch", "link_bw", "replay"}
    if set(options) - allowed:
        raise InputError(f"analyze: unknown option {sorted(set(options) - allowed)[0]}; "
                         f"known: {', '.join(sorted(allowed))}")
    hw = hw_mod.load(hardware).with_roofs(roofs)
    prog = pipeline.load(spec, sets, lnc_cores=lnc, split=split, buffers=_buffers(buffers),
                         kernel_args=_kernel_args(args, kwargs, grid, registers))
    return Analyzed(pipeline.analyze(prog, hw, policy=policy, sbuf_bytes=sbuf_bytes, dtype=dtype,
                                     **options))


# ---------------------------------------------------------------------------------------------
# search


@dataclass(frozen=True)
class Searched:
    """What ``loopsim search`` found: ``best`` and ``top`` (:class:`Analyzed`, ranked), the
    counts of where the space went, ``outcome`` (:class:`loopsim.analyses.search.engine.Outcome`)."""

    outcome: object
    context: object
    hardware: object

    @property
    def top(self) -> tuple[Analyzed, ...]:
        return tuple(Analyzed(c.verdict.report) for c in self.outcome.top)

    @property
    def best(self) -> Analyzed:
        return self.top[0]

    @property
    def best_values(self) -> dict[str, int]:
        """The searched values of the best tiling."""
        return dict(self.outcome.top[0].values)

    def spec_text(self, name: str | None = None) -> str:
        """The best tiling as a spec file (``search -o``), its kernel called ``name``."""
        from loopsim.render.search import best_text

        return best_text(self.context, self.outcome, self.hardware, name)

    def to_dict(self) -> dict:
        """What ``loopsim search --json`` prints."""
        from loopsim.render.json import clean
        from loopsim.render.search import search_dict

        return clean(search_dict(self.context, self.outcome, self.hardware))

    def _repr_html_(self) -> str:
        from loopsim.base.fmt import fmt_time
        from loopsim.render.search import accounting_lines, label_of

        rows = [(f"{i + 1}. {label_of(self.context, c)}",
                 f"{fmt_time(c.verdict.T)} ({c.verdict.limit})")
                for i, c in enumerate(self.outcome.top)]
        rows += [("", line.strip()) for line in accounting_lines(self.outcome)]
        return _table(rows, f"search {self.outcome.problem.spec} on {self.hardware.name}")

    def plot(self, ax=None):
        """The Pareto front of T against SBUF peak (``search --plot``'s first panel): an Axes."""
        from loopsim.analyses.search.figure import front_figure

        ax = _axes(ax)
        front_figure(self.outcome, self.hardware, axes=(ax,))
        return ax


def search(spec: str, hardware: str, *, sets: Mapping[str, int] | None = None,
           space: Mapping[str, Sequence[int]] | Sequence[str] | None = None,
           policy: str = "as-written", sbuf_bytes: int | None = None, dtype: str | None = None,
           keep_order: bool = False, top: int = 10, buffers=None, args: Mapping | None = None,
           kwargs: Mapping | None = None, grid=None, jobs: int | None = 1,
           scheduler: str | None = None, **options) -> Searched:
    """``loopsim search SPEC -H HARDWARE``: the tiling to write, ranked by the verdict of
    :func:`analyze`. ``space``: {name: values} or ``--space`` strings ("TN=128..512:x2");
    ``jobs``/``scheduler``: as ``--jobs``/``--scheduler`` (the same result)."""
    from loopsim.analyses.parallel import Pool
    from loopsim.analyses.search import engine
    from loopsim.targets import hardware as hw_mod

    sets = _sets(sets, options.pop("set", None))
    if options:
        raise InputError(f"search: unknown option {sorted(options)[0]}")
    if isinstance(space, Mapping):
        items = tuple(f"{k}={','.join(str(int(v)) for v in vs)}" for k, vs in space.items())
    else:
        items = tuple(space or ())
    kargs = ((), (), None)
    if args or kwargs or grid:
        kargs = (tuple(f"{k}={v}" for k, v in (args or {}).items()),
                 tuple(f"{k}={v!r}" for k, v in (kwargs or {}).items()),
                 "x".join(str(g) for g in grid) if grid else None)
    p = engine.Problem(spec, tuple(sets.items()), hardware, items, policy, sbuf_bytes, dtype,
                       not keep_order, top, kargs, _buffers(buffers))
    ctx = engine.context(p)
    with Pool(jobs, scheduler) as pool:
        out = engine.search(p, pool)
    return Searched(out, ctx, hw_mod.load(hardware))


# ---------------------------------------------------------------------------------------------
# compare


@dataclass(frozen=True)
class Compared:
    """Tilings side by side (``compare``), ranked: ``rows`` (:class:`loopsim.analyses.sweep.Row`)."""

    rows: tuple
    hardware: object
    policy: str

    def to_dict(self) -> dict:
        """What ``loopsim compare --json`` prints."""
        from loopsim.render.json import clean, row_dict

        return clean({"hardware": self.hardware.name, "scope": self.hardware.scope,
                      **({"calibrated": dict(self.hardware.calibrated)}
                         if self.hardware.calibrated else {}),
                      "policy": self.policy,
                      "rows": [row_dict(r, i + 1) for i, r in enumerate(self.rows)]})

    @property
    def best(self) -> Analyzed | None:
        r = next((r for r in self.rows if r.best), None)
        return None if r is None else Analyzed(r.analysis)

    def _repr_html_(self) -> str:
        from loopsim.base.fmt import fmt_time

        rows = [(f"{i + 1}. {r.variant.label}", r.error if r.analysis is None else
                 f"{fmt_time(r.analysis.T)} ({r.analysis.limit})" + ("" if r.feasible else " !"))
                for i, r in enumerate(self.rows)]
        return _table(rows, f"compare on {self.hardware.name}")

    def plot(self, ax=None):
        """T of every analysed row, best first, as bars: an Axes."""
        ax = _axes(ax)
        rows = [r for r in self.rows if r.analysis is not None]
        ts = [r.analysis.T for r in rows]
        f, unit = _time_scale(ts)
        ax.barh([r.variant.label for r in rows], [t * f for t in ts],
                color=["C3" if r.best else "C0" if r.feasible else "0.7" for r in rows])
        ax.invert_yaxis()
        ax.set_xlabel(f"attainable T ({unit})")
        return ax


def compare(specs: str | Sequence[str], hardware: str, *, sets: Mapping[str, int] | None = None,
            vary: Mapping[str, Sequence[int]] | None = None, policy: str = "as-written",
            sbuf_bytes: int | None = None, dtype: str | None = None, buffers=None,
            args: Mapping | None = None, kwargs: Mapping | None = None, grid=None,
            registers: Sequence[str] | None = None, jobs: int | None = 1, **options) -> Compared:
    """``loopsim compare SPECS -H HARDWARE --vary NAME=...``: every spec at every combination of
    the ``vary`` values, ranked by the verdict (``registers``: as in :func:`analyze`)."""
    from loopsim.analyses import sweep
    from loopsim.targets import hardware as hw_mod

    sets = _sets(sets, options.pop("set", None))
    if options:
        raise InputError(f"compare: unknown option {sorted(options)[0]}")
    hw = hw_mod.load(hardware)
    specs = [specs] if isinstance(specs, str) else list(specs)
    variants = sweep.expand(specs, sets, {k: tuple(v) for k, v in (vary or {}).items()},
                            buffers=_buffers(buffers),
                            kernel_args=_kernel_args(args, kwargs, grid, registers))
    rows = sweep.analyze_all(variants, hw, jobs=jobs, policy=policy, sbuf_bytes=sbuf_bytes,
                             dtype=dtype)
    return Compared(tuple(rows), hw, policy)


# ---------------------------------------------------------------------------------------------
# calibrate


@dataclass(frozen=True)
class Calibrated:
    """Roofs fitted to measurements (``calibrate``): ``fit`` (:class:`loopsim.analyses.calibrate.Fit`)
    and ``sheet`` (the TOML text of the calibrated sheet, ``.write(path)`` saves it)."""

    fit: object
    sheet: str
    name: str

    def to_dict(self) -> dict:
        """What ``loopsim calibrate --json`` prints (without the sheet's path)."""
        from loopsim.render.json import clean

        return clean({**self.fit.as_dict(), "name": self.name})

    def write(self, path: str) -> None:
        """Write the calibrated sheet to ``path`` (atomically)."""
        from pathlib import Path

        from loopsim.base.outfile import write_atomic

        write_atomic(path, lambda tmp: Path(tmp).write_text(self.sheet, encoding="utf-8"))

    def _repr_html_(self) -> str:
        from loopsim.base.fmt import fmt_time

        rows = [("bw", f"{self.fit.bw:.4g} B/s")] + [(f"P.{d}", f"{p:.4g} FLOP/s")
                                                      for d, p, fitted in self.fit.flops if fitted]
        rows += [(r.measurement.label, f"measured {fmt_time(r.measurement.time_s)}, predicted "
                  f"{fmt_time(r.predicted_s)}") for r in self.fit.rows]
        return _table(rows, f"calibrated {self.fit.hardware}")

    def plot(self, ax=None):
        """Predicted against measured time per measurement (log-log, the diagonal is exact)."""
        ax = _axes(ax)
        m = [r.measurement.time_s for r in self.fit.rows]
        p = [r.predicted_s for r in self.fit.rows]
        f, unit = _time_scale(m + p)
        ax.loglog([x * f for x in m], [y * f for y in p], "o")
        lo, hi = min(m + p) * f, max(m + p) * f
        ax.plot([lo, hi], [lo, hi], color="0.6", lw=1)
        ax.set_xlabel(f"measured ({unit})")
        ax.set_ylabel(f"predicted ({unit})")
        return ax


def calibrate(measurements, hardware: str, *, name: str = "calibrated", model: str = "auto",
              constants=None) -> Calibrated:
    """``loopsim calibrate MEASUREMENTS -H HARDWARE``: roofs, or the timeline's constants, fitted
    to measured times. ``measurements``: a JSON file's path, or a list of records as that file
    holds them; ``model``: ``roofline``, ``timeline`` or ``auto`` (the better by in-sample error);
    ``constants``: the timeline constants to fit (names; default all the sheet gives)."""
    from loopsim.analyses import calibrate as cal
    from loopsim.targets import hardware as hw_mod

    hw = hw_mod.load(hardware)
    if isinstance(measurements, str):
        ms = cal.load(measurements, hw)
    else:
        ms = [cal.measurement_of(e, hw, f"measurements[{i}]") for i, e in enumerate(measurements)]
    fit = cal.fit(ms, hw, model=model, constants=constants)
    text, origin = cal.base_text(hw)
    sheet = cal.sheet_text(fit, text, origin, name, hw)
    cal.check_sheet(fit, sheet, f"{name}.toml")  # the sheet loads, or nothing is returned
    return Calibrated(fit, sheet, name)
