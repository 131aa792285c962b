"""The Tensor Engine clockwork (curriculum Day 3): C back-to-back matmul instructions, each a
K x M stationary tile and a K x N moving tile, on the PE array of one sheet, cycle by cycle.

The numbers are not computed here: the sequence is written as a spec
(:func:`loopsim.targets.neuron.clockwork.spec_text`: the stationary tile loaded once, C moving
tiles streamed against it, every output tile stored) and entitled by the one pipeline, so the
page shows exactly what ``loopsim ceilings`` says of that spec. What this module adds is the
reading of those ceilings as a clock:

- P = rows x cols x 2 FLOP x clock_hz (the sheet's bf16 roof of one core),
- rows used = K of the rows (partition fill K / rows), columns used = M of the columns,
- cycles per instruction = max(N, MM_INIT) x the dtype's slowdown (4 for fp32),
- effective rate = W / (C x cycles per instruction x one cycle), the ``combined`` ceiling.

Units: cycles, seconds, FLOPs, FLOP/s.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Clockwork:
    """One sequence of matmul instructions on one sheet's Tensor Engine, as the ceilings model
    sees it. Cycle counts are integers; rates in FLOP/s, times in seconds."""

    hardware: str
    scope: str
    dtype: str
    K: int
    M: int
    N: int
    count: int
    rows: int  # PE rows of the array
    cols: int  # PE columns
    clock_hz: int
    init_cycles: int  # MM_INIT_LATENCY
    init_assumed: bool
    P: int  # bf16 peak of the core, FLOP/s (= rows x cols x 2 x clock_hz)
    P_dtype: int  # the dtype's roof, FLOP/s
    dtype_factor: float  # P_dtype / P
    slowdown: int  # cycles per instruction relative to bf16 (4 for fp32)
    rows_eff: int  # rows a full contraction fills (rows x max(1, dtype factor): fp8 double-row)
    cycles_per_instruction: int  # max(N, MM_INIT) x slowdown
    total_cycles: int
    W: int  # FLOPs of the sequence: 2 K M N C
    instruction_s: float  # seconds per instruction, from the ceilings model
    T: float  # seconds of the sequence on the Tensor Engine (combined ceiling)
    rate: float  # effective FLOP/s (combined ceiling)
    factors: tuple[tuple[str, float], ...]  # (ceiling name, factor of P) as `loopsim ceilings`
    spec: str  # the spec text the numbers come from

    @property
    def cycle_s(self) -> float:
        return 1.0 / self.clock_hz

    def as_dict(self) -> dict:
        d = {k: getattr(self, k) for k in self.__slots__}
        d["factors"] = dict(self.factors)
        d["cycle_s"] = self.cycle_s
        return d


def clockwork(hw, K: int = 128, N: int = 512, M: int | None = None, dtype: str = "bf16",
              count: int = 4) -> Clockwork:
    """The clockwork of ``count`` instructions on sheet ``hw`` (one physical core; ``M`` defaults
    to the array's columns). A tile over the array's limits is an InputError."""
    from loopsim.base import tomlfile
    from loopsim.base.errors import SpecError
    from loopsim.frontends import spec as spec_mod
    from loopsim.model import pipeline
    from loopsim.targets.neuron import clockwork as te

    te.check(hw, K, M, N, count, dtype)
    arr = te.array_of(hw)
    M = arr.cols if M is None else M
    text = te.spec_text(K, M, N, count, dtype)
    data = tomlfile.loads(text, "<clockwork>", SpecError)
    spec_mod.validate("<clockwork>", data)
    sf = spec_mod.SpecFile("<clockwork>", data, text)
    a = pipeline.analyze(pipeline.build(sf, spec_mod.bind_params(sf, {})), hw)
    c = a.ceilings
    comb = c.get("combined")
    p_ref, p_dt = hw.P("bf16"), hw.P(dtype)
    f = p_dt / p_ref
    slowdown = round(max(1.0, f) / f)
    cpi = max(N, arr.init_cycles) * slowdown
    assert c.instructions == count and comb.T > 0
    return Clockwork(
        hardware=hw.name, scope=hw.scope, dtype=dtype, K=K, M=M, N=N, count=count,
        rows=arr.rows, cols=arr.cols, clock_hz=arr.clock_hz, init_cycles=arr.init_cycles,
        init_assumed=arr.init_assumed, P=p_ref, P_dtype=p_dt, dtype_factor=f, slowdown=slowdown,
        rows_eff=round(arr.rows * max(1.0, f)), cycles_per_instruction=cpi,
        total_cycles=cpi * count, W=c.W, instruction_s=c.instruction_s, T=comb.T, rate=comb.P,
        factors=tuple((x.name, x.factor) for x in c.ceilings if x.factor is not None), spec=text)
