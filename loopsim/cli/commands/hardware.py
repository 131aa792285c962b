"""``loopsim hardware [NAME]``: list the sheets, or print one with the source of every number."""

from __future__ import annotations

from loopsim.targets import hardware


def register(sub) -> None:
    p = sub.add_parser("hardware", help="list hardware sheets or show one with its sources",
                       description=__doc__)
    p.add_argument("name", nargs="?", metavar="NAME", help="sheet name or .toml path")
    p.set_defaults(func=run)


def run(args) -> int:
    if args.name is None:
        for n in hardware.names():
            hw = hardware.load(n)
            print(f"{n:<14} {hw.scope}")
        return 0
    print(hardware.load(args.name).describe())
    return 0
