"""Safe integer arithmetic expressions over named parameters.

Used for spec parameters (``BM = "4 * TM"``), loop extents and steps, and user Q formulas. Text is
parsed with :mod:`ast` into a tree that is walked here; only numbers, names, ``+ - * / // %``,
``**`` with a small integer exponent, parentheses and the functions ``min``, ``max``, ``ceil``,
``floor`` are accepted. Nothing is ever evaluated as Python. Arithmetic is exact
(:class:`fractions.Fraction`), so ``N/TN`` is a rational number and ``ceil(N/TN)`` an integer.
"""

from __future__ import annotations

import ast
import math
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Mapping

from loopsim.base.errors import InputError
from loopsim.base.limits import MAX_EXPR_BITS, MAX_EXPR_CHARS, MAX_EXPR_DEPTH, MAX_EXPR_NODES

_FUNCS = {
    "min": lambda *a: min(a),
    "max": lambda *a: max(a),
    "ceil": lambda a: Fraction(math.ceil(a)),
    "floor": lambda a: Fraction(math.floor(a)),
}
_BINOPS = {
    ast.Add: lambda a, b: a + b,
    ast.Sub: lambda a, b: a - b,
    ast.Mult: lambda a, b: a * b,
    ast.Div: lambda a, b: a / b,
    ast.FloorDiv: lambda a, b: Fraction(a // b),
    ast.Mod: lambda a, b: a % b,
    ast.Pow: lambda a, b: a**b,
}


class ExprError(InputError):
    """An expression is malformed, names an unknown parameter, or divides by zero."""


@dataclass(frozen=True, slots=True)
class Expr:
    """A parsed arithmetic expression. ``text`` is the source; ``names`` the parameters it reads."""

    text: str
    names: frozenset[str]
    _tree: ast.AST = field(repr=False, compare=False)

    def evaluate(self, env: Mapping[str, int | Fraction]) -> Fraction:
        """Exact value under ``env``. Raises :class:`ExprError` for unknown names or x/0."""
        missing = sorted(self.names - env.keys())
        if missing:
            raise ExprError(
                f"'{self.text}': unknown name {', '.join(missing)}; known names: "
                f"{', '.join(sorted(env)) or '(none)'}")
        return _eval(self._tree, env, self.text)

    def evaluate_int(self, env: Mapping[str, int | Fraction], where: str) -> int:
        """Value under ``env``, which must be an integer (``where`` names the field in errors)."""
        v = self.evaluate(env)
        if v.denominator != 1:
            raise ExprError(f"{where}='{self.text}' evaluates to {v}, which is not an integer")
        return int(v)

    def __str__(self) -> str:
        return self.text


#: parsed expressions by their text (a spec's extents and steps are parsed again for every binding
#: of its parameters: each --vary point, each search candidate); at most _CACHE_MAX of them
_CACHE: dict[str, "Expr"] = {}
_CACHE_MAX = 4096


def parse(text: str, where: str = "expression") -> Expr:
    """Parse ``text``; a syntax error names ``where`` and the column (1-based)."""
    hit = _CACHE.get(text) if isinstance(text, str) else None
    if hit is not None:
        return hit
    e = _parse(text, where)
    if len(_CACHE) < _CACHE_MAX:
        _CACHE[text] = e
    return e


def _parse(text: str, where: str) -> Expr:
    if not isinstance(text, str) or not text.strip():
        raise ExprError(f"{where}: expected an arithmetic expression, got {text!r}")
    if len(text) > MAX_EXPR_CHARS:
        raise ExprError(f"{where}: an expression of {len(text):,} characters; loopsim takes at most "
                        f"{MAX_EXPR_CHARS:,} (see docs/errors.md)")
    try:
        tree = ast.parse(text.strip(), mode="eval").body
    except SyntaxError as e:
        col = e.offset or 0
        raise ExprError(f"{where}: syntax error in '{_clip(text.strip())}' at column {col}") from None
    except (RecursionError, MemoryError, ValueError):  # parser stack exhausted by nesting
        raise ExprError(f"{where}: the expression is nested too deeply to parse") from None
    _bound(tree, where)
    names: set[str] = set()
    _check(tree, text.strip(), where, names)
    if _bits(tree) > MAX_EXPR_BITS:
        raise ExprError(f"{where}: '{_clip(text.strip())}' can reach more than {MAX_EXPR_BITS} bits "
                        f"with parameters up to 2^62 (powers of powers?); loopsim refuses it rather "
                        "than compute it (see docs/errors.md)")
    return Expr(text.strip(), frozenset(names), tree)


def _clip(text: str, n: int = 60) -> str:
    return text if len(text) <= n else text[: n - 3] + "..."


def _bound(tree: ast.AST, where: str) -> None:
    """Refuse a tree of more than MAX_EXPR_NODES nodes or MAX_EXPR_DEPTH levels, walking it without
    recursion, so the recursive check and evaluation below stay far from Python's stack limit."""
    stack = [(tree, 1)]
    count = 0
    while stack:
        node, depth = stack.pop()
        count += 1
        if count > MAX_EXPR_NODES:
            raise ExprError(f"{where}: an expression of more than {MAX_EXPR_NODES:,} terms and "
                            "operators; loopsim takes at most that many (see docs/errors.md)")
        if depth > MAX_EXPR_DEPTH:
            raise ExprError(f"{where}: an expression nested more than {MAX_EXPR_DEPTH} levels deep "
                            "(a chain of operators counts one level each; see docs/errors.md)")
        stack.extend((c, depth + 1) for c in ast.iter_child_nodes(node)
                     if not isinstance(c, (ast.operator, ast.unaryop, ast.expr_context)))


def _check(node: ast.AST, text: str, where: str, names: set[str]) -> None:
    col = getattr(node, "col_offset", 0) + 1
    if isinstance(node, ast.Constant):
        if isinstance(node.value, bool) or not isinstance(node.value, (int, float)):
            raise ExprError(f"{where}: '{_clip(text)}' column {col}: only numbers are allowed as constants")
        if isinstance(node.value, float) and not math.isfinite(node.value):
            raise ExprError(f"{where}: '{_clip(text)}' column {col}: {_clip(ast.get_source_segment(text, node) or 'the number', 20)} "
                            f"is {'inf' if node.value == node.value else 'nan'}, not a finite number")
        if isinstance(node.value, int) and node.value.bit_length() > MAX_EXPR_BITS:
            raise ExprError(f"{where}: '{_clip(text)}' column {col}: a number of more than "
                            f"{MAX_EXPR_BITS} bits")
    elif isinstance(node, ast.Name):
        if node.id in _FUNCS:
            raise ExprError(f"{where}: '{text}' column {col}: {node.id} must be called")
        names.add(node.id)
    elif isinstance(node, ast.BinOp) and type(node.op) in _BINOPS:
        e = node.right.operand if isinstance(node.right, ast.UnaryOp) else node.right
        if (isinstance(node.op, ast.Pow) and isinstance(e, ast.Constant)
                and not (isinstance(e.value, int) and abs(e.value) <= 64)):
            raise ExprError(f"{where}: '{_clip(text)}' column {col}: exponent "
                            f"{_clip(ast.get_source_segment(text, node.right) or '?', 20)} must be an "
                            "integer of at most 64")
        _check(node.left, text, where, names)
        _check(node.right, text, where, names)
    elif isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        _check(node.operand, text, where, names)
    elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in _FUNCS:
        if node.keywords or not node.args:
            raise ExprError(f"{where}: '{text}' column {col}: {node.func.id}() takes positional arguments")
        if node.func.id in ("ceil", "floor") and len(node.args) != 1:
            raise ExprError(f"{where}: '{text}' column {col}: {node.func.id}() takes one argument")
        for a in node.args:
            _check(a, text, where, names)
    else:
        raise ExprError(f"{where}: '{text}' column {col}: not allowed here "
                        "(numbers, names, + - * / // % **, parentheses, min, max, ceil, floor)")


def _eval(node: ast.AST, env: Mapping[str, int | Fraction], text: str) -> Fraction:
    if isinstance(node, ast.Constant):
        return Fraction(node.value)
    if isinstance(node, ast.Name):
        return Fraction(env[node.id])
    if isinstance(node, ast.UnaryOp):
        v = _eval(node.operand, env, text)
        return -v if isinstance(node.op, ast.USub) else v
    if isinstance(node, ast.BinOp):
        a = _eval(node.left, env, text)
        b = _eval(node.right, env, text)
        if isinstance(node.op, (ast.Div, ast.FloorDiv, ast.Mod)) and b == 0:
            vals = ", ".join(f"{k}={env[k]}" for k in sorted(_names_in(node)) if k in env)
            raise ExprError(f"'{text}': division by zero in "
                            f"'{ast.unparse(node)}'" + (f" with {vals}" if vals else ""))
        if isinstance(node.op, ast.Pow):
            if b.denominator != 1 or abs(b) > 64:
                raise ExprError(f"'{_clip(text)}': exponent {_clip(str(b), 30)} must be an integer of at most 64")
            _fits(max(a.numerator.bit_length(), a.denominator.bit_length()) * abs(int(b)), text)
        v = Fraction(_BINOPS[type(node.op)](a, b))
        _fits(max(v.numerator.bit_length(), v.denominator.bit_length()), text)
        return v
    if isinstance(node, ast.Call):
        args = [_eval(a, env, text) for a in node.args]
        return Fraction(_FUNCS[node.func.id](*args))
    raise ExprError(f"'{text}': cannot evaluate")  # unreachable: _check admitted the tree


def _bits(node: ast.AST) -> int:
    """An upper bound on the bits of the expression's value (numerator or denominator) when every
    name is at most 2^62: a static check that needs no parameter values."""
    if isinstance(node, ast.Constant):
        return Fraction(node.value).numerator.bit_length() + Fraction(node.value).denominator.bit_length()
    if isinstance(node, ast.Name):
        return 63
    if isinstance(node, ast.UnaryOp):
        return _bits(node.operand)
    if isinstance(node, ast.Call):
        return max(_bits(a) for a in node.args) + 1
    if isinstance(node, ast.BinOp):
        a = _bits(node.left)
        if isinstance(node.op, ast.Pow):
            e = node.right
            if isinstance(e, ast.UnaryOp) and isinstance(e.operand, ast.Constant):
                e = e.operand
            n = abs(e.value) if isinstance(e, ast.Constant) and isinstance(e.value, int) else 64
            return a * max(1, min(n, 64))
        b = _bits(node.right)
        return max(a, b) + 1 if isinstance(node.op, (ast.Add, ast.Sub)) else a + b
    return 0


def _fits(bits: int, text: str) -> None:
    if bits > MAX_EXPR_BITS:
        raise ExprError(f"'{_clip(text)}': a value of more than {MAX_EXPR_BITS} bits (about "
                        f"{int(MAX_EXPR_BITS * 0.30103):,} digits) along the way; loopsim refuses it "
                        "rather than compute it (see docs/errors.md)")


def _names_in(node: ast.AST) -> set[str]:
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name) and n.id not in _FUNCS}


