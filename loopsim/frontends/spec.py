"""Spec files: TOML (parameters, tensors, nest text) -> :class:`loopsim.ir.kernel.Kernel`.

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

import functools
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Mapping

from loopsim.ir import expr
from loopsim.base import tomlfile
from loopsim.base.data import data_dir
from loopsim.base.errors import SpecError
from loopsim.base.vocab import MATMUL_REFUSED_DTYPES
from loopsim.ir.kernel import Access, Accumulate, Kernel, Load, Loop, Matmul, Node, Statement, Store, Tensor
from loopsim.base.limits import MAX_CHIPS, MAX_LNC_CORES, MAX_NEST_DEPTH, MAX_TENSOR_BYTES, MAX_TENSOR_DIMS, check_int
from loopsim.ir.kernel import walk as _walk


# ---------------------------------------------------------------------------------------------
# Locating specs


def _bundled_dir() -> Path:
    return data_dir("tilings")


def bundled_names() -> list[str]:
    """Names of the specs shipped with loopsim (subfolders as ``folder/name``)."""
    return list(_bundled_names())


@functools.lru_cache(maxsize=1)
def _bundled_names() -> tuple[str, ...]:
    """The bundled specs, listed once a process (every spec a command reads asks)."""
    d = _bundled_dir()
    return tuple(sorted(str(p.relative_to(d).with_suffix("")) for p in d.rglob("*.toml")))


def is_bundled(name_or_path: str) -> bool:
    """Whether ``name_or_path`` names a bundled spec (not a path: see :func:`locate`)."""
    return not tomlfile.is_path(name_or_path, (".toml", ".py")) or name_or_path in _bundled_names()


def locate(name_or_path: str) -> Path:
    """A bundled spec name (``matmul``, ``nki_tutorial/1_tiled``) or a path to a TOML file (see
    :func:`loopsim.base.tomlfile.is_path`: a separator, or a name ending in .toml or .py)."""
    if not is_bundled(name_or_path):
        return tomlfile.existing_file(name_or_path, SpecError, "spec file")
    q = _bundled_dir() / f"{name_or_path}.toml"
    try:
        if name_or_path and q.is_file():
            return q
    except OSError:
        pass
    raise SpecError(f"unknown spec '{_clip(name_or_path)}': not a bundled spec, and not a path "
                    f"(a path contains / or ends in .toml) (bundled: {', '.join(bundled_names())})")


_clip = tomlfile.clip


# ---------------------------------------------------------------------------------------------
# The raw file


@dataclass(frozen=True, slots=True)
class SpecFile:
    """A spec as read from disk, before parameters are bound. ``tracer``: for a source that is
    code (an NKI kernel, :mod:`loopsim.frontends.nki.ref`), ``tracer(spec_file, params)`` runs it
    into an ``ir.Kernel`` or a ``Program``; None for a TOML spec (data, read as it is)."""

    path: str
    data: Mapping
    text: str
    tracer: Callable | None = None

    @property
    def params(self) -> dict[str, int | str]:
        return dict(self.data.get("params", {}))

    def where(self, key: str) -> str:
        return f"{self.path}: {key}"


def read(name_or_path: str) -> SpecFile:
    """Read and validate a spec file's shape (tables, keys, types); parameters are bound later."""
    path = locate(name_or_path)
    shown = _shown(path)
    text = tomlfile.read_text(path, shown, SpecError, "spec file")
    data = tomlfile.loads(text, shown, SpecError)
    validate(shown, data)
    return SpecFile(shown, data, text)


KNOWN_TABLES = ("kernel", "params", "tensors", "nest", "ops", "schedule", "lnc", "parallel")
#: keys each table may hold (tables not named here are checked by their own readers: ops, schedule)
KNOWN_KEYS = {
    "kernel": ("name", "about", "inputs"),
    "nest": ("body", "buffers"),
    "lnc": ("split", "cores", "about"),
    "parallel": ("chips", "over", "about"),
}
#: ``[parallel] over``: the matmul dimension split across chips
PARALLEL_OVER = ("K", "N")


