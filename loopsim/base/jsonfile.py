"""Reading a JSON input (measurements, profiles) safely: it is data, and nothing in it executes.

``json`` alone turns hostile files into tracebacks: nesting 1,000 deep raises RecursionError, a
4,301-digit integer ValueError, a 401-digit one OverflowError where it is turned into a float,
and 5e-324 (subnormal) or 1e-400 (0.0) pass as positive or vanish silently. Here each is one
error line naming the file; the bounds are :data:`loopsim.base.limits.MAX_JSON_DEPTH` and
:data:`loopsim.base.limits.MAX_JSON_NUMBER_CHARS` (docs/errors.md).
"""

from __future__ import annotations

import json
import math
import re
import sys

from loopsim.base.limits import MAX_JSON_DEPTH, MAX_JSON_NUMBER_CHARS, short_text
from loopsim.base.tomlfile import read_text

_STRING = re.compile(r'"(?:[^"\\]|\\.)*"', re.S)
_NOT_BRACKET = re.compile(r"[^\[\]{}]+")


def read(path, shown: str, error: type[Exception]):
    """The JSON value of the file ``path`` (at most the limits' file size, strict UTF-8)."""
    return loads(read_text(path, shown, error, "JSON file"), shown, error)


def loads(text: str, shown: str, error: type[Exception]):
    """``json.loads(text)`` within the depth and number bounds; ``error(f"{shown}: ...")`` else."""
    depth = _depth(text)
    if depth > MAX_JSON_DEPTH:
        raise error(f"{shown}: JSON nested {depth:,} levels deep; loopsim reads at most "
                    f"{MAX_JSON_DEPTH} (see docs/errors.md)")
    try:
        return json.loads(text, parse_int=lambda s: _int(s, shown, error),
                          parse_float=lambda s: _float(s, shown, error),
                          parse_constant=lambda s: _constant(s, shown, error))
    except json.JSONDecodeError as e:
        raise error(f"{shown}: malformed JSON: {e}") from None
    except RecursionError:  # below the depth bound this cannot happen; kept as a last guard
        raise error(f"{shown}: JSON nested too deeply (see docs/errors.md)") from None


def _depth(text: str) -> int:
    """The deepest nesting of [ and { outside strings (an unbalanced file: json says where)."""
    brackets = _NOT_BRACKET.sub("", _STRING.sub("", text))
    if len(brackets) <= 2 * MAX_JSON_DEPTH:
        return len(brackets) // 2
    depth = top = 0
    for c in brackets:
        depth += 1 if c in "[{" else -1
        top = max(top, depth)
    return top


def _long(s: str, shown: str, error) -> None:
    if len(s) > MAX_JSON_NUMBER_CHARS:
        raise error(f"{shown}: a JSON number of {len(s):,} characters ({short_text(s, 30)}); "
                    f"loopsim reads at most {MAX_JSON_NUMBER_CHARS} (see docs/errors.md)")


def _int(s: str, shown: str, error) -> int:
    _long(s, shown, error)
    return int(s)


def _float(s: str, shown: str, error) -> float:
    _long(s, shown, error)
    v = float(s)
    if math.isinf(v):
        raise error(f"{shown}: the JSON number {s} is too large for a float (over 1.8e308)")
    if v == 0 and re.search(r"[1-9]", s.split("e")[0].split("E")[0]):
        raise error(f"{shown}: the JSON number {s} rounds to 0 (under 5e-324); write 0 or a "
                    "number a float holds")
    if v != 0 and abs(v) < sys.float_info.min:
        raise error(f"{shown}: the JSON number {s} is subnormal (under 2.2e-308 in magnitude): "
                    "too small to compute with")
    return v


def _constant(s: str, shown: str, error):
    raise error(f"{shown}: {s} is not JSON (a number must be finite)")
