"""The explicit limits on what loopsim accepts, each with its reason (docs/errors.md lists them).

Every input is checked against these before it is used, so no later step can wrap an int64, recurse
past Python's stack, or run for hours on a hostile file. A value over a limit is a one-line error
naming the file/field (or flag), the value and the limit.
"""

from __future__ import annotations

import math

#: largest integer a parameter, a dimension, a step, a sheet number or a byte count may be.
#: 2**62 leaves one bit of headroom below int64's 2**63 - 1, so the int64 arithmetic of the trace
#: and the numba replay (block bytes, the sum of two sizes) can never wrap.
MAX_INT = 2**62
#: largest tensor, in bytes (elements x bytes per element), for the same reason: every block's and
#: every tile's byte count is at most its tensor's, so it fits int64 with room for one addition.
MAX_TENSOR_BYTES = 2**62
#: largest spec, sheet or profile file read, bytes (the biggest bundled spec is ~6 KiB).
MAX_FILE_BYTES = 1 << 20
#: deepest loop nest (real NKI kernels nest fewer than 10 loops). The trace broadcasts one array
#: axis per loop plus one per tensor dimension, and numpy allows 64 axes; it also keeps the nest
#: parser's recursion shallow.
MAX_NEST_DEPTH = 32
#: numpy's array axes: a traced nest's loops and its tensors' dimensions together (the counts
#: broadcast one axis per each).
NUMPY_AXES = 64
#: most dimensions of a tensor (with MAX_NEST_DEPTH, within numpy's 64 array axes).
MAX_TENSOR_DIMS = 8
#: longest TOML dotted key or table header, in parts (tomllib is quadratic in it).
MAX_KEY_PARTS = 64
#: largest arithmetic expression: characters, syntax-tree nodes, and nesting depth.
MAX_EXPR_CHARS = 10_000
MAX_EXPR_NODES = 2_000
MAX_EXPR_DEPTH = 100
#: largest intermediate value of an expression, in bits (numerator or denominator): ample for
#: byte formulas over parameters <= 2**62, and it stops ``((M**64)**64)**64`` before it is computed.
MAX_EXPR_BITS = 4096
#: most physical cores an ``[lnc]`` split may name (a trn2 device has 8 NeuronCores).
MAX_LNC_CORES = 64
#: most chips a ``[parallel]`` split may name.
MAX_CHIPS = 65_536
#: largest fixed cost of one matmul instruction on a sheet, Tensor Engine cycles (real ones are
#: tens of cycles); summed over up to 2^40 instructions it stays within int64.
MAX_MM_INIT_CYCLES = 1_000_000
#: most samples ``capacity --samples`` replays (each is a full LRU and OPT replay).
MAX_SAMPLES = 1_000


def describe_int(v: int) -> str:
    """A possibly huge integer, shortened for an error message (its digit count for long ones)."""
    if abs(v) < 10**30:
        return str(v)
    digits = int(math.log10(abs(v))) + 1 if v.bit_length() < 10_000 else int(v.bit_length() * 0.30103) + 1
    return f"a {digits}-digit integer"


def check_int(v: int, where: str, error: type[Exception], *, limit: int = MAX_INT, what: str = "") -> int:
    """``v`` unless its magnitude exceeds ``limit``; then ``error('where=v exceeds ...')``."""
    if abs(v) > limit:
        lim = "2^62" if limit == MAX_INT else f"{limit:,}"
        raise error(f"{where}={describe_int(v)} exceeds the largest {what or 'value'} loopsim accepts "
                    f"({lim}; see docs/errors.md)")
    return v
#: longest a kernel file's code may run under the shim (its import and the kernel call), seconds.
#: Tracing records each loop once, so real kernels take well under a second; past this the
#: kernel is stopped as an endless loop (one line, exit 2).
MAX_TRACE_S = 60.0
#: most dimensions of an SPMD launch grid (``--grid G0xG1...``): each is one loop axis of the
#: trace, so the same bound as a tensor's rank keeps the nest within numpy's 64 array axes.
MAX_GRID_DIMS = MAX_TENSOR_DIMS


def short_text(text: object, width: int = 60) -> str:
    """A user's text cut to ``width`` characters for an error message (a long one says its length)."""
    s = str(text)
    return s if len(s) <= width else f"{s[:width - 20]}...<{len(s):,} characters>"


