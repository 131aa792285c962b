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
