"""Ops beyond matmul: what each kind computes, on which engine, and its nest statement.

An op kind knows its arity, the shape of its output given its inputs, the engine (or engines) that
run it and how many element-operations each engine does per element of its first input
("passes"). Its time on an engine is ``passes × elements ÷ roof`` with the roof from the hardware
sheet (:meth:`loopsim.targets.hardware.Hardware.engine_roof`, elements per second). FLOPs per element are
nominal (reported beside the elements, never used for a time): the curriculum's W counts only the
Tensor Engine's matmul FLOPs.

How the kinds map onto NeuronCore engines (how NKI lowers them; a spec can move an op to another
engine with ``engine = "..."`` in its ``[ops]`` entry):

- activations (``gelu``, ``silu``, ``exp``) run on the Scalar Engine (the activation unit): one pass;
- ``mul`` (the SwiGLU product silu(gate) * up) and ``add`` run on the Vector Engine: one pass;
- ``softmax`` over a row: Vector max, Scalar exp(x - max), Vector sum and Vector scale by 1/sum
  (3 Vector passes, 1 Scalar pass);
- ``online_softmax`` (flash attention): per block of scores a running max and sum, the exp and the
  rescale of the running statistics: 3 Vector passes, 1 Scalar pass per score. The rescale of the
  output accumulator (its tile once per key block) is not counted;
- ``layernorm``: Vector statistics (mean and variance) and Vector affine (gamma, beta), Scalar
  normalise (x - mean) * rstd: 2 Vector passes, 1 Scalar pass; ``rmsnorm``: Vector sum of squares
  and Vector scale, Scalar rstd * x: 2 Vector, 1 Scalar;
- ``chainN`` (``chain1``, ``chain2``, ...): a chain of N elementwise Vector Engine instructions
  (``tensor_tensor``/``tensor_scalar`` arithmetic: multiply, add, subtract, ...) reading any number
  of input tiles, e.g. RoPE's ``x1 * cos - x2 * sin`` (``chain3`` of 4 inputs). Inputs broadcast
  to the output by NumPy's rules (NKI's, ``nki.language.broadcast_to``); each instruction is one
  pass over the *output's* elements, so its time is ``N × output elements ÷ roof``.

In the nest language an op is a statement ``KIND OUT = IN, IN, ...``, e.g.
``gelu g[b, f] = h[b, f]`` or ``mul z[b, f] = a[b, f], u[b, f]``. It reads its input tiles on chip
(events USE) and writes its output tile on chip (PRODUCE): no HBM crossing as written. A tile an op
reads that a matmul of the same kernel accumulated is read from PSUM (only the Vector and Scalar
engines can), which costs no SBUF space and no HBM bytes.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Callable

from loopsim.base.errors import SpecError
from loopsim.base.vocab import ENGINES  # noqa: F401 (engines an op may run on; "tensor": matmul only)
from loopsim.ir.kernel import PRODUCE, USE, Access, Statement



@dataclass(frozen=True, slots=True)
class OpKind:
    """One kind of op.

    ``arity``: its number of inputs (0: any number, at least one);
    ``work``: (engine, element-operations per element of the first input, or of the output for
    the "broadcast" rule) pairs;
    ``flops_per_element``: nominal FLOPs per element (reported, not used for time);
    ``shape_rule``: "elementwise" (every input and the output share one shape), "rowwise" (the
    output has the first input's shape; further inputs are that shape or a vector of its last
    dimension), "broadcast" (the inputs broadcast to the output, NumPy's rules) or "matmul"
    ([M, K] @ [K, N] -> [M, N]).
    """

    name: str
    arity: int
    work: tuple[tuple[str, int], ...]
    flops_per_element: int
    shape_rule: str
    about: str

    @property
    def engine(self) -> str:
        """The engine that does most of its passes (the first listed among equals)."""
        return max(self.work, key=lambda w: w[1])[0]

    @property
    def per_output(self) -> bool:
        """Whether its passes are per element of its output (else of its first input)."""
        return self.shape_rule == "broadcast"


_KINDS = (
    OpKind("matmul", 2, (("tensor", 0),), 0, "matmul", "A @ B on the Tensor Engine (FLOPs 2MNK)"),
    OpKind("gelu", 1, (("scalar", 1),), 8, "elementwise", "GELU activation (tanh form)"),
    OpKind("silu", 1, (("scalar", 1),), 4, "elementwise", "SiLU activation x * sigmoid(x)"),
    OpKind("exp", 1, (("scalar", 1),), 1, "elementwise", "elementwise exp"),
    OpKind("mul", 2, (("vector", 1),), 1, "elementwise", "elementwise product (SwiGLU: silu(gate) * up)"),
    OpKind("add", 2, (("vector", 1),), 1, "elementwise", "elementwise sum (residual)"),
    OpKind("softmax", 1, (("vector", 3), ("scalar", 1)), 5, "rowwise",
           "row softmax: max, exp(x - max), sum, scale by 1/sum"),
    OpKind("online_softmax", 1, (("vector", 3), ("scalar", 1)), 5, "rowwise",
           "flash-style softmax over key blocks: running max and sum, exp, rescale"),
    OpKind("layernorm", 3, (("vector", 2), ("scalar", 1)), 8, "rowwise",
           "layernorm over the last dimension: (x - mean) * rstd * gamma + beta"),
    OpKind("rmsnorm", 2, (("vector", 2), ("scalar", 1)), 4, "rowwise",
           "RMSNorm over the last dimension: x * rstd * gamma"),
    OpKind("fma", 3, (("vector", 2),), 2, "elementwise",
           "elementwise a * b + c (scalar_tensor_tensor, a scan step prev * decay + input)"),
)

#: op kind name -> OpKind
KINDS: dict[str, OpKind] = {k.name: k for k in _KINDS}


_CHAIN = re.compile(r"chain([1-9][0-9]{0,3})")


def chain(passes: int) -> OpKind:
    """The kind of a chain of ``passes`` elementwise Vector Engine instructions on any number of
    input tiles (each instruction one pass over the output's elements)."""
    return OpKind(f"chain{passes}", 0, (("vector", passes),), passes, "broadcast",
                  f"a chain of {passes} elementwise Vector Engine instruction{'s' * (passes != 1)} "
                  "on any number of input tiles (broadcast)")


def get(name: str) -> OpKind | None:
    """The op kind called ``name`` (a fixed kind of :data:`KINDS`, or ``chainN``), else None."""
    if not isinstance(name, str):
        return None
    k = KINDS.get(name)
    if k is None and (m := _CHAIN.fullmatch(name)):
        k = chain(int(m.group(1)))
    return k


def default_work(stmt) -> tuple[tuple[str, int], ...]:
    """(engine, passes per element) of an op statement by its kind (Vector, one pass, if unknown)."""
    k = get(stmt.kind)
    return tuple(k.work) if k is not None else (("vector", 1),)


def work_of_stage(stage, op_map):
    """``work_of(stmt)`` for a stage: the (engine, passes) of the op making the statement's output
    (its engine override included), else :func:`default_work`."""
    maker = {op_map[n].out: op_map[n] for n in stage.ops} if stage.ops else {}

    def work_of(stmt):
        op = maker.get(stmt.out.tensor)
        return tuple(op.work()) if op is not None else default_work(stmt)

    return work_of


def kind(name: str, where: str) -> OpKind:
    """The op kind called ``name``; a SpecError naming ``where`` if there is none."""
    k = get(name)
    if k is None:
        raise SpecError(f"{where}={name!r} is not a known op; known: {', '.join(KINDS)}, chainN "
                        "(N elementwise Vector instructions, any inputs)")
    return k


def broadcast(shapes: list[tuple[int, ...]]) -> tuple[int, ...] | None:
    """The shape ``shapes`` broadcast to by NumPy's rules (ranks aligned at the last axis, a size-1
    axis stretching), or None when two sizes differ and neither is 1."""
    out: list[int] = []
    for dims in zip(*(((1,) * (max(map(len, shapes)) - len(s)) + tuple(s)) for s in shapes)):
        big = {d for d in dims if d != 1}
        if len(big) > 1:
            return None
        out.append(big.pop() if big else 1)
    return tuple(out)


def output_shape(k: OpKind, shapes: list[tuple[int, ...]], names: list[str], where: str) -> tuple[int, ...]:
    """The output shape ``k`` computes from its input shapes (logical orientation), or a SpecError
    naming the inputs whose shapes disagree."""
    if k.shape_rule == "broadcast":
        b = broadcast(shapes) if shapes else None
        if b is None:
            raise SpecError(f"{where}: {k.name} inputs {', '.join(names) or '(none)'} have shapes "
                            f"{', '.join(str(list(s)) for s in shapes)}, which do not broadcast "
                            "to one shape")
        return b
    if len(shapes) != k.arity:
        raise SpecError(f"{where}: {k.name} takes {k.arity} input{'s' * (k.arity > 1)}, got "
                        f"{len(shapes)} ({', '.join(names) or 'none'})")
    if k.shape_rule == "matmul":
        a, b = shapes
        if len(a) != 2 or len(b) != 2:
            raise SpecError(f"{where}: matmul inputs must be 2-D; {names[0]} is {list(a)}, "
                            f"{names[1]} is {list(b)}")
        if a[1] != b[0]:
            raise SpecError(f"{where}: matmul {names[0]} {list(a)} @ {names[1]} {list(b)}: "
                            f"contraction sizes differ ({a[1]} vs {b[0]})")
        return (a[0], b[1])
    first = shapes[0]
    for s, n in zip(shapes[1:], names[1:]):
        ok = s == first or (k.shape_rule == "rowwise" and s == first[-1:])
        if not ok:
            want = f"{list(first)}" + (f" or [{first[-1]}]" if k.shape_rule == "rowwise" else "")
            raise SpecError(f"{where}: {k.name} input {n} has shape {list(s)} but {names[0]} has "
                            f"{list(first)}; expected {want}")
    return first


@dataclass(frozen=True, slots=True)
class EngineWork:
    """Engine work a traced kernel does outside its op statements: an instruction that makes no
    tensor of its own (``iota``, ``affine_select``), one the NKI front end does not model
    (``assumed``: charged as generic work on the engine NKI documents for it), a matmul whose
    operands the nest cannot index (``matmul``: M x N outputs of K multiply-adds, its FLOPs part
    of W), or a collective's bytes over the link (``engine`` "link", ``link_bytes``).

    ``elements`` per execution (its output tile), ``passes`` element-operations per element,
    ``executions`` the product of the trip counts around the call; ``where`` its FILE:LINE."""

    call: str
    engine: str
    elements: int
    passes: int
    executions: int
    where: str
    assumed: bool = False
    link_bytes: int = 0
    matmul: bool = False  # a matmul the nest cannot hold: elements M x N, passes K; its FLOPs are W
    transpose: bool = False  # a Tensor Engine transpose of a [passes, elements / passes] tile

    @property
    def element_ops(self) -> int:
        return self.elements * self.passes * self.executions

    @property
    def flops(self) -> int:
        """FLOPs of the kernel's W: 2 per multiply-add of a matmul (``matmul``), else 0."""
        return 2 * self.element_ops if self.matmul else 0

    def as_dict(self) -> dict:
        return {"call": self.call, "engine": self.engine, "elements": self.elements,
                "passes": self.passes, "executions": self.executions,
                "element_ops": self.element_ops, "link_bytes": self.link_bytes * self.executions,
                "flops": self.flops,
                "where": self.where, "assumed": self.assumed}

    def __str__(self) -> str:
        if self.engine == "link":
            what = f"{self.link_bytes * self.executions:,} bytes over the link"
        else:
            what = (f"{self.elements:,} elements x {self.passes} pass{'es' * (self.passes != 1)} x "
                    f"{self.executions:,} executions = {self.element_ops:,} element-ops on "
                    f"{self.engine}")
        if self.matmul:
            return (f"{self.call} at {self.where}: {self.elements:,} outputs x K = {self.passes} x "
                    f"{self.executions:,} executions = {self.flops:,} FLOPs on tensor (ASSUMED: "
                    "counted in W from the instruction's shapes; its operands' reuse is not modelled)")
        return f"{self.call} at {self.where}: {what}" + (" (ASSUMED: not modelled, charged as "
                                                        "generic work)" if self.assumed else "")


# ---------------------------------------------------------------------------------------------
# The nest statement


@dataclass(frozen=True, slots=True)
class OpStatement(Statement):
    """``KIND out = in, ...``: an op on tiles already on chip, writing its output tile on chip."""

    kind: str
    out: Access
    inputs: tuple[Access, ...]

    def accesses(self):
        return tuple((a, USE) for a in self.inputs) + ((self.out, PRODUCE),)

    def sbuf_outputs(self) -> tuple[Access, ...]:
        """The SBUF buffer the op creates (its output tile), for the as-written live count."""
        return (self.out,)

    def __str__(self) -> str:
        return f"{self.kind} {self.out} = {', '.join(map(str, self.inputs))}"


_TILE = re.compile(r"[A-Za-z_]\w*\s*\[[^\]]*\]")


def _parser(name: str, parse_access) -> Callable[[str, int, str], Statement]:
    def parse(rest: str, line: int, where: str) -> Statement:
        out, eq, rhs = rest.partition("=")
        tiles = _TILE.findall(rhs)
        leftover = _TILE.sub("", rhs).replace(",", "").strip()
        if not eq or not tiles or leftover:
            k = get(name)
            args = ", ".join(f"in{i}[b, f]" for i in range(1, max(k.arity, 2) + 1))
            raise SpecError(f"{where}: expected '{name} out[b, f] = {args}', got '{name} {rest}'")
        return OpStatement(name, parse_access(out, where), tuple(parse_access(t, where) for t in tiles),
                           line=line)
    return parse


def statement_parsers(parse_access) -> dict[str, Callable[[str, int, str], Statement]]:
    """Nest statement parsers for every op kind except matmul (which the core parser owns);
    ``parse_access(text, where) -> Access`` is the spec's tile parser (spec registers these)."""
    return {name: _parser(name, parse_access) for name in KINDS if name != "matmul"}


def family_parser(word: str, parse_access) -> Callable[[str, int, str], Statement] | None:
    """The nest statement parser of a kind named by a family (``chainN``), or None."""
    k = get(word)
    return _parser(word, parse_access) if k is not None and word not in KINDS else None


def elements(shape: tuple[int, ...]) -> int:
    return math.prod(shape)
