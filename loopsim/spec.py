"""Spec files: TOML (parameters, tensors, nest text) -> :class:`loopsim.ir.Kernel`.

A spec is data. It is read with :mod:`tomllib`; the nest is a few-line indentation language parsed
here, never evaluated as Python::

    for m in M by TM:                 # loop: extent and step are parameter expressions
      for k in K by TK:
        load A[k, m]                  # tile load at this loop level (hoist by moving the line)
        matmul C[m, n] += A[k, m] @ B[k, n]
      store C[m, n]

Every error names the file and the key, and the nest line where there is one.
"""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Mapping

from . import expr
from ._data import data_dir
from .errors import SpecError
from .ir import Access, Accumulate, Kernel, Load, Loop, Matmul, Node, Statement, Store, Tensor
from .ir import walk as _walk


# ---------------------------------------------------------------------------------------------
# Locating specs


def _bundled_dir() -> Path:
    return data_dir("tilings")


def bundled_names() -> list[str]:
    """Names of the specs shipped with loopsim (subfolders as ``folder/name``)."""
    d = _bundled_dir()
    return sorted(str(p.relative_to(d).with_suffix("")) for p in d.rglob("*.toml"))


def locate(name_or_path: str) -> Path:
    """A bundled spec name (``matmul``) or a path to a TOML file."""
    p = Path(name_or_path)
    if p.suffix == ".toml" or p.exists() or "/" in name_or_path and p.parent.exists():
        if not p.is_file():
            raise SpecError(f"{name_or_path}: no such spec file")
        return p
    q = _bundled_dir() / f"{name_or_path}.toml"
    if q.is_file():
        return q
    raise SpecError(f"unknown spec '{name_or_path}': not a file and not a bundled spec "
                    f"(bundled: {', '.join(bundled_names())})")


# ---------------------------------------------------------------------------------------------
# The raw file


@dataclass(frozen=True, slots=True)
class SpecFile:
    """A spec as read from disk, before parameters are bound."""

    path: str
    data: Mapping
    text: str

    @property
    def params(self) -> dict[str, int | str]:
        return dict(self.data.get("params", {}))

    def where(self, key: str) -> str:
        return f"{self.path}: {key}"


