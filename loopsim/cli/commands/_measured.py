"""``--measured [LABEL=]FILE.json`` for entitle, compare and plot: which row each file measures."""

from __future__ import annotations

import argparse
import os
from typing import TYPE_CHECKING

from loopsim.base.errors import InputError, LoopsimError

if TYPE_CHECKING:  # imported where a --measured file is read: most runs have none
    from loopsim.model import measured


def add_option(p: argparse.ArgumentParser) -> None:
    p.add_argument("--measured", action="append", default=[], metavar="[LABEL=]FILE.json",
                   help="a measured time: JSON with time_s in seconds, a Neuron profiler summary "
                        "(timed by total_active_time), or a list of {spec, set, time_s} records "
                        "as calibrate reads them (data: nothing in it runs): gap table, fraction "
                        "of entitlement, MFU, achieved BW. With several tilings, LABEL (a row "
                        "label, spec or kernel name) or the records' spec/set say which one it "
                        "measures (repeatable)")


def assign(items: list[str], keys: list[tuple[str, ...]],
           params: list[dict[str, int]] | None = None) -> dict[int, measured.Profile]:
    """Map row index -> Profile. ``keys[i]``: the names row i answers to (label, spec, kernel);
    ``params[i]``: its parameter values (for records that name a spec and its ``set``).

    A file holds one measurement or a list of them (the format ``calibrate`` reads). A record
    naming its tiling (``label``, or ``spec`` with ``set``) goes to the row it names; a bare
    ``{"time_s"}`` needs exactly one row, or ``LABEL=FILE`` naming exactly one.
    """
    from loopsim.model import measured

    params = params or [{} for _ in keys]
    out: dict[int, measured.Profile] = {}
    fulls: dict[int, dict | None] = {}

    def full(prof) -> dict | None:
        """The record's parameters with its spec's defaults (a TOML spec is data and is read; a
        kernel file is never run: only its ``set`` is compared)."""
        if id(prof) not in fulls:
            fulls[id(prof)] = None
            if prof.spec is not None and "::" not in prof.spec:
                from loopsim.frontends import spec as spec_mod

                try:
                    fulls[id(prof)] = spec_mod.bind_params(spec_mod.read(prof.spec), dict(prof.sets))
                except LoopsimError:
                    fulls[id(prof)] = None  # not a spec we can read: compare its set only
        return fulls[id(prof)]

    def match(prof, i) -> bool:
        return measured.matches(prof, keys[i], params[i], full(prof))

    def put(i: int, prof, item: str) -> None:
        if i in out:
            raise InputError(f"--measured {item}: tiling '{keys[i][0]}' already has a measured time")
        out[i] = prof

    for item in items:
        label, eq, path = item.rpartition("=")  # labels may hold "=" (matmul TN=512)
        if not eq or os.path.exists(item):
            label, path = "", item
        profs = measured.load_all(path)
        labels = ", ".join(k[0] for k in keys)
        if label:
            hits = [i for i, k in enumerate(keys) if label in k]
            if len(hits) != 1:
                what = "no tiling" if not hits else f"{len(hits)} tilings"
                raise InputError(f"--measured {item}: {what} called '{label}' (labels: {labels})")
            mine = [p for p in profs if match(p, hits[0])]
            if len(profs) == 1:
                mine = profs
            if len(mine) != 1:
                raise InputError(f"--measured {item}: {len(mine)} of its {len(profs)} records "
                                 f"name '{label}'; expected one")
            put(hits[0], mine[0], item)
            continue
        named = [p for p in profs if p.spec is not None or p.label is not None]
        if len(profs) == 1 and not named:
            if len(keys) != 1:
                raise InputError(f"--measured {item}: {len(keys)} tilings; say which one it "
                                 f"measures as LABEL=FILE (labels: {labels})")
            put(0, profs[0], item)
            continue
        placed = 0
        for j, prof in enumerate(profs):
            hits = [i for i in range(len(keys)) if match(prof, i)]
            if len(hits) > 1:
                raise InputError(f"--measured {item}: record [{j}] matches {len(hits)} tilings; "
                                 f"give it a label (labels: {labels})")
            if hits:
                put(hits[0], prof, item)
                placed += 1
        if not placed:
            raise InputError(f"--measured {item}: none of its {len(profs)} records names a tiling "
                             f"analysed here (labels: {labels})")
    return out


def comparison(rep, profile: measured.Profile) -> measured.Comparison:
    """The report's entitlement against the profile, the nest's read/write split passed along."""
    from loopsim.model import measured

    c = rep.counts
    return measured.compare(rep.entitlement, profile,
                            read_bytes=sum(t.read_bytes for t in c.tensors),
                            write_bytes=sum(t.write_bytes for t in c.tensors),
                            verdict=rep.verdict, predicted_lines=predicted_lines(rep, profile),
                            predicted_parts=predicted_parts(rep), predicted_busy=predicted_busy(rep))


def _timeline(rep):
    """The one kernel's timeline when the verdict's T is the timeline's; None otherwise."""
    if rep.verdict.limit != "timeline" or len(rep.stages) != 1:
        return None
    return getattr(rep.stages[0], "timeline", None)


def predicted_parts(rep) -> tuple[tuple[str, float], ...]:
    """The timeline's split of the predicted T - T_best into its causes, when the verdict's T is
    the timeline's (one kernel); () otherwise (the gap table then names the verdict's limit)."""
    t = _timeline(rep)
    return tuple(t.gap) if t is not None else ()


def predicted_busy(rep) -> tuple[tuple[str, float], ...]:
    """The timeline's busy seconds per engine (busiest core), when its T is the verdict's."""
    t = _timeline(rep)
    return tuple(t.busy) if t is not None else ()


def predicted_lines(rep, profile) -> tuple[tuple[int, str, float, str], ...]:
    """(source line, statement, seconds, engine) of each load/store (the target's
    :meth:`transfer_lines`, engine ``dma``) and of each matmul and op per engine it runs on
    (:meth:`engine_lines`: ``tensor_engine``, ``vector_engine``, ``scalar_engine``,
    ``gpsimd_engine``, the profile's names) of a single-kernel analysis, for a profile with
    per-instruction source locations; () otherwise."""
    from loopsim.ir.ops import work_of_stage

    if not profile.instructions or len(rep.stages) != 1:
        return ()
    st, hw = rep.stages[0].stage, rep.hardware
    work = work_of_stage(st, rep.program.op_map)
    return tuple((ln, text, sec, "dma") for ln, text, sec in hw.transfer_lines(st.kernel)) + \
        tuple((ln, text, sec, f"{eng}_engine")
              for ln, text, sec, eng in hw.engine_lines(st.kernel, rep.dtype, work))


def single(args, e, rep=None) -> measured.Comparison | None:
    """For one kernel (``entitle``): the comparison with ``--measured``, or None without one.
    ``e``: the entitlement; ``rep``: the Report when there is one (for the read/write split)."""
    if not getattr(args, "measured", None):
        return None
    keys = (rep.counts.kernel, str(args.spec)) if rep is not None else ("hand count",)
    params = dict(rep.params) if rep is not None else {}
    profile = assign(args.measured, [keys], [params])[0]
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
    return assign([item], [("hand count", label or "hand count")])[0]
