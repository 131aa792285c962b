"""Reading a TOML input (spec, sheet, profile) safely: bounded size, strict UTF-8, bounded keys.

:mod:`tomllib` alone turns hostile files into tracebacks or hangs: a non-UTF-8 file raises
``UnicodeDecodeError``, a 5,000-digit integer ``ValueError``, a deeply nested array
``RecursionError``, and a dotted key of 100,000 parts takes minutes (its cost is quadratic in the
parts). Here each becomes one :class:`~loopsim.base.errors.LoopsimError` line naming the file.
"""

from __future__ import annotations

import os
import re
import tomllib
from pathlib import Path

from loopsim.base.limits import MAX_FILE_BYTES, MAX_KEY_PARTS

#: a bare or quoted key part followed by a dot, MAX_KEY_PARTS times in a row
#: (a bare part starts where a run of key characters starts and is taken whole, so a 100,000-digit
#: value is scanned once, not once per digit: the search stays linear in the file)
_LONG_KEY = re.compile(r"(?:(?:(?<![A-Za-z0-9_-])[A-Za-z0-9_-]++|\"[^\"\n]*\"|'[^'\n]*')[ \t]*\.[ \t]*){%d}"
                       % MAX_KEY_PARTS)


def is_path(ref: str, suffixes: tuple[str, ...] = (".toml",)) -> bool:
    """Whether a command-line reference names a file (it has a path separator or ends in one of
    ``suffixes``) rather than a bundled name. The rule is textual, so a file or folder named
    ``matmul`` in the working directory never hides the bundled ``matmul``."""
    return any(c in ref for c in {os.sep, os.altsep or os.sep, "/"}) or ref.endswith(suffixes)


def existing_file(ref: str, error: type[Exception], what: str) -> Path:
    """``Path(ref)`` if it is a file; otherwise ``error('REF: no such WHAT')`` (or cannot read)."""
    p = Path(ref)
    try:
        ok = p.is_file()
    except OSError as e:  # a name too long, a loop of links
        raise error(f"{clip(ref)}: cannot read ({e.strerror})") from None
    if not ok:
        raise error(f"{clip(ref)}: no such {what}")
    return p


def clip(text: str, n: int = 80) -> str:
    """``text`` shortened to ``n`` characters for an error message."""
    return text if len(text) <= n else text[: n - 3] + "..."


def read_text(path: Path | str, shown: str, error: type[Exception], what: str = "file") -> str:
    """The file's text: at most :data:`MAX_FILE_BYTES` bytes, decoded as strict UTF-8."""
    try:
        with open(path, "rb") as f:
            data = f.read(MAX_FILE_BYTES + 1)
    except OSError as e:
        raise error(f"{shown}: cannot read ({e.strerror or type(e).__name__})") from None
    if len(data) > MAX_FILE_BYTES:
        raise error(f"{shown}: the {what} is larger than {MAX_FILE_BYTES:,} bytes, the largest "
                    "loopsim reads (see docs/errors.md)")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise error(f"{shown}: not UTF-8 text (byte 0x{data[e.start]:02x} at offset {e.start}); "
                    "save it as UTF-8") from None


def loads(text: str, shown: str, error: type[Exception], malformed: str = "malformed TOML") -> dict:
    """Parse TOML text; every failure is ``error('SHOWN: MALFORMED: why')`` on one line."""
    if len(text) > MAX_FILE_BYTES:
        raise error(f"{shown}: {len(text):,} characters, more than the {MAX_FILE_BYTES:,} loopsim reads")
    m = _LONG_KEY.search(text)
    if m:
        line = text.count("\n", 0, m.start()) + 1
        raise error(f"{shown}: {malformed}: line {line}: a dotted key of more than {MAX_KEY_PARTS} "
                    "parts (see docs/errors.md)")
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise error(f"{shown}: {malformed}: {e}") from None
    except RecursionError:
        raise error(f"{shown}: {malformed}: arrays or inline tables nested too deeply") from None
    except ValueError as e:  # int() beyond Python's 4,300-digit limit
        why = "an integer of more than 4,300 digits" if "digits" in str(e) else " ".join(str(e).split())
        raise error(f"{shown}: {malformed}: {why} (the largest integer loopsim accepts is 2^62)") from None
