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

from loopsim.base.outfile import figure_format, write_atomic


@dataclass(frozen=True, slots=True)
class Point:
    """One kernel on the roofline. ``I`` FLOPs/byte; ``rate`` (W / T, T the point's own time: the
    verdict's) and ``measured_rate`` (W / T_measured) FLOP/s; ``gap_s`` = T_measured - T in
    seconds; ``fraction`` = T / T_measured = measured_rate / rate: the measured point's percentage
    is against the point it is drawn below."""

    label: str
    I: float
    rate: float
    measured_rate: float | None = None
    gap_s: float | None = None
    fraction: float | None = None
    fits: bool = True

    @classmethod
    def from_report(cls, rep, comparison=None, label: str | None = None) -> "Point":
        """From a :class:`loopsim.model.pipeline.Analysis` (at its attainable rate W/T, every roof and
        ceiling counted) and optionally a :class:`loopsim.model.measured.Comparison`."""
        e = rep.entitlement
        m = comparison
        T = getattr(rep, "T", None)
        rate = e.W / T if T else e.rate
        return cls(label or rep.counts.kernel, e.I, rate,
                   m.rate if m is not None else None,
                   m.T - T if m is not None and T else m.gap if m is not None else None,
                   (T / m.T if T else m.fraction_of_entitlement) if m is not None else None,
                   getattr(rep, "feasible", rep.counts.residency.fits))

    @property
    def drawable(self) -> bool:
        """Log axes need I > 0 and rate > 0 (a kernel with W = 0 has no point on a FLOP roofline)."""
        return math.isfinite(self.I) and self.I > 0 and self.rate > 0


@dataclass(frozen=True, slots=True)
class Ceiling:
    """A lower roof: ``kind`` "compute" (``value`` FLOP/s, a flat line) or "memory" (``value``
    bytes/s, a slope-1 line). ``kernels``: the labels of the points it holds for (empty: all)."""

    label: str
    value: float
    kind: str = "compute"
    kernels: tuple[str, ...] = ()


#: the roofline's size, whatever the number of points: 12 x 7 in, saved at DPI -> 1800 x 1050 px
FIGSIZE = (12.0, 7.0)
DPI = 150
#: the capacity curve's size: 9 x 7.5 in -> 1350 x 1125 px
CAPACITY_FIGSIZE = (9.0, 7.5)


def _new_figure(figsize):
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=figsize, dpi=DPI)
    FigureCanvasAgg(fig)
    return fig


def _renderer(fig):
    try:
        return fig.canvas.get_renderer()
    except AttributeError:  # a non-Agg canvas (e.g. an interactive backend)
        return fig._get_renderer()


def _si(x: float, unit: str) -> str:
    from loopsim.base.fmt import si

    return si(x, unit)


def iec(n: float) -> str:
    """Bytes in IEC units (1 KiB = 1024 B): ``1.5 MiB``, ``512 B``."""
    for unit, size in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if abs(n) >= size:
            return f"{n / size:.4g} {unit}"
    return f"{n:.4g} B"


def _keys_text(keys: list[int]) -> str:
    """1, 2, 3, 5 -> '1-3,5' (runs of consecutive keys as ranges)."""
    runs, out = [], []
    for k in sorted(keys):
        if runs and k == runs[-1][1] + 1:
            runs[-1][1] = k
        else:
            runs.append([k, k])
    for a, b in runs:
        out.append(str(a) if a == b else f"{a},{b}" if b == a + 1 else f"{a}–{b}")
    return ",".join(out)


