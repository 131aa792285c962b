"""Engine work the trace charges outside loopsim's op statements, and the engine NKI documents
for each instruction.

Two kinds, both :class:`loopsim.ir.ops.EngineWork` on the traced kernel (the ceilings and the
verdict add them to their engine's busy time; the report lists each with its FILE:LINE):

- *modelled* instructions that make no tensor of their own (``nisa.iota``, ``affine_select``,
  ``tensor_scalar_reduce``'s pass, collectives' link bytes);
- *assumed* work: an ``nki.isa``/``nki.language`` call the shim does not model, on tiles of known
  shape, charged as ``elements x passes`` on the engine of :data:`ENGINE_OF` (one pass per
  element of its output tile: ASSUMED), so the number stays usable and visibly approximate.

Engines are those the NKI ISA reference names for each instruction
(https://awsdocs-neuron.readthedocs-hosted.com/en/latest/nki/api/nki.isa.html, e.g. "tensor_tensor_scan:
Perform a scan operation of two input tiles using Vector Engine", "tensor_partition_reduce: ...
using GpSimd Engine", "iota: Build a constant literal in SBUF using GpSimd Engine"); an entry
marked ASSUMED is one whose engine that index does not state.
"""

from __future__ import annotations

import math

from loopsim.ir.ops import EngineWork

#: instruction -> (engine, source): "isa" the NKI ISA reference index above, "ASSUMED" otherwise
ENGINE_OF: dict[str, tuple[str, str]] = {
    "iota": ("gpsimd", "isa"), "affine_select": ("gpsimd", "isa"),
    "tensor_partition_reduce": ("gpsimd", "isa"), "tensor_tensor_scan": ("vector", "isa"),
    "tensor_scalar_reduce": ("vector", "isa"), "tensor_scalar_cumulative": ("vector", "ASSUMED"),
    "dropout": ("vector", "ASSUMED"), "range_select": ("vector", "ASSUMED"),
    "select_reduce": ("vector", "ASSUMED"), "sequence_bounds": ("gpsimd", "ASSUMED"),
    "bn_stats": ("vector", "isa"), "bn_aggr": ("vector", "isa"),
    "local_gather": ("gpsimd", "ASSUMED"), "nc_n_gather": ("gpsimd", "ASSUMED"),
    "max8": ("vector", "ASSUMED"), "nc_find_index8": ("vector", "ASSUMED"),
    "nc_match_replace8": ("vector", "ASSUMED"), "nc_stream_shuffle": ("vector", "isa"),
    "quantize_mx": ("vector", "ASSUMED"), "nc_matmul_mx": ("tensor", "isa"), "exponential": ("scalar", "ASSUMED"),
    "tensor_copy_predicated": ("vector", "ASSUMED"), "nonzero_with_count": ("gpsimd", "ASSUMED"),
    "rng": ("gpsimd", "ASSUMED"), "rand2": ("gpsimd", "ASSUMED"),
    "tensor_copy_dynamic_src": ("vector", "ASSUMED"), "tensor_copy_dynamic_dst": ("vector", "ASSUMED"),
}

#: the engine of a call not in the table (ASSUMED)
DEFAULT_ENGINE = "vector"

#: calls that do no engine work on tiles (synchronisation, registers, printing): recorded as nothing
NO_WORK = {"core_barrier", "register_move", "register_store",
           "rand_set_state", "rand_get_state", "set_rng_seed", "device_print", "barrier"}


def engine_of(call: str) -> str:
    """The engine charged for instruction ``call`` (its last dotted part)."""
    return ENGINE_OF.get(call.rsplit(".", 1)[-1], (DEFAULT_ENGINE, "ASSUMED"))[0]


def executions(rec) -> int:
    """How many times the statement being recorded runs: the product of the trip counts of the
    loops open around it and of the launch grid (a loop traced iteration by iteration records
    each iteration, so it counts once: its frames carry an ``index``)."""
    return math.prod(r.var.trips for r in rec.stack if not hasattr(r, "index")) * \
        math.prod(g.trips for g in rec.grid)


def call_site(rec) -> str:
    """FILE:LINE of the kernel code making the current call: the innermost frame outside loopsim
    (a helper module's own line when the call is in a helper), the kernel file as the user named it."""
    import os
    import sys

    here = os.path.dirname(os.path.dirname(os.path.dirname(os.path.realpath(__file__))))
    f = sys._getframe(1)
    while f is not None and os.path.realpath(f.f_code.co_filename).startswith(here + os.sep):
        f = f.f_back
    if f is None:
        return rec.shown
    path = f.f_code.co_filename
    shown = rec.shown if os.path.realpath(path) == os.path.realpath(rec.path) else os.path.relpath(path)
    return f"{shown}:{f.f_lineno}"


def charge(rec, call: str, engine: str, elements: int, passes: int = 1, *, assumed: bool = False,
           link_bytes: int = 0, transpose: bool = False) -> EngineWork:
    """Record engine work of ``call`` at the kernel line now running (elements per execution;
    ``transpose``: a Tensor Engine transpose of a [passes, elements / passes] tile)."""
    w = EngineWork(call, engine, int(elements), int(passes), executions(rec), call_site(rec),
                   assumed, int(link_bytes), transpose=transpose)
    if not hasattr(rec, "work"):
        rec.work = []
    rec.work.append(w)
    return w


def charge_matmul(where: str, m: int, n: int, k: int, executions: int) -> EngineWork:
    """A matmul instruction kept outside the nest (its roles the IR cannot index): M x N outputs
    of K multiply-adds per execution on the Tensor Engine, 2*K*M*N FLOPs of W each, ASSUMED in
    that its operands' reuse is not followed."""
    return EngineWork("nc_matmul", "tensor", int(m) * int(n), int(k), int(executions), where,
                      True, 0, True)
