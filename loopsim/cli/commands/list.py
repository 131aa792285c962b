"""``loopsim list``: the bundled specs and hardware sheets, one line each: what it is and its key
parameters (a spec's shape and tile parameters and how many stages it has; a sheet's scope, bf16
roof P, HBM bandwidth BW and SBUF). ``--json`` prints the same as one object."""

from __future__ import annotations

from loopsim.targets import hardware
from loopsim.frontends import spec
from loopsim.cli.commands._common import dump_json


def register(sub) -> None:
    p = sub.add_parser("list", help="list the bundled specs and hardware sheets, one line each",
                       description=__doc__)
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.set_defaults(func=run)


def _first_sentence(text: str) -> str:
    s = " ".join(str(text).split())
    cut = s.find(". ")
    return s[:cut + 1] if 0 < cut else s


def _clip(s: str, width: int) -> str:
    return s if len(s) <= width else s[:width - 1].rstrip() + "…"


def iec(n: int) -> str:
    """Bytes in IEC units (KiB = 1024 B), exact when a whole number of units."""
    for unit, size in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= size:
            v = n / size
            return f"{v:.0f} {unit}" if n % size == 0 else f"{v:.3g} {unit}"
    return f"{n} B"


def spec_entry(name: str) -> dict:
    """One bundled spec: its name, the first sentence of its ``about``, parameters, stages."""
    sf = spec.read(name)
    nest = sf.data.get("nest", {})
    stages = list(nest) if isinstance(nest, dict) and "body" not in nest else []
    return {"name": name, "about": _first_sentence(sf.data["kernel"].get("about", "")),
            "params": {k: v for k, v in sf.params.items()},
            "tensors": sorted(sf.data["tensors"]), "stages": stages}


def hardware_entry(name: str) -> dict:
    """One bundled sheet: scope, bf16 roof P (FLOP/s), HBM bandwidth BW (bytes/s), SBUF bytes per core."""
    hw = hardware.load(name)
    return {"name": name, "scope": hw.scope, "physical_cores": hw.physical_cores,
            "P_bf16": hw.P("bf16") if "bf16" in hw.dtypes() else None, "bw": hw.bw,
            "sbuf_bytes": hw.sbuf_bytes, "illustrative": hw.illustrative}


def run(args) -> int:
    from loopsim.base.fmt import si as _si

    specs = [spec_entry(n) for n in spec.bundled_names()]
    sheets = [hardware_entry(n) for n in hardware.names()]
    if args.json:
        dump_json({"specs": specs, "hardware": sheets})
        return 0
    w = max(len(s["name"]) for s in specs)  # names in one column; long texts clipped
    print(f"specs ({len(specs)}; use the name as SPEC, or a .toml path):")
    for s in specs:
        params = " ".join(f"{k}={v}" for k, v in s["params"].items() if isinstance(v, int))
        n = len(s["stages"])
        stages = f", {n} stage{'s' * (n > 1)}" if n else ""
        print(f"  {s['name']:<{w}}  {params}{stages}: {_clip(s['about'], 64)}")
    print(f"hardware sheets ({len(sheets)}; use the name with --hardware):")
    w = max(len(h["name"]) for h in sheets)
    for h in sheets:
        P = _si(h["P_bf16"], "FLOP/s") if h["P_bf16"] else "no bf16 roof"
        extra = ", illustrative" if h["illustrative"] else ""
        print(f"  {h['name']:<{w}}  P {P} bf16, BW {_si(h['bw'], 'B/s')}, SBUF {iec(h['sbuf_bytes'])}"
              f" per core; {_clip(h['scope'] + extra, 60)}")
    return 0