def validate(shown: str, data: Mapping) -> None:
    """Check the shape of a parsed spec before any of it is used: known tables and keys, the types
    of the values every command reads, and the limits of docs/errors.md. The one validator: every
    command reads specs through :func:`read`, so none accepts what another refuses."""
    def fail(msg: str):
        raise SpecError(f"{shown}: {msg}")

    def keys(node: Mapping, where: str, known) -> None:
        for k in node:
            if k not in known:
                fail(f"{where}: unknown key {_clip(str(k), 40)}; known: {', '.join(known)}")

    for key in data:
        if key not in KNOWN_TABLES:
            fail(f"unknown table [{_clip(key, 40)}]; expected {', '.join(KNOWN_TABLES)}")
    for key in KNOWN_TABLES:
        if key in data and not isinstance(data[key], dict):
            fail(f"{key}={_short(data[key])} must be a table ([{key}])")
    for key in ("kernel", "tensors"):
        if key not in data:
            fail(f"missing table [{key}]")
    keys(data["kernel"], "kernel", KNOWN_KEYS["kernel"])
    for k in ("name", "about"):
        if k in data["kernel"] and not isinstance(data["kernel"][k], str):
            fail(f"kernel.{k}={_short(data['kernel'][k])} must be a string")
    for name, v in data.get("params", {}).items():
        _param_value(v, f"{shown}: params.{name}")
    for name, t in data["tensors"].items():
        if not isinstance(t, dict):
            fail(f"tensors.{name}={_short(t)} must be a table like "
                 "{ shape = [\"M\", \"K\"], dtype = \"bf16\" }")
    nest = data.get("nest", {})
    if "ops" in data or (nest and isinstance(nest, dict) and "body" not in nest
                         and all(isinstance(v, dict) for v in nest.values())):
        # a program: one [nest.KERNEL] table per kernel of the schedule
        for kname, sub in nest.items():
            if not isinstance(sub, dict):
                fail(f"nest.{kname}={_short(sub)} must be a table: [nest.{kname}] body = \"...\"")
            keys(sub, f"nest.{kname}", KNOWN_KEYS["nest"])
    else:
        keys(nest, "nest", KNOWN_KEYS["nest"])
    for table in ("lnc", "parallel"):
        keys(data.get(table, {}), table, KNOWN_KEYS[table])
    lnc = data.get("lnc")
    if lnc is not None and not isinstance(lnc.get("split"), str):
        fail(f"lnc.split={_short(lnc.get('split'))} must name the loop variable to split")
    if "cores" in (lnc or {}):
        _param_value(lnc["cores"], f"{shown}: lnc.cores")
    parallel(shown, data)


def parallel(shown: str, data: Mapping) -> tuple[int, str] | None:
    """``[parallel] chips = C, over = "K" | "N"`` of a parsed spec, checked: (chips, over) or None."""
    node = data.get("parallel")
    if node is None:
        return None
    where = f"{shown}: parallel"
    if not isinstance(node, dict):
        raise SpecError(f"{where} must be a table: [parallel] chips = 2, over = \"K\"")
    chips = node.get("chips")
    if isinstance(chips, bool) or not isinstance(chips, int) or not 2 <= chips <= MAX_CHIPS:
        raise SpecError(f"{where}.chips={_short(chips)} must be an integer >= 2 (and <= {MAX_CHIPS:,})")
    over = node.get("over")
    if over not in PARALLEL_OVER:
        raise SpecError(f"{where}.over={_short(over)} must be one of: {', '.join(PARALLEL_OVER)}")
    return chips, over


def _param_value(v: object, where: str) -> None:
    """A parameter value as written: an integer within the limit, or an expression string."""
    if isinstance(v, float):
        if v != v or v in (float("inf"), float("-inf")):
            name = "nan" if v != v else "inf" if v > 0 else "-inf"
            raise SpecError(f"{where}={name} is not a number loopsim can use: parameters are integers")
        raise SpecError(f"{where}={v!r} is a float; parameters are integers (write 4096, or an "
                        "expression string)")
    if isinstance(v, bool) or not isinstance(v, (int, str)):
        raise SpecError(f"{where}={_short(v)} must be an integer or an expression string")
    if isinstance(v, int):
        check_int(v, where, SpecError, what="integer")


