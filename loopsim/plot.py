"""Figures: the roofline with entitlement and measured points, and the SBUF capacity curve.

Every function takes ``ax=None`` (a new Agg-backed Figure is made; pyplot is never touched) or an
Axes to draw into, and returns the Figure; nothing calls ``plt.show()``. matplotlib is imported
inside the functions, so ``import loopsim`` stays free of it.

Roofline coordinates: x is arithmetic intensity I = W/Q (FLOPs/byte), y is a rate (FLOP/s). The
memory roof is y = I * BW, a line of slope 1 on the log-log axes; the compute roof is y = P; they
meet at the ridge I* = P/BW. An entitlement point sits at (I, min(P, I*BW)); its measured point at
(I, W/T_measured), directly below it, with the gap annotated.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Sequence

from .outfile import figure_format, write_atomic


@dataclass(frozen=True, slots=True)
class Point:
    """One kernel on the roofline. ``I`` FLOPs/byte; ``rate`` and ``measured_rate`` FLOP/s;
    ``gap_s`` = T_measured - T_best in seconds; ``fraction`` = T_best / T_measured."""

    label: str
    I: float
    rate: float
    measured_rate: float | None = None
    gap_s: float | None = None
    fraction: float | None = None
    fits: bool = True

    @classmethod
    def from_report(cls, rep, comparison=None, label: str | None = None) -> "Point":
        """From a :class:`loopsim.report.Report` and optionally a :class:`loopsim.measured.Comparison`."""
        e = rep.entitlement
        m = comparison
        return cls(label or rep.counts.kernel, e.I, e.rate,
                   m.rate if m is not None else None, m.gap if m is not None else None,
                   m.fraction_of_entitlement if m is not None else None, rep.counts.residency.fits)

    @property
    def drawable(self) -> bool:
        """Log axes need I > 0 and rate > 0 (a kernel with W = 0 has no point on a FLOP roofline)."""
        return math.isfinite(self.I) and self.I > 0 and self.rate > 0


@dataclass(frozen=True, slots=True)
class Ceiling:
    """A lower roof: ``kind`` "compute" (``value`` FLOP/s, a flat line) or "memory" (``value``
    bytes/s, a slope-1 line)."""

    label: str
    value: float
    kind: str = "compute"


def _new_axes(ax, figsize):
    if ax is not None:
        return ax.figure, ax
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=figsize)
    FigureCanvasAgg(fig)
    return fig, fig.add_subplot()


def _renderer(fig):
    try:
        return fig.canvas.get_renderer()
    except AttributeError:  # a non-Agg canvas (e.g. an interactive backend)
        return fig._get_renderer()


def _si(x: float, unit: str) -> str:
    from .report import _si as si

    return si(x, unit)


# Label placement: each label tries offsets around its anchor, nearest first, and takes the first
# whose box overlaps no box placed before it (nor leaves the axes); else the least-overlapping one.
_DIRECTIONS = ((1, 0.6), (1, -0.6), (-1, 0.6), (-1, -0.6), (0, 1), (0, -1), (1, 0), (-1, 0))
_DISTANCES = (8, 18, 30, 44, 60, 80, 104)


def _overlap(a, b) -> float:
    w = min(a.x1, b.x1) - max(a.x0, b.x0)
    h = min(a.y1, b.y1) - max(a.y0, b.y0)
    return w * h if w > 0 and h > 0 else 0.0


def _place(ax, renderer, xy, text: str, placed: list, *, gid: str, **kw):
    from matplotlib.text import Text

    frame = ax.get_window_extent(renderer)
    ann = ax.annotate(text, xy, xytext=(0, 0), textcoords="offset points", gid=gid, fontsize=8,
                      arrowprops=dict(arrowstyle="-", lw=0.5, color="0.45", shrinkA=0, shrinkB=3),
                      bbox=dict(boxstyle="round,pad=0.15", fc="white", ec="none", alpha=0.8), **kw)
    best = None
    for dist in _DISTANCES:
        for dx, dy in _DIRECTIONS:
            ann.xyann = (dx * dist, dy * dist)
            ann.set_ha("left" if dx > 0 else "right" if dx < 0 else "center")
            ann.set_va("bottom" if dy > 0 else "top" if dy < 0 else "center")
            ann.update_positions(renderer)
            bb = Text.get_window_extent(ann, renderer)  # the text alone, not its leader line
            outside = (bb.x0 < frame.x0) + (bb.x1 > frame.x1) + (bb.y0 < frame.y0) + (bb.y1 > frame.y1)
            cost = sum(_overlap(bb, p) for p in placed) + outside * 1e6
            if best is None or cost < best[0]:
                best = (cost, ann.xyann, ann.get_ha(), ann.get_va(), bb)
            if cost == 0:
                break
        if best[0] == 0:
            break
    _, xyann, ha, va, bb = best
    ann.xyann = xyann
    ann.set_ha(ha)
    ann.set_va(va)
    placed.append(bb)
    return ann


def _marker_box(ax, renderer, x, y, r=5.0):
    from matplotlib.transforms import Bbox

    px, py = ax.transData.transform((x, y))
    return Bbox.from_extents(px - r, py - r, px + r, py + r)


def roofline(points: Sequence, hardware, ax=None, *, dtype: str | None = None,
             ceilings: Sequence[Ceiling] = (), title: str | None = None):
    """Draw the roofline of ``hardware`` for ``dtype`` with one labelled point per kernel.

    ``points``: :class:`Point` values (or Reports, converted with :meth:`Point.from_report`).
    ``dtype``: whose Tensor Engine roof P is drawn (default: the first report's, else bf16).
    ``ceilings``: lower roofs drawn as labelled dashed lines. Returns the Figure.
    """
    from matplotlib.lines import Line2D
    from matplotlib.ticker import EngFormatter

    if dtype is None:
        dtype = next((getattr(p, "dtype") for p in points if hasattr(p, "dtype")), "bf16")
    pts = [p if isinstance(p, Point) else Point.from_report(p) for p in points]
    P, BW = float(hardware.P(dtype)), float(hardware.bw)
    ridge = P / BW
    drawn = [p for p in pts if p.drawable]
    skipped = [p for p in pts if not p.drawable]

    fig, ax = _new_axes(ax, (11, 6.5))
    if ax.figure is fig and len(fig.axes) == 1:
        fig.subplots_adjust(left=0.12, right=0.7, top=0.88, bottom=0.1)
    xs = [p.I for p in drawn] + [ridge] + [c.value / BW for c in ceilings if c.kind == "compute"]
    x0, x1 = min(xs) / 8, max(xs) * 8
    ys = [p.rate for p in drawn] + [p.measured_rate for p in drawn if p.measured_rate]
    ys += [c.value for c in ceilings if c.kind == "compute"]
    y0, y1 = min(ys + [x0 * BW * 4, P]) / 4, P * 4
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlim(x0, x1)
    ax.set_ylim(y0, y1)
    ax.set_xlabel("arithmetic intensity I = W/Q (FLOPs/byte)")
    ax.set_ylabel("performance (FLOP/s)")
    ax.yaxis.set_major_formatter(EngFormatter(unit="FLOP/s"))
    ax.grid(True, which="major", lw=0.4, alpha=0.5)
    kind = getattr(hardware, "roofs", "spec")
    ax.plot([x0, ridge], [x0 * BW, P], color="C0", lw=2, gid="memory-roof",
            label=f"memory roof I·BW, BW = {_si(BW, 'B/s')} ({kind})")
    ax.plot([ridge, x1], [P, P], color="C3", lw=2, gid="compute-roof",
            label=f"compute roof P = {_si(P, 'FLOP/s')} {dtype} ({kind})")
    ax.plot([ridge, ridge], [y0, P], color="0.4", lw=1, ls=":", gid="ridge",
            label=f"ridge I* = P/BW = {ridge:.4g} FLOPs/byte")
    for i, c in enumerate(ceilings):
        style = dict(color=f"C{(i + 4) % 10}", lw=1.2, ls="--", gid=f"ceiling:{c.label}")
        if c.kind == "compute":
            ax.plot([c.value / BW, x1], [c.value, c.value], label=f"ceiling: {c.label} "
                    f"({_si(c.value, 'FLOP/s')})", **style)
        else:
            ax.plot([x0, P / c.value], [x0 * c.value, P], label=f"ceiling: {c.label} "
                    f"({_si(c.value, 'B/s')})", **style)

    renderer = _renderer(fig)
    placed = []
    for i, c in enumerate(ceilings):
        at = (x1, c.value) if c.kind == "compute" else (x0, x0 * c.value)
        t = ax.annotate(c.label, at, xytext=(-4 if c.kind == "compute" else 4, 2),
                        textcoords="offset points", fontsize=7, color=f"C{(i + 4) % 10}",
                        ha="right" if c.kind == "compute" else "left", va="bottom",
                        gid=f"ceiling-label:{c.label}")
        placed.append(t.get_window_extent(renderer))
    ridge_text = ax.annotate(f"ridge {ridge:.4g}", (ridge, y0), xytext=(3, 4),
                             textcoords="offset points", fontsize=8, color="0.3", gid="ridge-label",
                             rotation=90, ha="left", va="bottom")
    placed.append(ridge_text.get_window_extent(renderer))
    for i, p in enumerate(drawn):
        placed.append(_marker_box(ax, renderer, p.I, p.rate))
        if p.measured_rate:
            placed.append(_marker_box(ax, renderer, p.I, p.measured_rate))
    for i, p in enumerate(drawn):
        color = f"C{(i + 1) % 10}" if (i + 1) % 10 != 3 else "C9"
        ax.plot([p.I], [p.rate], marker="o" if p.fits else "X", ms=8, color=color, ls="none",
                gid=f"point:{p.label}", mec="black" if p.fits else "red")
        text = f"{p.label}\nI = {p.I:.4g}, {_si(p.rate, 'FLOP/s')}" + ("" if p.fits else
                                                                         "\n(does not fit SBUF)")
        _place(ax, renderer, (p.I, p.rate), text, placed, gid=f"label:{p.label}")
        if p.measured_rate:
            ax.plot([p.I, p.I], [p.rate, p.measured_rate], color=color, lw=1, ls="--",
                    gid=f"gap:{p.label}")
            ax.plot([p.I], [p.measured_rate], marker="v", ms=8, mfc="white", mec=color, mew=2,
                    ls="none", gid=f"measured:{p.label}")
            mtext = (f"{p.label} measured: {_si(p.measured_rate, 'FLOP/s')}\n"
                     f"gap {_si(p.gap_s, 's')}, {p.fraction:.0%} of entitlement")
            _place(ax, renderer, (p.I, p.measured_rate), mtext, placed, gid=f"measured-label:{p.label}")
    if skipped:
        ax.text(0.01, 0.01, "not on a FLOP roofline (W = 0): " + ", ".join(p.label for p in skipped),
                transform=ax.transAxes, fontsize=8, color="0.3", gid="skipped")
    handles, _ = ax.get_legend_handles_labels()
    handles += [Line2D([], [], marker="o", ls="none", color="0.5", mec="black",
                       label="entitled (I, min(P, I·BW))")]
    if any(p.measured_rate for p in drawn):
        handles.append(Line2D([], [], marker="v", ls="none", mfc="white", mec="0.3", mew=2,
                              label="measured (I, W/T_measured)"))
    if any(not p.fits for p in drawn):
        handles.append(Line2D([], [], marker="X", ls="none", color="0.5", mec="red",
                              label="does not fit SBUF"))
    ax.legend(handles=handles, loc="upper left", bbox_to_anchor=(1.02, 1.0), fontsize=8,
              frameon=False)
    scope = getattr(hardware, "scope", "")
    ax.set_title(title or f"Roofline on {hardware.name}: {scope}\n{dtype}, {kind} roofs", fontsize=10)
    return fig


def capacity_curve(curve, ax=None):
    """Q (top) and r per input (bottom) against SBUF capacity for each policy of a
    :class:`loopsim.capacity.CapacityCurve`, compulsory Q and the sheet's capacity marked."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure
    from matplotlib.ticker import EngFormatter

    if ax is None:
        fig = Figure(figsize=(9, 7.5))
        FigureCanvasAgg(fig)
        ax_q, ax_r = fig.subplots(2, 1, sharex=True)
    else:
        fig, ax_q, ax_r = ax.figure, ax, None
    styles = {"lru": dict(color="C0", marker="o"), "opt": dict(color="C2", marker="s")}
    for policy in curve.policies:
        rows = [r for r in curve.rows if r.policy == policy]
        ax_q.plot([r.capacity_bytes for r in rows], [r.Q for r in rows], ms=4, lw=1.5,
                  label=f"Q ({policy})", gid=f"Q:{policy}", **styles.get(policy, {}))
        if ax_r is not None:
            for j, name in enumerate(curve.inputs):
                ax_r.plot([r.capacity_bytes for r in rows], [dict(r.r)[name] for r in rows],
                          ms=3, lw=1.2, ls="-" if policy == "lru" else "--",
                          color=f"C{(j + 4) % 10}", marker=styles.get(policy, {}).get("marker"),
                          label=f"r_{name} ({policy})", gid=f"r:{name}:{policy}")
    axes = [ax_q] + ([ax_r] if ax_r is not None else [])
    ax_q.axhline(curve.compulsory_Q, color="0.3", ls="--", lw=1, gid="compulsory",
                 label=f"compulsory Q = {curve.compulsory_Q:,} bytes")
    for a in axes:
        a.set_xscale("log")
        a.axvline(curve.sheet_capacity_bytes, color="C3", ls=":", lw=1.5, gid="sheet-capacity",
                  label=f"{curve.hardware} SBUF = {curve.sheet_capacity_bytes:,} bytes")
        a.grid(True, lw=0.4, alpha=0.5)
        a.legend(fontsize=8)
    ax_q.set_ylabel("Q, bytes across HBM")
    ax_q.yaxis.set_major_formatter(EngFormatter(unit="B"))
    ax_q.set_title(f"{curve.kernel} on {curve.hardware}: Q against SBUF capacity", fontsize=10)
    last = axes[-1]
    last.set_xlabel("SBUF capacity (bytes" + (f", {curve.partitions} partitions)" if
                                                curve.partitions else ")"))
    last.xaxis.set_major_formatter(EngFormatter(unit="B"))
    if ax_r is not None:
        ax_r.set_ylabel("r: reads per byte of each input")
    return fig


def save(fig, path: str, flag: str = "-o") -> None:
    """Write ``fig`` to ``path`` (.png, .svg or .pdf) whole or not at all."""
    fmt = figure_format(path, flag)
    write_atomic(path, lambda tmp: fig.savefig(tmp, format=fmt, dpi=150, bbox_inches="tight"), flag)
