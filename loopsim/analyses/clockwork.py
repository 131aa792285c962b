"""The Tensor Engine clockwork (curriculum Day 3): C back-to-back matmul instructions, each a
K x M stationary tile and a K x N moving tile, on the PE array of one sheet, cycle by cycle.

The numbers are not computed here: the sequence is written as a spec (:func:`spec_text`: the
stationary tile loaded once, C moving tiles streamed against it, every output tile stored) and
entitled by the one pipeline, so the page shows exactly what ``loopsim ceilings`` says of that
spec. What this module adds is the reading of those ceilings as a clock:

- P = pe_rows x pe_cols x 2 FLOP x clock_hz (the sheet's bf16 roof of one core),
- rows used = K of pe_rows (partition fill K / rows), columns used = M of pe_cols,
- cycles per instruction = max(N, MM_INIT) x the dtype's slowdown (4 for fp32),
- effective rate = W / (C x cycles per instruction x one cycle), the ``combined`` ceiling.

Units: cycles, seconds, FLOPs, FLOP/s.
"""

from __future__ import annotations

from dataclasses import dataclass

from loopsim.base.errors import InputError

#: the most instructions one page animates (its slider has count x cycles per instruction steps)
MAX_COUNT = 4096


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
    pe_rows: int
    pe_cols: int
    clock_hz: int
    mm_init_cycles: int
    mm_init_assumed: bool
    moving_max: int
    P: int  # bf16 peak of the core, FLOP/s (= pe_rows x pe_cols x 2 x clock_hz)
    P_dtype: int  # the dtype's roof, FLOP/s
    dtype_factor: float  # P_dtype / P
    slowdown: int  # cycles per instruction relative to bf16 (4 for fp32)
    rows_used: int  # PE rows holding the stationary tile (K; twice the rows' worth for fp8 double-row)
    rows_eff: int  # rows a full contraction fills (pe_rows x max(1, dtype factor))
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


def clockwork(hw, K: int = 128, N: int = 512, M: int | None = None, dtype: str = "bf16",
              count: int = 4) -> Clockwork:
    """The clockwork of ``count`` instructions on sheet ``hw`` (one physical core; ``M`` defaults
    to the array's columns). A tile over the array's limits is an :class:`InputError`."""
    from loopsim.base import tomlfile
    from loopsim.base.errors import SpecError
    from loopsim.frontends import spec as spec_mod
    from loopsim.model import pipeline

    if dtype not in hw.dtypes():
        raise InputError(f"--dtype {dtype}: {hw.name} has no Tensor Engine roof for it "
                         f"(known: {', '.join(hw.dtypes())})")
    if hw.physical_cores != 1:
        raise InputError(f"--hardware {hw.name}: the clockwork is one physical core's Tensor "
                         f"Engine; this sheet is {hw.physical_cores} cores ({hw.scope})")
    M = hw.pe_cols if M is None else M
    for flag, v, top, what in (("--k", K, hw.pe_rows, "PE rows (the contraction)"),
                               ("--m", M, hw.pe_cols, "PE columns"),
                               ("--n", N, hw.moving_max, "the moving tile's free size limit"),
                               ("--count", count, MAX_COUNT, "instructions the page animates")):
        if not 1 <= v <= top:
            raise InputError(f"{flag} {v}: must be 1 to {top} ({what} on {hw.name})")
    text = spec_text(K, M, N, count, dtype)
    data = tomlfile.loads(text, "<clockwork>", SpecError)
    spec_mod.validate("<clockwork>", data)
    sf = spec_mod.SpecFile("<clockwork>", data, text)
    prog = pipeline.build(sf, spec_mod.bind_params(sf, {}))
    a = pipeline.analyze(prog, hw, strict=False)
    c = a.ceilings
    comb = c.get("combined")
    p_ref, p_dt = hw.P("bf16"), hw.P(dtype)
    f = p_dt / p_ref
    slowdown = round(max(1.0, f) / f)
    cpi = max(N, hw.mm_init_cycles) * slowdown
    assert c.instructions == count and comb.T > 0
    return Clockwork(
        hardware=hw.name, scope=hw.scope, dtype=dtype, K=K, M=M, N=N, count=count,
        pe_rows=hw.pe_rows, pe_cols=hw.pe_cols, clock_hz=hw.clock_hz,
        mm_init_cycles=hw.mm_init_cycles, mm_init_assumed=hw.mm_init_assumed,
        moving_max=hw.moving_max, P=p_ref, P_dtype=p_dt, dtype_factor=f, slowdown=slowdown,
        rows_used=K, rows_eff=round(hw.pe_rows * max(1.0, f)), cycles_per_instruction=cpi,
        total_cycles=cpi * count, W=c.W, instruction_s=c.instruction_s, T=comb.T, rate=comb.P,
        factors=tuple((x.name, x.factor) for x in c.ceilings if x.factor is not None), spec=text)