def _short(v: object) -> str:
    s = repr(v)
    return s if len(s) <= 60 else s[:57] + "..."


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
        digits = value.replace("_", "").lstrip("+-")
        if digits.isdigit() and len(digits) > 19:  # > 2^62 for sure; int() would refuse > 4,300
            raise SpecError(f"--set {name}=<{len(digits)} digits> exceeds the largest integer "
                            "loopsim accepts (2^62; see docs/errors.md)")
        try:
            out[name] = int(value.replace("_", ""))
        except ValueError:
            raise SpecError(f"--set {name}={_clip(value, 40)}: value must be an integer") from None
        check_int(out[name], f"--set {name}", SpecError, what="integer")
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
    free = set(spec.data.get("keywords", ())) if spec.tracer is not None else set()
    for name, v in values.items():
        src = f"--set {name}" if name in sets else f"{spec.path}: params.{name}"
        check_int(v, src, SpecError, what="parameter")
        if v <= 0 and name not in free:  # a kernel file's keyword integer may be 0 or negative
            raise SpecError(f"{src}={v} must be > 0")
    return values


def _int(text: object, params: Mapping[str, int], where: str) -> int:
    """An integer field: a literal or a parameter expression, within :data:`MAX_INT`."""
    if isinstance(text, int) and not isinstance(text, bool):
        return check_int(text, where, SpecError, what="integer")
    if not isinstance(text, str):
        raise SpecError(f"{where}={_short(text)} must be an integer or a parameter expression")
    try:
        v = expr.parse(text, where).evaluate_int(params, where)
    except expr.ExprError as e:
        raise SpecError(str(e)) from None
    return check_int(v, where, SpecError, what="integer")


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
            raise SpecError(f"{where}.shape={_short(shape_raw)} must be a list of dimensions")
        if len(shape_raw) > MAX_TENSOR_DIMS:
            raise SpecError(f"{where}.shape has {len(shape_raw)} dimensions; loopsim takes at most "
                            f"{MAX_TENSOR_DIMS} (see docs/errors.md)")
        shape = tuple(_int(d, params, f"{where}.shape[{i}]") for i, d in enumerate(shape_raw))
        output = t.get("output", False)
        if not isinstance(output, bool):
            raise SpecError(f"{where}.output={_short(output)} must be true or false")
        axis = t.get("partition_axis", 0)
        if isinstance(axis, bool) or not isinstance(axis, int):
            raise SpecError(f"{where}.partition_axis={_short(axis)} must be a dimension index "
                            f"(an integer in 0..{len(shape) - 1})")
        dtype = t.get("dtype", "bf16")
        if not isinstance(dtype, str):
            raise SpecError(f"{where}.dtype={_short(dtype)} must be a dtype name like \"bf16\"")
        try:
            tensor = Tensor(name, shape, dtype, output, axis, tuple(str(d) for d in shape_raw))
        except SpecError as e:
            raise SpecError(f"{spec.path}: {e}") from None
        if tensor.bytes > MAX_TENSOR_BYTES:
            dims = " x ".join(f"{d:,}" for d in shape)
            raise SpecError(f"{where}: {dims} {dtype} is {tensor.bytes:,} bytes, more than the "
                            "largest tensor loopsim counts exactly in int64 (2^62 bytes; see docs/errors.md)")
        out.append(tensor)
    return tuple(out)


# ---------------------------------------------------------------------------------------------
# The nest language

_ACCESS = re.compile(r"^\s*([A-Za-z_]\w*)\s*\[(.*)\]\s*$")
_FOR = re.compile(r"^for\s+([A-Za-z_]\w*)\s+in\s+(.+?)\s+by\s+(.+?)\s*:$")


