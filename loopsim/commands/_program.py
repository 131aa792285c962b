"""``loopsim entitle`` for a spec with several ops (an ``[ops]`` table): see loopsim/program.py."""

from __future__ import annotations

from .. import hardware, program, spec
from ..errors import InputError
from ._common import dump_json


def is_program_spec(name_or_path: str) -> bool:
    """Whether SPEC names a program (a spec with ``[ops]``); errors in reading it surface here."""
    return program.is_program(spec.read(name_or_path))


def load(args):
    """(program, sheet) from the shared kernel options."""
    hw = hardware.load(args.hardware).with_roofs(getattr(args, "roofs", "spec"))
    return program.load(args.spec, spec.parse_sets(args.sets)), hw


def run_entitle(args) -> int:
    for flag, dest in (("--lnc", "lnc"), ("--split", "split"), ("--link-bw", "link_bw"),
                       ("--measured", "measured")):
        if getattr(args, dest, None):
            raise InputError(f"{flag}: not supported for a spec with several ops ({args.spec}); "
                             "each of its kernels runs on one physical core")
    prog, hw = load(args)
    rep = program.analyze(prog, hw, policy=args.policy, sbuf_bytes=args.sbuf_bytes, dtype=args.dtype,
                          allow_scope_mismatch=getattr(args, "allow_scope_mismatch", False))
    if args.json:
        dump_json(rep.as_dict())
    else:
        print(rep.format_text())
    return 0
