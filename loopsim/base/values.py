"""The one ``NAME=values`` grammar of the command line (``compare --vary``, ``check --vary``, and
for any other flag that gives a parameter several values, e.g. ``search --space``).

    NAME=V1,V2,...        the listed values, in order, repeats dropped
    NAME=LO..HI           every integer from LO to HI (both included)
    NAME=LO..HI:STEP      LO, LO+STEP, ... up to HI
    NAME=LO..HI:x2        LO, 2 LO, 4 LO, ... up to HI (``xN``: times N each time, N >= 2)

Every value is a positive integer (``_`` may group digits: ``1_024``). A range stays a lazy
:class:`range` (``1..10**20`` is checked by its ends, never walked); :func:`listed` makes a tuple of
one where a caller enumerates the values. Bad input is one :class:`InputError` line naming the flag
and the item.

>>> parse_all(["TN=128,256", "M=1..4", "K=64..512:64", "TM=16..128:x2"], "--vary")
{'TN': (128, 256), 'M': range(1, 5), 'K': range(64, 513, 64), 'TM': (16, 32, 64, 128)}
"""

from __future__ import annotations

from typing import Sequence

from loopsim.base.errors import InputError

__all__ = ["GRAMMAR", "parse", "parse_all", "listed"]

#: the grammar in one line, for help texts and errors
GRAMMAR = "NAME=INT,INT,... or NAME=LO..HI[:STEP|:x2]"


def _int(text: str, flag: str, where: str) -> int:
    t = text.strip().replace("_", "")
    try:
        v = int(t)
    except ValueError:
        raise InputError(f"{flag} {where}: '{text.strip()}' is not an integer") from None
    return v


def parse(item: str, flag: str) -> tuple[str, range | tuple[int, ...]]:
    """``"TN=128..512:x2"`` -> ("TN", (128, 256, 512)); see the module docstring."""
    name, eq, text = item.partition("=")
    name, text = name.strip(), text.strip()
    if not eq or not name.isidentifier() or not text:
        raise InputError(f"{flag} {item}: expected {GRAMMAR}")
    where = f"{name}={text}"
    if ".." not in text:
        vals = tuple(dict.fromkeys(_int(v, flag, where) for v in text.split(",")))
        bad = next((v for v in vals if v <= 0), None)
        if bad is not None:
            raise InputError(f"{flag} {where}: values must be > 0 ({bad} is not)")
        return name, vals
    span, _, step_t = text.partition(":")
    lo_t, _, hi_t = span.partition("..")
    lo, hi = _int(lo_t, flag, where), _int(hi_t, flag, where)
    if lo > hi:
        raise InputError(f"{flag} {where}: the range is empty ({lo} > {hi})")
    if lo <= 0:  # checked at the ends: a range is never walked
        raise InputError(f"{flag} {where}: values must be > 0 ({lo} is not)")
    step = step_t.strip()
    if not step:
        return name, range(lo, hi + 1)
    if step[:1] in "xX":
        f = _int(step[1:], flag, where)
        if f < 2:
            raise InputError(f"{flag} {where}: the factor after x must be >= 2, got {f}")
        out, v = [], lo
        while v <= hi:
            out.append(v)
            v *= f
        return name, tuple(out)
    s = _int(step, flag, where)
    if s <= 0:
        raise InputError(f"{flag} {where}: the step must be > 0, got {s}")
    return name, range(lo, hi + 1, s)


def parse_all(items: Sequence[str] | None, flag: str) -> dict[str, range | tuple[int, ...]]:
    """Every ``NAME=values`` item of a repeated flag; a name given twice is refused."""
    out: dict[str, range | tuple[int, ...]] = {}
    for item in items or ():
        name, vals = parse(item, flag)
        if name in out:
            raise InputError(f"{flag} {name}: given twice; give all its values in one {flag}")
        out[name] = vals
    return out


def listed(vals: range | tuple[int, ...], flag: str, name: str, limit: int = 100_000) -> tuple[int, ...]:
    """The values as a tuple, for a caller that enumerates them (at most ``limit``)."""
    n = (vals.stop - vals.start + vals.step - 1) // vals.step if isinstance(vals, range) else len(vals)
    if n > limit:  # a range's length by arithmetic: len() of a huge range overflows
        raise InputError(f"{flag} {name}: {n:,} values; at most {limit:,} can be listed "
                         "(give a step: LO..HI:STEP or LO..HI:x2)")
    return tuple(vals)
