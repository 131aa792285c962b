"""The search's Pareto fronts as a figure: attainable T against SBUF peak and against Q.

Takes ``axes=None`` (a new Agg-backed Figure with two panels) or one or two Axes to draw into
(one: the SBUF panel only), and returns the Figure; matplotlib is imported here only. Times read
in ns/µs/ms/s and bytes in KiB/MiB/GiB, chosen from the largest value drawn, with no axis offset.
"""

from __future__ import annotations


def time_unit(seconds) -> tuple[float, str]:
    """(factor, unit) so that the largest of ``seconds`` reads below 1000 of the unit."""
    top = max((t for t in seconds if t), default=1.0)
    for f, u in ((1e9, "ns"), (1e6, "µs"), (1e3, "ms")):
        if top * f < 1000:
            return f, u
    return 1.0, "s"


def byte_unit(nbytes) -> tuple[float, str]:
    """(factor, unit) so that the largest of ``nbytes`` reads below 1024 of the unit."""
    top = max(nbytes, default=1)
    for f, u in ((1, "bytes"), (2**-10, "KiB"), (2**-20, "MiB"), (2**-30, "GiB")):
        if top * f < 1024:
            return f, u
    return 2**-40, "TiB"


def front_figure(out, hw, axes=None):
    """Panels from an :class:`loopsim.analyses.search.engine.Outcome`: T against SBUF peak and
    against Q; the top tilings and runner-ups as dots, each front as a step line, the best starred."""
    if axes is None:
        from matplotlib.figure import Figure

        fig = Figure(figsize=(10, 4), layout="constrained")
        axes = fig.subplots(1, 2)
    fig = axes[0].figure
    shown = list(out.top) + list(out.runner_ups)
    panels = ((out.front_sbuf, lambda v: v.sbuf_peak_bytes, "SBUF peak"),
              (out.front_q, lambda v: v.Q, "Q across HBM"))
    every = [c.verdict.T for c in shown + list(out.front_sbuf) + list(out.front_q)]
    tf, tu = time_unit(every)
    for ax, (front, x, xlabel) in zip(axes, panels):
        pts = shown + list(front)
        bf, bu = byte_unit([x(c.verdict) for c in pts])
        ax.scatter([x(c.verdict) * bf for c in shown], [c.verdict.T * tf for c in shown], s=14,
                   color="0.6", label=f"top {len(out.top)} and runner-ups")
        fp = sorted((x(c.verdict) * bf, c.verdict.T * tf) for c in front)
        ax.step([p[0] for p in fp], [p[1] for p in fp], where="post", color="C0",
                marker="o", label="Pareto front")
        b = out.top[0].verdict
        ax.scatter([x(b) * bf], [b.T * tf], marker="*", s=160, color="C3", zorder=3, label="best")
        ax.set_xlabel(f"{xlabel} ({bu})")
        ax.set_ylabel(f"attainable T ({tu})")
        ax.ticklabel_format(useOffset=False, style="plain")
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize="small")
    axes[0].set_title(f"{out.problem.spec} on {hw.name}: T against SBUF", fontsize="medium")
    if len(axes) > 1:
        axes[1].set_title("T against Q", fontsize="medium")
    return fig
