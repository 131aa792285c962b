"""The guard around running a kernel file's code (its import and the kernel call).

A traced kernel is code: loopsim runs it. What it does that is not an NKI call must not break
loopsim's contract (docs/errors.md), so while it runs:

- its ``print()`` output goes to stderr (stdout carries loopsim's report, e.g. ``--json``);
- ``sys.exit(N)`` / ``raise SystemExit`` is an error of the kernel (one line, exit 2), never
  loopsim's own exit status;
- it is stopped after :data:`loopsim.base.limits.MAX_TRACE_S` seconds (an endless loop) with one
  line (only where a timer can be set: the main thread of a Unix process);
- a keyword value is passed as given only when it is of the kind its default is (an integer
  parameter takes an integer: ``True``, ``2.5``, ``'x'``, ``None`` or ``(1, 2)`` are refused,
  never replaced by the default), and every number in it is finite and within 2^62.
"""

from __future__ import annotations

import contextlib
import inspect
import math
import signal
import sys
import threading
import time

from loopsim.base import limits
from loopsim.frontends.nki.errors import TraceError


class _Overtime(BaseException):
    """Raised by the timer inside the kernel's code: a BaseException, so that the kernel's own
    ``except Exception`` cannot swallow it."""


@contextlib.contextmanager
def running(shown: str, func: str, limit_s: float | None = None):
    """Run the kernel file's code inside: its prints held for stderr, its exit an error, a time
    limit (``limit_s``, default :data:`loopsim.base.limits.MAX_TRACE_S`)."""
    limit_s = limits.MAX_TRACE_S if limit_s is None else limit_s
    printed = _Printed()
    try:
        with contextlib.redirect_stdout(printed), _timer(limit_s):
            yield
    except SystemExit as e:
        code = e.code if e.code is None or isinstance(e.code, int) else repr(e.code)[:60]
        err = TraceError(f"the kernel called sys.exit({'' if code is None else code}): a kernel "
                         "ends by returning, and its exit is an error of the kernel")
        printed.note_on(err)
        raise err.with_traceback(e.__traceback__) from None
    except _Overtime as e:
        err = TraceError(f"the kernel ran for more than {limit_s:g} s under the shim (an endless "
                         "loop?); tracing records each loop once, so a real kernel takes well "
                         f"under a second (limit: {limits.MAX_TRACE_S:g} s, see docs/errors.md)")
        printed.note_on(err)
        raise err.with_traceback(e.__traceback__) from None
    except BaseException as e:
        printed.note_on(e)
        raise
    printed.relay()


class _Printed:
    """What the kernel's code prints, held (its last :data:`KEEP` characters): after a trace
    that succeeds it is written to stderr as printed; when the trace fails, the error's one line
    says how many lines it printed and the last one (the contract is one error line)."""

    KEEP = 1 << 16

    def __init__(self):
        self.text, self.lines = "", 0

    def write(self, s) -> int:
        s = str(s)
        self.lines += s.count("\n")
        self.text = (self.text + s)[-self.KEEP:]
        return len(s)

    def flush(self) -> None:
        pass

    def relay(self) -> None:
        if self.text:
            sys.stderr.write(self.text)
            sys.stderr.flush()

    def note_on(self, e: BaseException) -> None:
        """Append "(the kernel printed N lines; the last: '...')" to ``e``'s message."""
        last = next((x for x in reversed(self.text.splitlines()) if x.strip()), "")
        if not last or not e.args or not isinstance(e.args[0], str):
            return
        n = max(self.lines, 1)
        e.args = (f"{e.args[0]} (the kernel printed {n:,} line{'s' * (n != 1)} before; the last: "
                  f"{_short(last)})",) + e.args[1:]


@contextlib.contextmanager
def _timer(limit_s: float):
    """SIGALRM after ``limit_s`` seconds raising :class:`_Overtime`; a no-op off the main thread
    or where the platform has no interval timer."""
    if not hasattr(signal, "setitimer") or threading.current_thread() is not threading.main_thread():
        yield
        return

    def ring(signum, frame):
        raise _Overtime()

    old = signal.signal(signal.SIGALRM, ring)
    t0 = time.monotonic()
    left, _ = signal.setitimer(signal.ITIMER_REAL, limit_s)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)
        if left:  # an outer timer was running: give it back what it had left (at least 1 ms)
            signal.setitimer(signal.ITIMER_REAL, max(left - (time.monotonic() - t0), 0.001))


def invoke(fn, call_args: dict, shown: str, func: str):
    """``fn(**call_args)`` once every keyword value is of its default's kind (:func:`check_value`)."""
    params = inspect.signature(fn).parameters
    for name, value in call_args.items():
        prm = params.get(name)
        default = prm.default if prm is not None else inspect.Parameter.empty
        check_value(name, value, default)  # load_kernel prefixes "FILE: kernel FUNC: "
    return fn(**call_args)


def check_value(name: str, value, default, where: str = "") -> None:
    """Refuse a keyword value of another kind than its default (int, float, bool, str, tuple), or
    holding a non-finite float or an integer over 2^62 (one line naming the parameter, after the
    prefix ``where``)."""
    shown = _short(value)
    kind = _kind(default)
    if kind is not None and _kind(value) != kind and not (kind == "number" and _kind(value) == "integer"):
        raise TraceError(f"{where}parameter {name}={shown} must be {_ARTICLE[kind]} {kind}, "
                         f"as its default {_short(default)} is (--kwarg values are passed as "
                         "given, never replaced by the default)")
    for v in _leaves(value):
        if isinstance(v, float) and not math.isfinite(v):
            raise TraceError(f"{where}parameter {name}={shown} holds {v}, not a finite number")
        if isinstance(v, int) and not isinstance(v, bool):
            limits.check_int(v, f"{where}parameter {name}", TraceError, what="integer")


_ARTICLE = {"integer": "an", "number": "a", "bool": "a", "string": "a", "tuple": "a"}


def _kind(v) -> str | None:
    """The kind of a default value a given value must match, or None (anything goes)."""
    if isinstance(v, bool):
        return "bool"
    if isinstance(v, int):
        return "integer"
    if isinstance(v, float):
        return "number"
    if isinstance(v, str):
        return "string"
    if isinstance(v, (tuple, list)):
        return "tuple"
    return None


def _leaves(v, depth: int = 0):
    if isinstance(v, (tuple, list, set, frozenset)) and depth < 50:
        for x in v:
            yield from _leaves(x, depth + 1)
    elif isinstance(v, dict) and depth < 50:
        for x in (*v.keys(), *v.values()):
            yield from _leaves(x, depth + 1)
    else:
        yield v


def _short(v) -> str:
    if isinstance(v, int) and not isinstance(v, bool):
        return limits.describe_int(v)
    text = repr(v)
    return text if len(text) <= 60 else text[:57] + "..."
