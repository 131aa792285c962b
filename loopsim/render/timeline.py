"""The engine timeline as text and as a picture (rows per queue over time, like the Neuron profiler).

The picture draws one row per queue (DMA queues first, then Tensor, Vector, Scalar, GpSimd) of the
run the timeline model made (the whole kernel, or for a large kernel its cut run: the title says
so), each instruction a bar; the critical path is drawn over them in red (its hops between rows too,
below :data:`BINS` instructions) and each row carries its engine's busy share. Past :data:`BINS` instructions a row is drawn as its busy fraction per time
bin instead of one bar per instruction, so a 10^6-instruction kernel stays readable and quick.
matplotlib is imported inside the functions (Agg figure, pyplot never touched).
"""

from __future__ import annotations

from loopsim.base.fmt import fmt_time

#: instructions above which rows are drawn as busy fraction per time bin
BINS = 4000
ROW_ORDER = ("dma", "tensor", "vector", "scalar", "gpsimd")
COLORS = {"dma": "#4c72b0", "tensor": "#55a868", "vector": "#c44e52", "scalar": "#8172b2",
          "gpsimd": "#ccb974"}


def lines(t) -> list[str]:
    """Readable lines of a :class:`loopsim.targets.neuron.timeline.Timeline`."""
    from loopsim.targets.neuron.timeline import CAUSE_TEXT

    out = [f"T (predicted)      {fmt_time(t.T):>12}   critical path mostly on {t.critical}",
           f"T_best (roofline)  {fmt_time(t.T_best):>12}   T_serial (no overlap) {fmt_time(t.serial)}",
           f"instructions       {t.count:>12,}   " + ", ".join(f"{k} {n:,}" for k, n in t.instructions)]
    if not t.exact:
        cut = ", ".join(f"{v} ({n} trips, run at {r} and {r + 1})" for v, n, r in t.cut)
        out.append(f"  extrapolated from {t.runs} runs of the nest cut to a few iterations of "
                   f"{cut}; {t.simulated:,} instructions simulated")
    out.append("engines (busy share of T, the busiest core):")
    for k, v in t.busy:
        out.append(f"  {k:<8} {fmt_time(v):>12}  {v / t.T if t.T else 0:>6.1%}")
    if t.gap:
        total = t.T - t.T_best
        out.append(f"gap T - T_best = {fmt_time(total)}, on the {t.reference} engine's time:")
        for k, v in t.gap:
            out.append(f"  {k:<16} {fmt_time(v):>12}  {v / total if total else 0:>6.1%}  {CAUSE_TEXT[k]}")
    elif t.T < t.T_best:
        out.append("the timeline runs under T_best (its DMA or engines are faster than the roofline's "
                   "BW or P): T is the roofline's")
    out.append("constants: " + "; ".join(f"{k} {v}" for k, v in t.constants))
    for n in t.notes:
        out.append(f"note: {n}")
    return out


def figure(t, *, title: str | None = None):
    """A Figure of the timeline's largest run: a row per queue, bars (or busy bins), the critical
    path in red, each row's busy share at its right."""
    from matplotlib.figure import Figure
    import numpy as np

    s = t.sched
    qs = sorted(range(len(s.queues)), key=lambda q: (ROW_ORDER.index(s.kinds[q])
                                                      if s.kinds[q] in ROW_ORDER else 9, s.queues[q]))
    row_of = {q: i for i, q in enumerate(qs)}
    n = len(s.start)
    fig = Figure(figsize=(11, 1.2 + 0.45 * max(1, len(qs))))
    ax = fig.add_subplot(1, 1, 1)
    span = s.makespan or 1.0
    unit, scale = (("µs", 1e6) if span < 1e-2 else ("ms", 1e3))
    start = np.asarray(s.start) * scale
    end = np.asarray(s.end) * scale
    queue = np.asarray(s.queue)
    if n <= BINS:
        for q in qs:
            sel = np.nonzero(queue == q)[0]
            ax.broken_barh([(start[i], max(end[i] - start[i], 1e-12)) for i in sel],
                           (row_of[q] - 0.4, 0.8), facecolors=COLORS.get(s.kinds[q], "grey"))
    else:  # busy fraction per time bin
        bins = 600
        edges = np.linspace(0, span * scale, bins + 1)
        for q in qs:
            sel = queue == q
            busy = _binned(start[sel], end[sel], edges)
            ax.bar(edges[:-1], 0.8 * busy, width=edges[1] - edges[0], bottom=row_of[q] - 0.4,
                   align="edge", color=COLORS.get(s.kinds[q], "grey"), linewidth=0)
    cp = s.critical_path()
    if cp:
        xs, ys = [], []
        for i in cp:
            r = row_of[s.queue[i]]
            xs += [start[i], end[i]]
            ys += [r, r]
        if n <= BINS:  # the hops between rows; past BINS they would fill the picture
            ax.plot(xs, ys, color="red", linewidth=0.6, alpha=0.45)
        segs = [(xs[j], ys[j], xs[j + 1]) for j in range(0, len(xs), 2)]
        for j, (x0, y, x1) in enumerate(segs):
            ax.plot([x0, x1], [y, y], color="red", linewidth=2.5, solid_capstyle="butt",
                    label="critical path" if j == 0 else None)
        ax.legend(loc="lower left", bbox_to_anchor=(0.0, 1.0), fontsize=7, frameon=False)
    share = {}
    for q in qs:
        sel = queue == q
        from loopsim.targets.schedule import union_length

        share[q] = union_length(zip(start[sel], end[sel])) / (span * scale)
    ax.set_yticks(range(len(qs)))
    ax.set_yticklabels([_short(s.queues[q]) for q in qs], fontsize=7)
    ax.set_ylim(len(qs) - 0.5, -0.5)
    ax.set_xlim(0, span * scale * 1.08)
    for q in qs:
        ax.text(span * scale * 1.005, row_of[q], f"{share[q]:.0%}", va="center", fontsize=7)
    ax.set_xlabel(f"time ({unit})")
    how = "" if t.exact else f" (cut run: {', '.join(f'{v} {r} of {m}' for v, m, r in t.cut)}; " \
                             f"T extrapolated)"
    ax.set_title(title or f"{t.kernel}: predicted T = {fmt_time(t.T)} (T_best {fmt_time(t.T_best)})"
                 + how, fontsize=9)
    fig.tight_layout()
    return fig


def _short(name: str) -> str:
    return name if len(name) <= 34 else name[:31] + "..."


def _binned(s, e, edges):
    """Busy fraction of each bin of ``edges`` covered by intervals [s, e) (each queue runs one
    instruction at a time, so they do not overlap)."""
    import numpy as np

    w = edges[1] - edges[0]
    out = np.zeros(len(edges) - 1)
    for a, b in zip(s, e):
        i, j = int(a // w), int(b // w)
        if i == j:
            if i < len(out):
                out[i] += b - a
            continue
        out[i] += (i + 1) * w - a
        if j < len(out):
            out[j] += b - j * w
        out[i + 1:min(j, len(out))] += w
    return np.minimum(out / w, 1.0)
