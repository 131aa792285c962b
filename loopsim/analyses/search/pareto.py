"""Pareto fronts: the points no other point beats in both of two quantities (smaller is better)."""

from __future__ import annotations

from typing import Callable, Sequence, TypeVar

P = TypeVar("P")


def front(points: Sequence[P], x: Callable[[P], float], y: Callable[[P], float],
          tie: Callable[[P], tuple] = lambda p: ()) -> list[P]:
    """The points not dominated in (x, y), ordered by x. A point is dominated when another is no
    larger in both and smaller in one; of equal points the first by ``tie`` is kept."""
    out: list[P] = []
    best_y = None
    for p in sorted(points, key=lambda p: (x(p), y(p), tie(p))):
        if best_y is None or y(p) < best_y:
            out.append(p)
            best_y = y(p)
    return out