def resolve(params: Mapping[str, int | str], where: str) -> dict[str, int]:
    """Evaluate a table of parameters, each an int or an expression over the others.

    Returns name -> int. Cycles, unknown names and non-integers raise :class:`ExprError` naming
    ``where`` and the key (``where.KEY``).
    """
    values: dict[str, int] = {}
    pending: dict[str, Expr] = {}
    for k, v in params.items():
        if isinstance(v, bool) or not isinstance(v, (int, str)):
            raise ExprError(f"{where}.{k}={v!r} must be an integer or an expression string")
        if isinstance(v, int):
            values[k] = v
        else:
            pending[k] = parse(v, f"{where}.{k}")
    while pending:
        ready = [k for k, e in pending.items() if e.names <= values.keys()]
        if not ready:
            k, e = next(iter(pending.items()))
            unknown = sorted(e.names - values.keys() - pending.keys())
            if unknown:
                raise ExprError(f"{where}.{k}='{e.text}' names unknown parameter "
                                f"{', '.join(unknown)}; known: {', '.join(sorted(params))}")
            raise ExprError(f"{where}: parameters {', '.join(sorted(pending))} depend on each other in a cycle")
        for k in ready:
            values[k] = pending.pop(k).evaluate_int(values, f"{where}.{k}")
    return values
