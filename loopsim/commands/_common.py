"""Options and steps shared by the commands."""

from __future__ import annotations

import argparse
import json
import math
import sys

from ..counts import POLICIES


def add_kernel_options(p: argparse.ArgumentParser, *, many: bool = False) -> None:
    """SPEC, --hardware, --set, --policy, --sbuf-bytes, --json."""
    if many:
        p.add_argument("spec", nargs="+", metavar="SPEC", help="bundled spec names or .toml paths")
    else:
        p.add_argument("spec", metavar="SPEC", help="a bundled spec name (e.g. matmul) or a .toml path")
    p.add_argument("--hardware", "-H", required=True, metavar="NAME", help="hardware sheet name or .toml path")
    p.add_argument("--set", action="append", default=[], metavar="NAME=INT", dest="sets",
                   help="override a spec parameter (repeatable)")
    p.add_argument("--policy", choices=POLICIES, default="as-written",
                   help="as-written (default): Q as the nest states it; lru/opt: what SBUF of "
                        "the given capacity could reach with this loop order")
    p.add_argument("--sbuf-bytes", type=int, default=None, metavar="N",
                   help="SBUF capacity in bytes (default: the sheet's)")
    p.add_argument("--json", action="store_true", help="print one JSON object")


def dump_json(obj) -> None:
    """Print JSON; non-finite floats become null so the output is strict JSON."""
    print(json.dumps(_clean(obj), indent=2))


def _clean(o):
    if isinstance(o, float) and not math.isfinite(o):
        return None
    if isinstance(o, dict):
        return {k: _clean(v) for k, v in o.items()}
    if isinstance(o, (list, tuple)):
        return [_clean(v) for v in o]
    return o