class _Placer:
    """Places text boxes (display pixels) so that none overlaps another, a marker or a line, and
    each stays inside ``frame``. A label tries offsets around its anchor, nearest first, and takes
    the first free one; :meth:`place` returns None when none is free."""

    DIRECTIONS = ((1, 0.5), (1, -0.5), (-1, 0.5), (-1, -0.5), (0, 1), (0, -1), (1, 0), (-1, 0),
                  (1, 1), (-1, 1), (1, -1), (-1, -1))
    DISTANCES = (4, 9, 16, 26, 40, 58, 80, 106, 136)  # points

    def __init__(self, frame, dpi: float):
        import numpy as np

        self.np = np
        self.frame = frame
        self.scale = dpi / 72.0
        self.boxes = np.zeros((0, 4))

    def block(self, x0, y0, x1, y1):
        self.boxes = self.np.vstack([self.boxes, [[x0, y0, x1, y1]]])

    def block_line(self, pts, pad: float = 2.5, step: float = 5.0):
        """Obstacles along a polyline given in display pixels."""
        np = self.np
        pts = np.asarray(pts, float)
        for (xa, ya), (xb, yb) in zip(pts[:-1], pts[1:]):
            n = max(2, int(math.hypot(xb - xa, yb - ya) / step) + 1)
            xs, ys = np.linspace(xa, xb, n), np.linspace(ya, yb, n)
            self.boxes = np.vstack([self.boxes, np.c_[xs - pad, ys - pad, xs + pad, ys + pad]])

    def free(self, b) -> bool:
        f, bx = self.frame, self.boxes
        if b[0] < f.x0 + 1 or b[2] > f.x1 - 1 or b[1] < f.y0 + 1 or b[3] > f.y1 - 1:
            return False
        if not len(bx):
            return True
        w = self.np.minimum(bx[:, 2], b[2]) - self.np.maximum(bx[:, 0], b[0])
        h = self.np.minimum(bx[:, 3], b[3]) - self.np.maximum(bx[:, 1], b[1])
        return not bool(((w > 0) & (h > 0)).any())

    def place(self, anchor, size, candidates=None):
        """(offset in points, ha, va, box) of the first free position for a ``size`` (w, h) box."""
        (ax_, ay), (w, h) = anchor, size
        cands = candidates or [(d * dx, d * dy) for d in self.DISTANCES for dx, dy in self.DIRECTIONS]
        for ox, oy in cands:
            ha = "left" if ox > 0 else "right" if ox < 0 else "center"
            va = "bottom" if oy > 0 else "top" if oy < 0 else "center"
            x = ax_ + ox * self.scale - (0 if ha == "left" else w if ha == "right" else w / 2)
            y = ay + oy * self.scale - (0 if va == "bottom" else h if va == "top" else h / 2)
            box = (x - 1, y - 1, x + w + 1, y + h + 1)
            if self.free(box):
                self.block(*box)
                return (ox, oy), ha, va, box
        return None


def _text_size(fig, renderer, text: str, **kw) -> tuple[float, float]:
    t = fig.text(0, 0, text, **kw)
    bb = t.get_window_extent(renderer)
    t.remove()
    return bb.width, bb.height


def _clusters(disp, radius: float) -> list[list[int]]:
    """Indices grouped by display distance: a point joins the first cluster whose first member is
    within ``radius`` pixels (coincident points always share one)."""
    out: list[list[int]] = []
    for i in sorted(range(len(disp)), key=lambda i: tuple(disp[i])):
        for c in out:
            if math.dist(disp[c[0]], disp[i]) <= radius:
                c.append(i)
                break
        else:
            out.append([i])
    return out