def _affine(part: str, whole: str, where: str) -> tuple[tuple[str, ...], tuple[int, ...], int]:
    """``128*t + kb + 64`` -> (variables, coefficients, constant offset)."""
    names, coefs, const = [], [], 0
    for term in part.split("+"):
        bits = [b.strip() for b in term.split("*")]
        nums = [b for b in bits if b.isdigit()]
        ids = [b for b in bits if b.isidentifier()]
        if not term.strip() or len(nums) + len(ids) != len(bits) or len(ids) > 1 or len(bits) > 2:
            raise SpecError(f"{where}: index '{part.strip()}' in '{whole}' must be ':', loop variables "
                            "joined by + (each may carry a coefficient, 128*t, and one term may be a "
                            "constant offset, t + 128), or a slice START:STOP of such (x[128:256], "
                            "A[k:k + 130])")
        if ids:
            names.append(ids[0])
            coefs.append(int(nums[0]) if nums else 1)
        else:
            const += int(nums[0])
    return tuple(names), tuple(coefs), const


def parse_access(text: str, where: str) -> Access:
    m = _ACCESS.match(text)
    if not m:
        raise SpecError(f"{where}: expected a tile like A[k, m], got '{text.strip()}'")
    whole = text.strip()
    index, coefs, offsets, extents = [], [], [], []
    for part in m.group(2).split(","):
        part = part.strip()
        if part == ":":
            index.append(())
            coefs.append(())
            offsets.append(0)
            extents.append(0)
            continue
        lo, sep, hi = part.partition(":")
        names, cs, off = _affine(lo, whole, where) if lo.strip() or not sep else ((), (), 0)
        ext = 0
        if sep:
            if not hi.strip():  # START: the rest of the dimension
                if names:
                    raise SpecError(f"{where}: index '{part}' in '{whole}': a slice with loop "
                                    "variables needs its stop (A[k:k + 130])")
            else:
                hnames, hcs, hoff = _affine(hi, whole, where)
                if dict(zip(hnames, hcs)) != dict(zip(names, cs)) or hoff <= off:
                    raise SpecError(f"{where}: index '{part}' in '{whole}': the stop must be the "
                                    "start plus a positive number of elements (A[k:k + 130], "
                                    "x[128:256])")
                ext = hoff - off
        index.append(names)
        coefs.append(cs)
        offsets.append(off)
        extents.append(ext)
    try:
        return Access(m.group(1), tuple(index), tuple(coefs), tuple(offsets), tuple(extents))
    except SpecError as e:
        raise SpecError(f"{where}: {e}") from None


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
from loopsim.ir.ops import family_parser as _op_family, statement_parsers as _op_statements  # noqa: E402  (ops imports only ir/errors)
STATEMENTS.update(_op_statements(parse_access))  # gelu, silu, mul, softmax, ... (loopsim/ops.py)


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
    open_levels: list[int] = []  # indents of the enclosing lines, checked before recursing
    for ln, ind, _ in lines:
        while open_levels and open_levels[-1] >= ind:
            open_levels.pop()
        open_levels.append(ind)
        if len(open_levels) > MAX_NEST_DEPTH + 1:
            raise SpecError(f"{where}: line {ln}: the nest is more than {MAX_NEST_DEPTH} loops deep, "
                            "the deepest loopsim takes (see docs/errors.md)")
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
                                      (splits or {}).get(m.group(1), 1),
                                      symbols=(m.group(2).strip(), m.group(3).strip())))
                except SpecError as e:
                    raise SpecError(f"{where}: {e}") from None
                continue
            if stmt.startswith("for "):
                raise SpecError(f"{w}: expected 'for VAR in EXTENT by STEP:', got '{stmt}'")
            word, _, rest = stmt.partition(" ")
            parser = STATEMENTS.get(word) or _op_family(word, parse_access)
            if parser is None:
                raise SpecError(f"{w}: unknown statement '{word}'; known: for, {', '.join(STATEMENTS)}")
            try:
                if word == "load" and " by " in rest:  # load A[:, m] by ROWS: ROWS per transfer
                    tile, _, rows = rest.rpartition(" by ")
                    try:
                        ns = tuple(_int(x.strip(), params, f"{w}: by") for x in rows.split(","))
                    except SpecError as e:
                        raise SpecError(f"{w}: 'load {rest}': by: {e}") from None
                    if any(n < 0 for n in ns) or not any(ns):
                        raise SpecError(f"{w}: 'load {rest}': by {', '.join(map(str, ns))}: extents "
                                        "per transfer must be > 0 (0: the whole axis)")
                    acc = parse_access(tile, w)
                    if len(ns) not in (1, len(acc.index)):
                        raise SpecError(f"{w}: 'load {rest}': give one extent (rows of the partition "
                                        f"axis) or one per axis ({len(acc.index)}), not {len(ns)}")
                    nodes.append(Load(acc, ns, line=ln))
                    continue
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
    _check_matmuls(spec.path, tensors, body)
    buffers = parse_buffers(nest.get("buffers"), params, spec.where(nest_key + ".buffers"))
    try:
        return Kernel(name or kname, tensors, body, tuple(params.items()),
                      str(k.get("about", "")), spec.path, buffers)
    except SpecError as e:
        msg = str(e)
        raise SpecError(msg if msg.startswith(spec.path) else f"{spec.path}: {msg}") from None


