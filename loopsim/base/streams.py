"""The CLI's output streams in a hostile environment: a terminal that cannot print µ × ≥, a full
device, a reader that stops reading.

:func:`ascii_fallback` makes a text stream whose encoding cannot print loopsim's symbols spell them
in ASCII (``µs`` -> ``us``, ``×`` -> ``x``, ``≥`` -> ``>=``) instead of raising
``UnicodeEncodeError``; the renderers keep writing Unicode. :func:`silence_stdout` points the
process's stdout at ``/dev/null`` after a write error, so the interpreter's final flush cannot
print a traceback of its own.
"""

from __future__ import annotations

import codecs
import os
import sys
import unicodedata

#: ASCII spellings of the symbols loopsim prints; anything else falls back to its NFKD letters or "?"
SPELLINGS = {
    "µ": "u", "μ": "u", "×": "x", "≥": ">=", "≤": "<=", "≈": "~", "÷": "/", "·": "*", "—": "-",
    "–": "-", "…": "...", "→": "->", "←": "<-", "²": "^2", "³": "^3", "√": "sqrt", "∞": "inf",
    "±": "+/-", "≠": "!=", "′": "'", "“": '"', "”": '"', "‘": "'", "’": "'", "•": "*", "│": "|",
    "─": "-", "▕": "|", "█": "#", "░": ".", "▏": "|", "§": "S", "°": "deg",
}
ERRORS = "loopsim-ascii"


def _spell(err: UnicodeEncodeError):
    out = []
    for ch in err.object[err.start:err.end]:
        s = SPELLINGS.get(ch)
        if s is None:
            s = unicodedata.normalize("NFKD", ch).encode("ascii", "ignore").decode() or "?"
        out.append(s)
    return "".join(out), err.end


codecs.register_error(ERRORS, _spell)


def ascii_fallback(stream) -> None:
    """Make ``stream`` spell unprintable symbols in ASCII (only when its encoding cannot print them)."""
    enc = getattr(stream, "encoding", None) or "ascii"
    try:
        "µ×≥≤÷·—≈".encode(enc)
        return
    except (UnicodeEncodeError, LookupError):
        pass
    reconfigure = getattr(stream, "reconfigure", None)
    if reconfigure is not None:
        try:
            reconfigure(errors=ERRORS)
        except (ValueError, OSError):  # a detached or closed stream: leave it
            pass


def silence_stdout() -> None:
    """After a write error on stdout: drop what is buffered and send later writes to /dev/null."""
    try:
        fd = sys.stdout.fileno()
        null = os.open(os.devnull, os.O_WRONLY)
        os.dup2(null, fd)
        os.close(null)
    except (AttributeError, OSError, ValueError):  # not a real file (captured in tests)
        pass