def roofline(points: Sequence, hardware, ax=None, *, dtype: str | None = None,
             ceilings: Sequence[Ceiling] = (), title: str | None = None):
    """Draw the roofline of ``hardware`` for ``dtype`` with one point per kernel; returns the Figure.

    ``points``: :class:`Point` values (or Analyses, converted with :meth:`Point.from_report`); a
    point's rate is the caller's: the attainable W/T (on or below the roofline) or the roofline's.
    Points are numbered 1, 2, ... by intensity I; each mark is labelled with its key, points that
    coincide (or would crowd each other) share one label (``3–5``), and a key table beside the
    axes maps keys to tilings with I and the entitled rate. ``dtype``: whose Tensor Engine roof P
    is drawn (default: the first report's, else bf16). ``ceilings``: lower roofs, drawn faintly
    and only over the intensities of the kernels they bind (``Ceiling.kernels``, all when empty)
    for which they lie below the roofline min(P, I·BW); their labels sit inside the axes. With ``ax=None`` the figure is
    :data:`FIGSIZE` whatever the number of points; with an ``ax``, the key table is drawn in an
    inset to its right.
    """
    from matplotlib.lines import Line2D
    from matplotlib.ticker import EngFormatter

    if dtype is None:
        dtype = next((getattr(p, "dtype") for p in points if hasattr(p, "dtype")), "bf16")
    pts = [p if isinstance(p, Point) else Point.from_report(p) for p in points]
    P, BW = float(hardware.P(dtype)), float(hardware.bw)
    ridge = P / BW
    drawn = sorted((p for p in pts if p.drawable), key=lambda p: (p.I, -p.rate))
    skipped = [p for p in pts if not p.drawable]
    keys = {id(p): i + 1 for i, p in enumerate(drawn)}

    if ax is None:
        fig = _new_figure(FIGSIZE)
        ax = fig.add_axes((0.105, 0.09, 0.475, 0.83))
        side = fig.add_axes((0.60, 0.02, 0.39, 0.94))
    else:
        fig = ax.figure
        side = ax.inset_axes((1.03, 0.0, 0.75, 1.0))
    side.set_axis_off()

    xs = [p.I for p in drawn] + [ridge]
    x0, x1 = min(xs) / 8, max(xs) * 8
    ys = [p.rate for p in drawn] + [p.measured_rate for p in drawn if p.measured_rate]
    y0, y1 = min(ys + [x0 * BW * 4, P]) / 4, P * 4
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlim(x0, x1)
    ax.set_ylim(y0, y1)
    ax.set_xlabel("arithmetic intensity I = W/Q (FLOPs/byte)")
    ax.set_ylabel("performance (FLOP/s)")
    ax.yaxis.set_major_formatter(EngFormatter(unit="FLOP/s"))
    ax.grid(True, which="major", lw=0.4, alpha=0.4)
    kind = getattr(hardware, "roofs", "spec")
    scope = getattr(hardware, "scope", "")
    ax.set_title(title or f"Roofline on {hardware.name} ({dtype}, {kind} roofs)", fontsize=10)
    ax.plot([x0, ridge], [x0 * BW, P], color="C0", lw=2, gid="memory-roof")
    ax.plot([ridge, x1], [P, P], color="C3", lw=2, gid="compute-roof")
    ax.plot([ridge, ridge], [y0, P], color="0.4", lw=1, ls=":", gid="ridge")

    # ceilings: only where they bind (below a kernel's roofline), over those kernels' intensities
    shown_ceilings = []
    for i, c in enumerate(ceilings):
        who = [p for p in drawn if (not c.kernels or p.label in c.kernels)]
        if c.kind == "compute":  # it binds where it is below the kernel's roofline
            who = [p for p in who if min(P, p.I * BW) > c.value * (1 + 1e-9)]
            if not who:
                continue
            lo = max(c.value / BW, min(p.I for p in who) / 1.6)
            hi = min(x1, max(p.I for p in who) * 1.6)
            xy = ([lo, hi], [c.value, c.value])
        else:
            xy = ([x0, P / c.value], [x0 * c.value, P])
        style = dict(color=f"C{(i + 4) % 10}", lw=1, ls="--", alpha=0.6)
        ax.plot(*xy, gid=f"ceiling:{c.label}", **style)
        shown_ceilings.append((c, xy, style["color"]))

    fig.canvas.draw()  # fixes the layout, so display coordinates below are final
    renderer = _renderer(fig)
    placer = _Placer(ax.get_window_extent(renderer), fig.dpi)
    T = ax.transData
    placer.block_line(T.transform([(x0, x0 * BW), (ridge, P), (x1, P)]))
    placer.block_line(T.transform([(ridge, y0), (ridge, P)]))
    for c, (cx, cy), _ in shown_ceilings:
        placer.block_line(T.transform(list(zip(cx, cy))))
    disp = [T.transform((p.I, p.rate)) for p in drawn]
    for p in drawn:
        for y in (p.rate, p.measured_rate):
            if y:
                px, py = T.transform((p.I, y))
                placer.block(px - 5, py - 5, px + 5, py + 5)

    # small labels: the ridge, then the ceilings (at either end of their line, inside the axes)
    fs_small = 7
    txt = f"ridge {ridge:.4g}"
    w, h = _text_size(fig, renderer, txt, fontsize=fs_small, rotation=90)
    at = placer.place(T.transform((ridge, y0)), (w, h), [(3, 3), (-3, 3)])
    if at:
        ax.annotate(txt, (ridge, y0), xytext=at[0], textcoords="offset points", fontsize=fs_small,
                    color="0.3", rotation=90, ha=at[1], va=at[2], gid="ridge-label")
    for c, (cx, cy), color in shown_ceilings:
        w, h = _text_size(fig, renderer, c.label, fontsize=fs_small)
        for end in ((cx[0], cy[0]), (cx[-1], cy[-1])):
            sign = 1 if end[0] == cx[0] else -1
            at = placer.place(T.transform(end), (w, h), [(sign * 2, 2), (sign * 2, -2), (sign * 20, 2)])
            if at:
                ax.annotate(c.label, end, xytext=at[0], textcoords="offset points", fontsize=fs_small,
                            color=color, ha=at[1], va=at[2], gid=f"ceiling-label:{c.label}")
                break

    # the marks and their key labels; crowded points share a label, widening until all fit
    for p in drawn:
        color = "C2" if p.fits else "C1"
        ax.plot([p.I], [p.rate], marker="o" if p.fits else "X", ms=6, color=color, ls="none",
                mec="black" if p.fits else "red", mew=0.6, gid=f"point:{p.label}", zorder=3)
        if p.measured_rate:
            ax.plot([p.I, p.I], [p.rate, p.measured_rate], color="0.35", lw=0.8, ls="--",
                    gid=f"gap:{p.label}", zorder=2)
            ax.plot([p.I], [p.measured_rate], marker="v", ms=6, mfc="white", mec="0.2", mew=1.2,
                    ls="none", gid=f"measured:{p.label}", zorder=3)
    fs = 8
    base = placer.boxes.copy()
    for radius in (1.0, 8.0, 16.0, 32.0, 64.0, 128.0, 1e9):
        placer.boxes = base.copy()
        groups = _clusters(disp, radius)
        plan, ok = [], True
        for g in groups:
            text = _keys_text([keys[id(drawn[i])] for i in g])
            anchor = tuple(sum(disp[i][k] for i in g) / len(g) for k in (0, 1))
            at = placer.place(anchor, _text_size(fig, renderer, text, fontsize=fs))
            if at is None:
                ok = False
                break
            plan.append((g, text, at))
            for i in g:
                p = drawn[i]
                if p.measured_rate:
                    mt = f"{keys[id(p)]}: {p.fraction:.0%}" if p.fraction is not None else str(keys[id(p)])
                    at_m = placer.place(T.transform((p.I, p.measured_rate)),
                                        _text_size(fig, renderer, mt, fontsize=fs - 1))
                    if at_m is None:
                        ok = False
                        break
                    plan.append(([i], mt, at_m, "measured"))
            if not ok:
                break
        if ok:
            break
    for item in plan:
        g, text, (off, ha, va, _) = item[:3]
        measured = len(item) > 3
        p0 = drawn[g[0]]
        xy = T.inverted().transform(tuple(sum(disp[i][k] for i in g) / len(g) for k in (0, 1))) \
            if not measured else (p0.I, p0.measured_rate)
        far = math.hypot(*off) > 10
        ax.annotate(text, xy, xytext=off, textcoords="offset points", fontsize=fs - measured,
                    ha=ha, va=va, color="0.1", zorder=4,
                    gid=("measured-label:" if measured else "label:") + ",".join(drawn[i].label for i in g),
                    arrowprops=dict(arrowstyle="-", lw=0.4, color="0.5", shrinkA=0, shrinkB=2)
                    if far else None)
    if skipped:
        ax.text(0.01, 0.01, _clip("not on a FLOP roofline (W = 0): " +
                                  ", ".join(p.label for p in skipped), 90),
                transform=ax.transAxes, fontsize=7, color="0.3", gid="skipped")

    # beside the axes: what the lines are, then the key table
    handles = [Line2D([], [], color="C0", lw=2, label=f"memory roof I·BW, BW = {_si(BW, 'B/s')}"),
               Line2D([], [], color="C3", lw=2, label=f"compute roof P = {_si(P, 'FLOP/s')} ({dtype})"),
               Line2D([], [], color="0.4", lw=1, ls=":", label=f"ridge I* = P/BW = {ridge:.4g} FLOPs/byte"),
               Line2D([], [], marker="o", ls="none", color="C2", mec="black", mew=0.6,
                      label="tiling at (I, W/T), T attainable: every roof and ceiling")]
    if shown_ceilings:
        handles.append(Line2D([], [], color="0.4", lw=1, ls="--", alpha=0.6,
                              label="lower ceiling, over the kernels it binds"))
    if any(p.measured_rate for p in drawn):
        handles.append(Line2D([], [], marker="v", ls="none", mfc="white", mec="0.2", mew=1.2,
                              label="measured (I, W/T_measured), % = T / T_measured of its point"))
    if any(not p.fits for p in drawn):
        handles.append(Line2D([], [], marker="X", ls="none", color="C1", mec="red",
                              label="does not fit SBUF"))
    leg = side.legend(handles=handles, loc="upper left", bbox_to_anchor=(0, 1), fontsize=7.5,
                      frameon=False, borderaxespad=0, title=_clip(f"{hardware.name}: {scope}", 70),
                      title_fontsize=7.5, alignment="left")
    fig.canvas.draw()
    sb = side.get_window_extent(renderer)
    lb = leg.get_window_extent(renderer)
    _key_table(fig, side, renderer, drawn, keys, top=lb.y0 - 8, box=sb)
    return fig


