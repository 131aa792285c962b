"""``--measured [LABEL=]FILE.json`` for entitle, compare and plot: which row each file measures."""

from __future__ import annotations

import argparse
import os
from typing import TYPE_CHECKING

from loopsim.base.errors import InputError

if TYPE_CHECKING:  # imported where a --measured file is read: most runs have none
    from loopsim.model import measured


def add_option(p: argparse.ArgumentParser) -> None:
    p.add_argument("--measured", action="append", default=[], metavar="[LABEL=]FILE.json",
                   help="a measured time (JSON with time_s in seconds, optionally the Neuron "
                        "profiler's summary fields): gap, fraction of entitlement, MFU, achieved "
                        "BW. With several tilings, LABEL (a row label, spec or kernel name) says "
                        "which one it measures (repeatable)")


def assign(items: list[str], keys: list[tuple[str, ...]]) -> dict[int, measured.Profile]:
    """Map row index -> Profile. ``keys[i]``: the names row i answers to (label, spec, kernel).

    A bare FILE needs exactly one row; ``LABEL=FILE`` must match exactly one row.
    """
    out: dict[int, measured.Profile] = {}
    for item in items:
        label, eq, path = item.rpartition("=")  # labels may hold "=" (matmul TN=512)
        if not eq or os.path.exists(item):
            label, path = "", item
        if not label:
            if len(keys) != 1:
                raise InputError(f"--measured {item}: {len(keys)} tilings; say which one it "
                                 f"measures as LABEL=FILE (labels: {', '.join(k[0] for k in keys)})")
            hits = [0]
        else:
            hits = [i for i, k in enumerate(keys) if label in k]
            if len(hits) != 1:
                what = "no tiling" if not hits else f"{len(hits)} tilings"
                raise InputError(f"--measured {item}: {what} called '{label}' (labels: "
                                 f"{', '.join(k[0] for k in keys)})")
        if hits[0] in out:
            raise InputError(f"--measured {item}: that tiling already has a measured file")
        from loopsim.model import measured

        out[hits[0]] = measured.load(path)
    return out


def comparison(rep, profile: measured.Profile) -> measured.Comparison:
    """The report's entitlement against the profile, the nest's read/write split passed along."""
    from loopsim.model import measured

    c = rep.counts
    return measured.compare(rep.entitlement, profile,
                            read_bytes=sum(t.read_bytes for t in c.tensors),
                            write_bytes=sum(t.write_bytes for t in c.tensors))


def single(args, e, rep=None) -> measured.Comparison | None:
    """For one kernel (``entitle``): the comparison with ``--measured``, or None without one.
    ``e``: the entitlement; ``rep``: the Report when there is one (for the read/write split)."""
    if not getattr(args, "measured", None):
        return None
    keys = (rep.counts.kernel, str(args.spec)) if rep is not None else ("hand count",)
    profile = assign(args.measured, [keys])[0]
    if rep is not None:
        return comparison(rep, profile)
    from loopsim.model import measured

    return measured.compare(e, profile)


def profile_only(args) -> measured.Profile | None:
    """For ``entitle --measured PROFILE`` with no SPEC and no ``--flops``/``--bytes``: the one
    profile whose W and Q stand in for the hand count; None when hand counts are given."""
    if args.flops is not None or args.bytes is not None or not getattr(args, "measured", None):
        return None
    if len(args.measured) != 1:
        raise InputError(f"--measured: without a SPEC give one profile, not {len(args.measured)}")
    item = args.measured[0]
    label, eq, path = item.rpartition("=")
    from loopsim.model import measured

    return measured.load(item if not eq or os.path.exists(item) else path)
