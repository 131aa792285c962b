"""The PE array of one NeuronCore as the clockwork draws it (curriculum Day 3): its geometry read
from a sheet, the limits a matmul instruction's tiles must keep, and the spec of C back-to-back
instructions whose ceilings (:mod:`loopsim.targets.neuron.ceilings`) give the clockwork's numbers.

Units: PEs, elements, cycles, Hz.
"""

from __future__ import annotations

from dataclasses import dataclass

from loopsim.base.errors import InputError
from loopsim.base.limits import MAX_CLOCKWORK_COUNT as MAX_COUNT  # the limits live in one place


@dataclass(frozen=True, slots=True)
class Array:
    """The Tensor Engine of one physical core: ``rows`` x ``cols`` PEs at ``clock_hz``; an
    instruction holds it for at least ``init_cycles`` (MM_INIT_LATENCY; ``init_assumed`` when the
    sheet marks it ASSUMED); the moving tile's free size is at most ``n_max``."""

    rows: int
    cols: int
    clock_hz: int
    init_cycles: int
    init_assumed: bool
    n_max: int


def array_of(hw) -> Array:
    """The sheet's PE array (an InputError for a machine without one)."""
    if hw.family != "neuron":  # a flat machine has one rate P and no PE array to draw
        raise InputError(f"--hardware {hw.name}: its P is not derived from a PE array (a "
                         f"{hw.family} machine); the clockwork needs a NeuronCore sheet")
    return Array(hw.pe_rows, hw.pe_cols, hw.clock_hz, hw.mm_init_cycles, hw.mm_init_assumed,
                 hw.tile_limits()["N"])  # the moving free size: the sheet's one N_t limit


def check(hw, K: int, M: int | None, N: int, count: int, dtype: str) -> None:
    """An :class:`InputError` (one line, naming the option) for a sequence the array cannot run
    as one instruction per moving tile (``M`` None: all the columns), or a sheet that is not one
    physical NeuronCore."""
    a = array_of(hw)  # first: a machine without a PE array is refused by name
    if dtype not in hw.dtypes():
        raise InputError(f"--dtype {dtype}: {hw.name} has no Tensor Engine roof for it "
                         f"(known: {', '.join(hw.dtypes())})")
    if hw.physical_cores != 1:
        raise InputError(f"--hardware {hw.name}: the clockwork is one physical core's Tensor "
                         f"Engine; this sheet is {hw.physical_cores} cores ({hw.scope})")
    M = a.cols if M is None else M
    if hw.P("bf16") != a.rows * a.cols * 2 * a.clock_hz:
        raise InputError(f"--hardware {hw.name}: its P is not derived from a PE array "
                         f"({a.rows} x {a.cols} PEs x 2 x {a.clock_hz:,} Hz is not "
                         f"{hw.P('bf16'):,} FLOP/s); the clockwork needs a sheet that derives it")
    for flag, v, top, what in (("--k", K, a.rows, "PE rows (the contraction)"),
                               ("--m", M, a.cols, "PE columns"),
                               ("--n", N, a.n_max, "the moving tile's free size limit"),
                               ("--count", count, MAX_COUNT, "instructions the page animates")):
        if not 1 <= v <= top:
            raise InputError(f"{flag} {v}: must be 1 to {top} ({what} on {hw.name})")


def spec_text(K: int, M: int, N: int, count: int, dtype: str) -> str:
    """A spec whose nest issues exactly ``count`` matmul instructions of a K x M stationary tile
    and a K x N moving tile (the stationary tile loaded once, so only the instructions differ)."""
    return f'''[kernel]
name = "clockwork"
about = "{count} back-to-back matmul instructions: stationary {K}x{M}, moving {K}x{N}, {dtype}"

[params]
K = {K}
M = {M}
N = {N}
NC = {N * count}

[tensors]
A = {{ shape = ["K", "M"], dtype = "{dtype}" }}
B = {{ shape = ["K", "NC"], dtype = "{dtype}" }}
X = {{ shape = ["M", "NC"], dtype = "{dtype}", output = true }}

[nest]
body = \'\'\'
load A[:, :]
for j in NC by N:
  load B[:, j]
  matmul X[:, j] += A[:, :] @ B[:, j]
  store X[:, j]
\'\'\'
'''
