"""Two times that may overlap: the model's T_best (full overlap) and T_worst (none), seconds.

Shared by the entitlement (:mod:`loopsim.model.entitle`: W/P and Q/BW) and a target's engine
steps (:mod:`loopsim.targets.neuron.engines`), so it sits below both.
"""

from __future__ import annotations


class Overlap:
    """Mixin for a pair of times ``t_compute`` and ``t_memory`` (seconds): T_best assumes they
    overlap fully, T_worst not at all (at most 2x T_best)."""

    __slots__ = ()

    @property
    def T_best(self) -> float:
        return max(self.t_compute, self.t_memory)

    @property
    def T_worst(self) -> float:
        return self.t_compute + self.t_memory