def parse_buffers(node: object, params: Mapping[str, int], where: str) -> tuple[tuple[str, int], ...]:
    """``buffers = 2`` (every load inside a loop) or ``buffers = { A = 2, "*" = 1 }`` (per tensor):
    how many SBUF slots a load inside a loop rotates through (double buffering = 2)."""
    if node is None:
        return ()
    if not isinstance(node, dict):
        node = {"*": node}
    out = []
    for name, v in node.items():
        n = _int(v, params, f"{where}.{name}" if name != "*" else where)
        if n <= 0:
            raise SpecError(f"{where}={n} must be a positive number of buffers")
        out.append((name, n))
    return tuple(out)


def _splits(spec: SpecFile, params: Mapping[str, int]) -> dict[str, int]:
    """``[lnc] split = "m"`` with ``cores = 2``: the loop divided among the physical cores."""
    lnc = spec.data.get("lnc")
    if not lnc:
        return {}
    if not isinstance(lnc, dict) or not isinstance(lnc.get("split"), str):
        raise SpecError(f"{spec.where('lnc.split')}: expected the name of the loop variable to split")
    cores = _int(lnc.get("cores", 2), params, spec.where("lnc.cores"))
    if not 1 <= cores <= MAX_LNC_CORES:
        raise SpecError(f"{spec.where('lnc.cores')}={cores} must be between 1 and {MAX_LNC_CORES} "
                        "physical cores (see docs/errors.md)")
    return {lnc["split"]: cores}


#: dtypes the Tensor Engine's matmul does not take as operands (hardware-sources §2: NKI's
#: nc_matmul takes fp8, bf16, fp16, tf32 and fp32 inputs; no integer types)


def check_matmul_dtypes(tensors, body, message) -> None:
    """Refuse a matmul operand in a dtype the Tensor Engine does not take (the same rule for specs
    and traced kernels); ``message(tensor, statement, dtype)`` words the error."""
    dtype = {t.name: t.dtype for t in tensors}
    for stmt, _ in _walk(body):
        if isinstance(stmt, Matmul):
            for acc in (stmt.stationary, stmt.moving):
                if dtype.get(acc.tensor) in MATMUL_REFUSED_DTYPES:
                    raise SpecError(message(acc.tensor, stmt, dtype[acc.tensor]))


def _check_matmuls(path: str, tensors: tuple[Tensor, ...], body: tuple[Node, ...]) -> None:
    """Matmul operands in a dtype the Tensor Engine takes, and no product accumulated twice."""
    check_matmul_dtypes(tensors, body, lambda name, stmt, dt: (
        f"{path}: tensors.{name}.dtype={dt!r}: the Tensor Engine's matmul takes no {dt} operands "
        f"({stmt.where()}: '{stmt}'); use fp8, bf16, fp16 or fp32"))
    seen: dict[tuple[str, str, str], Matmul] = {}
    for stmt, _ in _walk(body):
        if not isinstance(stmt, Matmul):
            continue
        key = (stmt.out.tensor, stmt.stationary.tensor, stmt.moving.tensor)
        if key in seen:
            raise SpecError(f"{path}: {stmt.where()}: '{stmt}' repeats the product of "
                            f"{seen[key].where()}: it would be accumulated into {key[0]} twice")
        seen[key] = stmt