def read(name_or_path: str) -> SpecFile:
    path = locate(name_or_path)
    shown = _shown(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as e:
        raise SpecError(f"{shown}: cannot read ({e.strerror})") from None
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise SpecError(f"{shown}: malformed TOML: {e}") from None
    for key in data:
        if key not in KNOWN_TABLES:
            raise SpecError(f"{shown}: unknown table [{key}]; expected {', '.join(KNOWN_TABLES)}")
    for key in ("kernel", "tensors"):
        if not isinstance(data.get(key), dict):
            raise SpecError(f"{shown}: missing table [{key}]")
    return SpecFile(shown, data, text)


KNOWN_TABLES = ("kernel", "params", "tensors", "nest", "ops", "schedule", "lnc", "check", "parallel")


def _shown(path: Path) -> str:
    d = _bundled_dir()
    try:
        return f"tilings/{path.resolve().relative_to(d.resolve())}"
    except ValueError:
        return str(path)


# ---------------------------------------------------------------------------------------------
# Parameters


def parse_sets(items: list[str] | None) -> dict[str, int]:
    """``["M=4096", "TN=256"]`` -> {"M": 4096, "TN": 256}; values must be integers."""
    out: dict[str, int] = {}
    for item in items or ():
        name, eq, value = item.partition("=")
        name, value = name.strip(), value.strip()
        if not eq or not name.isidentifier():
            raise SpecError(f"--set {item}: expected NAME=INTEGER")
        try:
            out[name] = int(value.replace("_", ""))
        except ValueError:
            raise SpecError(f"--set {name}={value}: value must be an integer") from None
    return out


def bind_params(spec: SpecFile, sets: Mapping[str, int]) -> dict[str, int]:
    """Resolve the spec's parameters with ``--set`` overrides; every value must be > 0."""
    raw = spec.params
    for name, value in sets.items():
        if name not in raw:
            raise SpecError(f"--set {name}={value}: {spec.path} has no parameter {name}; "
                            f"it has: {', '.join(raw) or '(none)'}")
        raw[name] = value
    try:
        values = expr.resolve(raw, f"{spec.path}: params")
    except expr.ExprError as e:
        raise SpecError(str(e)) from None
    for name, v in values.items():
        if v <= 0:
            src = f"--set {name}={v}" if name in sets else f"{spec.path}: params.{name}={v}"
            raise SpecError(f"{src} must be > 0")
    return values


def _int(text: object, params: Mapping[str, int], where: str) -> int:
    if isinstance(text, int) and not isinstance(text, bool):
        return text
    if not isinstance(text, str):
        raise SpecError(f"{where}={text!r} must be an integer or a parameter expression")
    try:
        return expr.parse(text, where).evaluate_int(params, where)
    except expr.ExprError as e:
        raise SpecError(str(e)) from None


# ---------------------------------------------------------------------------------------------
# Tensors


def parse_tensors(spec: SpecFile, params: Mapping[str, int]) -> tuple[Tensor, ...]:
    out = []
    for name, t in spec.data["tensors"].items():
        where = spec.where(f"tensors.{name}")
        if not isinstance(t, dict):
            raise SpecError(f"{where} must be a table like {{ shape = [\"M\", \"K\"], dtype = \"bf16\" }}")
        unknown = set(t) - {"shape", "dtype", "output", "partition_axis", "about"}
        if unknown:
            raise SpecError(f"{where}: unknown key {sorted(unknown)[0]}; expected shape, dtype, "
                            "output, partition_axis, about")
        shape_raw = t.get("shape")
        if not isinstance(shape_raw, list) or not shape_raw:
            raise SpecError(f"{where}.shape={shape_raw!r} must be a list of dimensions")
        shape = tuple(_int(d, params, f"{where}.shape[{i}]") for i, d in enumerate(shape_raw))
        output = t.get("output", False)
        if not isinstance(output, bool):
            raise SpecError(f"{where}.output={output!r} must be true or false")
        axis = t.get("partition_axis", 0)
        try:
            out.append(Tensor(name, shape, t.get("dtype", "bf16"), output, axis,
                              tuple(str(d) for d in shape_raw)))
        except SpecError as e:
            raise SpecError(f"{spec.path}: {e}") from None
    return tuple(out)


# ---------------------------------------------------------------------------------------------
# The nest language

_ACCESS = re.compile(r"^\s*([A-Za-z_]\w*)\s*\[(.*)\]\s*$")
_FOR = re.compile(r"^for\s+([A-Za-z_]\w*)\s+in\s+(.+?)\s+by\s+(.+?)\s*:$")


def parse_access(text: str, where: str) -> Access:
    m = _ACCESS.match(text)
    if not m:
        raise SpecError(f"{where}: expected a tile like A[k, m], got '{text.strip()}'")
    index = []
    for part in m.group(2).split(","):
        part = part.strip()
        if part == ":":
            index.append(())
            continue
        terms = tuple(v.strip() for v in part.split("+"))
        if not part or not all(v.isidentifier() for v in terms):
            raise SpecError(f"{where}: index '{part}' in '{text.strip()}' must be ':' or loop "
                            "variables joined by +")
        index.append(terms)
    return Access(m.group(1), tuple(index))


def _load(rest: str, line: int, where: str) -> Statement:
    return Load(parse_access(rest, where), line=line)


def _store(rest: str, line: int, where: str) -> Statement:
    return Store(parse_access(rest, where), line=line)


def _matmul(rest: str, line: int, where: str) -> Statement:
    out, plus, rhs = rest.partition("+=")
    a, at, b = rhs.partition("@")
    if not plus or not at:
        raise SpecError(f"{where}: expected 'matmul C[m, n] += A[k, m] @ B[k, n]', got 'matmul {rest}'")
    return Matmul(parse_access(out, where), parse_access(a, where), parse_access(b, where), line=line)


def _acc(rest: str, line: int, where: str) -> Statement:
    out, plus, src = rest.partition("+=")
    if not plus:
        raise SpecError(f"{where}: expected 'acc C[m, n] += PS[m, n]' (add a matmul's PSUM tile into "
                        f"an SBUF tile), got 'acc {rest}'")
    return Accumulate(parse_access(out, where), parse_access(src, where), line=line)


#: statement keyword -> parser(rest of line, line number, where) -> Statement. Extended by ops.
STATEMENTS: dict[str, Callable[[str, int, str], Statement]] = {
    "load": _load, "store": _store, "matmul": _matmul, "acc": _acc,
}
from .ops import statement_parsers as _op_statements  # noqa: E402  (ops imports only ir/errors)
STATEMENTS.update(_op_statements())  # gelu, silu, mul, softmax, layernorm, ... (loopsim/ops.py)


def parse_nest(text: str, params: Mapping[str, int], where: str, first_line: int = 1,
               splits: Mapping[str, int] | None = None) -> tuple[Node, ...]:
    """Parse nest text into IR nodes. ``first_line`` is the file line of the text's first line;
    ``splits`` maps loop variables to the number of physical cores their iterations divide among."""
    lines = []
    for i, raw in enumerate(text.splitlines()):
        body = raw.split("#", 1)[0].rstrip()
        if body.strip():
            if "\t" in body[: len(body) - len(body.lstrip())]:
                raise SpecError(f"{where}: line {first_line + i}: indent with spaces, not tabs")
            lines.append((first_line + i, len(body) - len(body.lstrip()), body.strip()))
    if not lines:
        raise SpecError(f"{where}: the nest is empty")
    pos = 0

    def block(indent: int) -> list[Node]:
        nonlocal pos
        nodes: list[Node] = []
        while pos < len(lines):
            ln, ind, stmt = lines[pos]
            if ind < indent:
                break
            if ind > indent:
                raise SpecError(f"{where}: line {ln}: unexpected indent")
            pos += 1
            w = f"{where}: line {ln}"
            m = _FOR.match(stmt)
            if m:
                if pos >= len(lines) or lines[pos][1] <= ind:
                    raise SpecError(f"{w}: loop '{m.group(1)}' has an empty body")
                body = block(lines[pos][1])
                extent = _int(m.group(2), params, f"{w}: extent")
                step = _int(m.group(3), params, f"{w}: step")
                try:
                    nodes.append(Loop(m.group(1), extent, step, tuple(body), ln,
                                      (splits or {}).get(m.group(1), 1)))
                except SpecError as e:
                    raise SpecError(f"{where}: {e}") from None
                continue
            if stmt.startswith("for "):
                raise SpecError(f"{w}: expected 'for VAR in EXTENT by STEP:', got '{stmt}'")
            word, _, rest = stmt.partition(" ")
            parser = STATEMENTS.get(word)
            if parser is None:
                raise SpecError(f"{w}: unknown statement '{word}'; known: for, {', '.join(STATEMENTS)}")
            try:
                nodes.append(parser(rest, ln, w))
            except SpecError:
                raise
            except expr.ExprError as e:
                raise SpecError(f"{w}: {e}") from None
        return nodes

    nodes = block(lines[0][1])
    if pos < len(lines):
        raise SpecError(f"{where}: line {lines[pos][0]}: indentation does not match any outer level")
    return tuple(nodes)


def _nest_first_line(spec: SpecFile, body: str) -> int:
    """File line on which the nest text starts (for error messages), best effort."""
    first = next((l for l in body.splitlines() if l.strip()), "")
    idx = spec.text.find(first) if first else -1
    if idx < 0:
        return 1
    return spec.text.count("\n", 0, idx) + 1 - next(
        i for i, l in enumerate(body.splitlines()) if l.strip() == first.strip())


# ---------------------------------------------------------------------------------------------
# Whole spec


def load_kernel(name_or_path: str, sets: Mapping[str, int] | None = None) -> Kernel:
    """Read a single-kernel spec and bind its parameters (``sets`` overrides them)."""
    spec = read(name_or_path)
    return kernel_from(spec, bind_params(spec, sets or {}))


def kernel_from(spec: SpecFile, params: Mapping[str, int], nest_key: str = "nest",
                name: str | None = None) -> Kernel:
    k = spec.data["kernel"]
    kname = k.get("name", Path(spec.path).stem)
    if not isinstance(kname, str):
        raise SpecError(f"{spec.where('kernel.name')}={kname!r} must be a string")
    nest = spec.data.get(nest_key)
    if not isinstance(nest, dict) or not isinstance(nest.get("body"), str):
        raise SpecError(f"{spec.where(nest_key + '.body')}: missing; the loop nest goes in "
                        f"[{nest_key}] body = '''...'''")
    tensors = parse_tensors(spec, params)
    splits = _splits(spec, params)
    body = parse_nest(nest["body"], params, spec.path, _nest_first_line(spec, nest["body"]), splits)
    for var in splits:  # a split naming no loop would silently run on one core
        if not any(isinstance(n, Loop) and n.var == var for n, _ in _walk(body)):
            raise SpecError(f"{spec.where('lnc.split')}={var!r} names no loop of the nest")
    try:
        return Kernel(name or kname, tensors, body, tuple(params.items()),
                      str(k.get("about", "")), spec.path)
    except SpecError as e:
        msg = str(e)
        raise SpecError(msg if msg.startswith(spec.path) else f"{spec.path}: {msg}") from None


def _splits(spec: SpecFile, params: Mapping[str, int]) -> dict[str, int]:
    """``[lnc] split = "m"`` with ``cores = 2``: the loop divided among the physical cores."""
    lnc = spec.data.get("lnc")
    if not lnc:
        return {}
    if not isinstance(lnc, dict) or not isinstance(lnc.get("split"), str):
        raise SpecError(f"{spec.where('lnc.split')}: expected the name of the loop variable to split")
    cores = _int(lnc.get("cores", 2), params, spec.where("lnc.cores"))
    return {lnc["split"]: cores}
