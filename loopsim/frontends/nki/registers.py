"""NeuronCore registers in a trace, and the run-time values the user states for them.

A register (``nisa.register_alloc``) holds a 32-bit integer the engine sequencers branch on:
``nl.dynamic_range`` bounds and ``while reg:`` loops. ``nisa.register_move`` puts a constant (or
another register's value) in it: known while tracing. ``nisa.register_load`` (and
``register_alloc(tensor)``) reads it from memory at run time: not known, unless the user states
it with ``--register-value``:

- ``N``: every register read at run time holds N;
- ``FILE:LINE=N``: the register read at that line (the ``register_load`` call; FILE the file's
  name or a tail of its path) holds N, before any ``N`` given for all.

A value so stated is ASSUMED, and each use of it is noted with the site that read it. Sources:
register_alloc, "64x 32-bit registers per engine sequencer"; register_load, "a single scalar
value (up to 32-bit)" (nki.isa.register_alloc / register_load, NKI ISA reference).
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass

from loopsim.base import limits
from loopsim.base.errors import SpecError
from loopsim.frontends.nki.errors import TraceError

#: the range of a register's value: 32-bit (signed)
INT32_MIN, INT32_MAX = -2 ** 31, 2 ** 31 - 1

#: the option, as messages name it
OPTION = "--register-value"


@dataclass(frozen=True)
class Stated:
    """One ``--register-value``: ``value`` for the register read at ``file``:``line`` (both None:
    every register read at run time)."""
    value: int
    file: str | None = None
    line: int | None = None

    @property
    def text(self) -> str:
        return f"{OPTION} {self.value}" if self.line is None else \
            f"{OPTION} {self.file}:{self.line}={self.value}"

    def matches(self, path: str, line: int) -> bool:
        """Whether this statement names the register read at ``path``:``line``."""
        if self.line is None:
            return True
        if line != self.line:
            return False
        want = [p for p in self.file.replace("\\", "/").split("/") if p not in ("", ".")]
        have = os.path.realpath(path).split(os.sep)
        return have[-len(want):] == want


def parse(items) -> tuple[Stated, ...]:
    """The repeatable ``--register-value`` strings (``N`` or ``FILE:LINE=N``)."""
    out: list[Stated] = []
    for text in items or ():
        m = re.fullmatch(r"\s*(?:(.+?):(\d+)\s*=)?\s*(-?\d+)\s*", text or "")
        if not m:
            raise SpecError(f"{OPTION} {limits.short_text(text)!r} must look like N or FILE:LINE=N "
                            "(an integer a register holds at run time), e.g. 8 or kern.py:42=8")
        value = limits.flag_int(m.group(3), OPTION, SpecError)
        if not INT32_MIN <= value <= INT32_MAX:
            raise SpecError(f"{OPTION} {limits.short_text(text)}: {value} does not fit a register "
                            f"(32-bit: {INT32_MIN} to {INT32_MAX})")
        s = Stated(value, m.group(1).strip() if m.group(1) else None,
                   limits.flag_int(m.group(2), f"{OPTION} line", SpecError) if m.group(2) else None)
        if any((o.file, o.line) == (s.file, s.line) for o in out):
            raise SpecError(f"{OPTION}: {'every register' if s.line is None else f'{s.file}:{s.line}'}"
                            " is given twice")
        out.append(s)
    return tuple(out)


class Values:
    """The stated values of one kernel's traces, and which of them a register took."""

    def __init__(self, stated=()):
        self.stated = tuple(stated)
        self.used: set[Stated] = set()

    def at(self, path: str, line: int) -> Stated | None:
        """The statement for a register read at ``path``:``line`` (a site's before all's)."""
        for s in sorted(self.stated, key=lambda s: s.line is None):
            if s.matches(path, line):
                self.used.add(s)
                return s
        return None

    def check_used(self, shown: str) -> None:
        """Refuse a ``FILE:LINE=N`` no register was read at (a typo must not pass silently)."""
        for s in self.stated:
            if s.line is not None and s not in self.used:
                raise SpecError(f"{s.text}: the trace of {shown} read no register at "
                                f"{s.file}:{s.line} (nisa.register_load, or register_alloc of a "
                                "tensor): a typo, or a line the kernel does not reach with the "
                                "values given")


class Register:
    """A register of the trace (``nisa.register_alloc``): ``value`` an int when known (moved in,
    or stated), ``stated`` the statement that gave a run-time value, ``site`` FILE:LINE of the
    call that last wrote it."""

    def __init__(self, site: str, value: int | None = None, stated: Stated | None = None,
                 read_at: str | None = None):
        self.site, self.value, self.stated, self.read_at = site, value, stated, read_at

    def set(self, other: "Register") -> None:
        self.site, self.value, self.stated, self.read_at = \
            other.site, other.value, other.stated, other.read_at

    def describe(self) -> str:
        if self.read_at is not None:
            return f"the register read at {self.read_at}"
        return f"the register set at {self.site}" if self.value is not None else \
            f"the register allocated at {self.site}, never written"

    def resolve(self, use: str) -> int:
        """The register's value for ``use`` (what the kernel uses it as: "nl.dynamic_range(...):
        its stop"): known or stated (the caller notes a stated one, ASSUMED), else a refusal
        naming the option to give."""
        if self.value is None and self.read_at is None:
            raise TraceError(f"{use} is {self.describe()} (register_move or register_load it first)")
        if self.value is None:
            file, line = self.read_at.rsplit(":", 1)
            raise TraceError(f"{use} is {self.describe()}, a value known only at run time "
                             f"(data-dependent control flow); state it with {OPTION} N (every "
                             f"register) or {OPTION} {os.path.basename(file)}:{line}=N")
        return self.value

    def _use(self, *_):
        raise TraceError(f"{self.describe()} used as a Python value (arithmetic, an index): "
                         "loopsim follows a register in nl.dynamic_range bounds, register_move "
                         "and while/if tests only")

    __index__ = __int__ = __bool__ = __float__ = __iter__ = _use
    __add__ = __radd__ = __sub__ = __rsub__ = __mul__ = __rmul__ = _use
    __lt__ = __gt__ = __le__ = __ge__ = _use

    def __repr__(self):
        return f"<register {self.describe()}>"
