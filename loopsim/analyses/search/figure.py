"""The search's Pareto fronts as a figure: attainable T against SBUF peak and against Q.

Takes ``axes=None`` (a new Agg-backed Figure with two panels) or two Axes to draw into, and returns
the Figure; matplotlib is imported here only.
"""

from __future__ import annotations


def front_figure(out, hw, axes=None):
    """Two panels from an :class:`loopsim.analyses.search.engine.Outcome`: T (s) against SBUF peak (bytes)
    and against Q (bytes); the top tilings as dots, each front as a step line, the best starred."""
    if axes is None:
        from matplotlib.figure import Figure

        fig = Figure(figsize=(10, 4), layout="constrained")
        axes = fig.subplots(1, 2)
    fig = axes[0].figure
    panels = ((axes[0], out.front_sbuf, lambda v: v.sbuf_peak_bytes, "SBUF peak (bytes)"),
              (axes[1], out.front_q, lambda v: v.Q, "Q (bytes across HBM)"))
    for ax, front, x, xlabel in panels:
        ax.scatter([x(c.verdict) for c in out.top], [c.verdict.T for c in out.top], s=14,
                   color="0.6", label=f"top {len(out.top)}")
        pts = sorted((x(c.verdict), c.verdict.T) for c in front)
        ax.step([p[0] for p in pts], [p[1] for p in pts], where="post", color="C0",
                marker="o", label="Pareto front")
        b = out.top[0].verdict
        ax.scatter([x(b)], [b.T], marker="*", s=160, color="C3", zorder=3, label="best")
        ax.set_xlabel(xlabel)
        ax.set_ylabel("attainable T (s)")
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize="small")
    axes[0].set_title(f"{out.problem.spec} on {hw.name}: T against SBUF", fontsize="medium")
    axes[1].set_title("T against Q", fontsize="medium")
    return fig
