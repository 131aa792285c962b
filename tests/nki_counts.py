"""What the NKI tests read off a traced kernel: its counts on trn2-core, and the line of its file
that holds a piece of text (so a test names the line it checks)."""

from __future__ import annotations

from pathlib import Path

from loopsim.model import pipeline
from loopsim.targets import hardware

TRN2 = hardware.load("trn2-core")


def bytes_of(kernel) -> dict:
    """W, Q and each tensor's (read, written) bytes of ``kernel`` analysed on trn2-core."""
    c = pipeline.analyze_kernel(kernel, TRN2).counts
    return {"W": c.flops, "Q": c.Q, **{t.name: (t.read_bytes, t.write_bytes) for t in c.tensors}}


def line_of(path: Path, text: str) -> int:
    """The first line of ``path`` holding ``text`` (1-based)."""
    return next(i for i, ln in enumerate(path.read_text().splitlines(), 1) if text in ln)