def flag_int(text: str, where: str, error: type[Exception], *, limit: int = MAX_INT,
             what: str = "integer") -> int:
    """A decimal integer typed by the user (a flag's value, a dimension), within ``limit``: more
    than 19 digits is over 2^62 for sure and refused before ``int()`` (which refuses 4,300)."""
    digits = text.replace("_", "").lstrip("+-")
    if digits.isdigit() and len(digits) > 19:
        raise error(f"{where}=<{len(digits):,} digits> exceeds the largest {what} loopsim accepts "
                    "(2^62; see docs/errors.md)")
    try:
        v = int(text.replace("_", ""))
    except ValueError:
        raise error(f"{where}={short_text(text, 40)!r} must be an integer") from None
    return check_int(v, where, error, limit=limit, what=what)
#: longest replay loopsim starts without ``--force``, estimated seconds on one core (measured on
#: the trace's own first requests before the replay starts; the estimate is printed above
#: ``loopsim.sim.stream.NOTE_ABOVE`` requests). A bigger nest is refused with its estimate.
MAX_WORK_S = 600.0
#: most tilings ``search --top`` lists (it keeps that many in memory and prints each).
MAX_TOP = 1_000
#: the most instructions one ``clockwork`` page animates (its slider has count x cycles per
#: instruction steps); ``--k``, ``--n``, ``--m`` are bounded by the sheet's tile limits.
MAX_CLOCKWORK_COUNT = 4096
#: most ``check --examples`` (each is a full simulation).
MAX_EXAMPLES = 100_000
#: largest ``--jobs`` typed; more than the cores available is capped at the cores
#: (``loopsim.analyses.parallel.check_jobs``): more processes than cores only fork and wait.
MAX_JOBS = 4_096

#: set by ``--force`` (the CLI): a replay estimated over :data:`MAX_WORK_S` runs anyway. A module
#: flag (not an argument threaded through every analysis) so forked workers inherit it.
_forced = False


def force_long_work(on: bool = True) -> None:
    """``--force``: allow work estimated over :data:`MAX_WORK_S` for the rest of this process."""
    global _forced
    _forced = bool(on)


def check_work(seconds: float, what: str, error: type[Exception]) -> None:
    """Refuse work estimated at ``seconds`` (> :data:`MAX_WORK_S`) unless ``--force`` was given."""
    if seconds > MAX_WORK_S and not _forced:
        raise error(f"{what}: estimated {seconds:,.0f} s on one core, more than loopsim runs "
                    f"without --force ({MAX_WORK_S:,.0f} s; see docs/errors.md); use larger tiles "
                    "or smaller parameters (--set), or pass --force to run it")


def bounded(flag: str, lo: int, hi: int):
    """An argparse ``type=`` for the integer flag ``flag`` in ``lo..hi``: a value outside is a
    :class:`loopsim.base.errors.FlagError` (one ``loopsim: error:`` line, exit 2)."""
    from loopsim.base.errors import FlagError

    top = "2^62" if hi == MAX_INT else f"{hi:,}"

    def parse(text: str) -> int:
        digits = text.strip().replace("_", "").lstrip("+-")
        if digits.isdigit() and len(digits) > 19:
            raise FlagError(f"{flag} <{len(digits):,} digits> is not between {lo:,} and {top} "
                            "(see docs/errors.md)")
        try:
            v = int(text.replace("_", ""))
        except ValueError:
            raise FlagError(f"{flag} {short_text(text, 40)!r} is not an integer") from None
        if not lo <= v <= hi:
            raise FlagError(f"{flag} {v} is not between {lo:,} and {top} (see docs/errors.md)")
        return v

    parse.__name__ = "integer"
    return parse
#: deepest nesting of arrays and objects in a JSON input (measurements, profiles): loopsim's own
#: files nest 3 levels; ``json`` recurses once per level and raised RecursionError at ~1,000.
MAX_JSON_DEPTH = 64
#: longest number literal in a JSON input, characters (a float64 needs at most 24, an integer
#: up to 2^62 19 digits); ``json`` refused 4,301 digits with ValueError and 401 overflowed float().
MAX_JSON_NUMBER_CHARS = 100
#: a measured time in seconds is in MIN_TIME_S .. MAX_TIME_S: one picosecond is a bound of ours,
#: far below one Tensor Engine cycle (0.36-0.42 ns at the sheets' 2.4-2.8 GHz), that keeps fitted
#: roofs within float range; a week is longer than any profile. 5e-324 s (subnormal) made
#: calibrate fit a bandwidth of 10^330. (calibrate and ``--measured`` both read these.)
MIN_TIME_S = 1e-12
MAX_TIME_S = 604_800.0