def _clip(s: str, n: int) -> str:
    return s if len(s) <= n else s[:n - 1] + "…"


def _key_table(fig, side, renderer, drawn, keys, *, top: float, box) -> None:
    """Rows ``key  tiling  I  rate`` in monospace, in as many columns and as small a font as it
    takes to fit between ``top`` and the bottom of ``box`` (display pixels)."""
    if not drawn:
        return
    rows = []
    for p in drawn:
        extra = ""
        if p.measured_rate:
            extra = f"  meas. {_si(p.measured_rate, 'FLOP/s')}"
            if p.fraction is not None:
                extra += f" ({p.fraction:.0%})"
        rows.append((keys[id(p)], p.label + ("" if p.fits else " !cannot run"),
                     f"{p.I:.4g}  {_si(p.rate, 'FLOP/s')}{extra}"))
    kw = max(len(str(k)) for k, *_ in rows)
    name_len = max(len(n) for _, n, _ in rows)
    stat_len = max(len(st) for *_, st in rows)
    height = top - box.y0
    # the largest font at which every name fits whole (stats dropped first when columns are narrow)
    for fs in (7.5, 7.0, 6.5, 6.0, 5.5, 5.0, 4.5):
        line = fs * 1.3 * fig.dpi / 72
        per_col = max(1, int(height / line) - 1)  # one line for the header
        ncols = -(-len(rows) // per_col)
        char = fs * 0.602 * fig.dpi / 72  # DejaVu Sans Mono advance: 0.602 em
        chars = int(box.width / ncols / char) - 2
        if chars >= kw + 2 + min(name_len, 34):
            break
    name_w = min(name_len, chars - kw - 2)
    stat_w = chars - kw - name_w - 4
    stat_w = stat_len if stat_w >= stat_len else 0  # whole or not at all
    if stat_w:
        fmt = lambda k, n, st: f"{k:>{kw}}  {_clip(n, name_w):<{name_w}}  {st}"
    else:
        fmt = lambda k, n, st: f"{k:>{kw}}  {_clip(n, name_w)}"
    head = fmt("#", "tiling", "I, rate (FLOP/s)")
    tr = side.transAxes.inverted()
    for col in range(ncols):
        chunk = rows[col * per_col:(col + 1) * per_col]
        x = box.x0 + col * box.width / ncols
        lines = [head] + [fmt(*r) for r in chunk]
        for j, text in enumerate(lines):
            y = top - j * line
            side.text(*tr.transform((x, y)), text, transform=side.transAxes, fontsize=fs,
                      family="monospace", va="top", ha="left", gid="key" if j else "key-header",
                      color="0.1" if j else "0.35")


def capacity_curve(curve, ax=None):
    """Q (top) and r per input (bottom) against SBUF capacity for each policy of a
    :class:`loopsim.analyses.capacity.CapacityCurve`, drawn as steps (Q of capacity is a step function;
    between two samples the step holds the value of the smaller capacity, an upper bound for LRU,
    whose Q never rises with capacity), Q on a log axis when it spans more than 8x, bytes in IEC
    units, compulsory Q and the sheet's capacity marked. Returns the Figure."""
    from matplotlib.ticker import FuncFormatter, LogLocator, MultipleLocator

    if ax is None:
        fig = _new_figure(CAPACITY_FIGSIZE)
        ax_q, ax_r = fig.subplots(2, 1, sharex=True)
        fig.subplots_adjust(left=0.12, right=0.97, top=0.93, bottom=0.08, hspace=0.12)
    else:
        fig, ax_q, ax_r = ax.figure, ax, None
    byte_fmt = FuncFormatter(lambda v, _: iec(v))
    styles = {"lru": dict(color="C0", marker="o"), "opt": dict(color="C2", marker="s")}
    for policy in curve.policies:
        rows = [r for r in curve.rows if r.policy == policy]
        ax_q.plot([r.capacity_bytes for r in rows], [r.Q for r in rows], ms=4, lw=1.5,
                  drawstyle="steps-post", label=f"Q ({policy})", gid=f"Q:{policy}",
                  **styles.get(policy, {}))
        if ax_r is not None:
            for j, name in enumerate(curve.inputs):
                ax_r.plot([r.capacity_bytes for r in rows], [dict(r.r)[name] for r in rows],
                          ms=3, lw=1.2, ls="-" if policy == "lru" else "--", drawstyle="steps-post",
                          color=f"C{(j + 4) % 10}", marker=styles.get(policy, {}).get("marker"),
                          label=f"r_{name} ({policy})", gid=f"r:{name}:{policy}")
    axes = [ax_q] + ([ax_r] if ax_r is not None else [])
    ax_q.axhline(curve.compulsory_Q, color="0.3", ls="--", lw=1, gid="compulsory",
                 label=f"compulsory Q = {iec(curve.compulsory_Q)}")
    qs = [r.Q for r in curve.rows if r.Q > 0] + [curve.compulsory_Q]
    if min(qs) > 0 and max(qs) / min(qs) > 8:
        ax_q.set_yscale("log", base=2)
        ax_q.yaxis.set_major_locator(LogLocator(base=4))
    else:  # a linear axis from 0, ticks at a power-of-two number of bytes
        ax_q.set_ylim(0, max(qs) * 1.15)
        ax_q.yaxis.set_major_locator(MultipleLocator(2 ** math.ceil(math.log2(max(qs) / 6))))
    for a in axes:
        a.set_xscale("log", base=2)
        a.xaxis.set_major_locator(LogLocator(base=4))
        a.axvline(curve.sheet_capacity_bytes, color="C3", ls=":", lw=1.5, gid="sheet-capacity",
                  label=f"{curve.hardware} SBUF = {iec(curve.sheet_capacity_bytes)}")
        a.grid(True, lw=0.4, alpha=0.5)
        a.legend(fontsize=8, loc="upper right")
    ax_q.set_ylabel("Q, bytes across HBM")
    ax_q.yaxis.set_major_formatter(byte_fmt)
    ax_q.set_title(f"{curve.kernel} on {curve.hardware}: Q against SBUF capacity", fontsize=10)
    last = axes[-1]
    last.set_xlabel("SBUF capacity (whole SBUF" + (f", {curve.lanes} partitions)" if
                                                     curve.lanes else ")"))
    last.xaxis.set_major_formatter(byte_fmt)
    if ax_r is not None:
        ax_r.set_ylabel("r: reads per byte of each input")
    return fig


def save(fig, path: str, flag: str = "-o") -> None:
    """Write ``fig`` to ``path`` (.png, .svg or .pdf) whole or not at all, at its own size
    (:data:`DPI` dots per inch for .png)."""
    fmt = figure_format(path, flag)
    write_atomic(path, lambda tmp: fig.savefig(tmp, format=fmt, dpi=DPI), flag)
