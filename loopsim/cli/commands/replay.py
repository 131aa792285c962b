"""``loopsim replay TRACE.npz``: replay an access trace captured elsewhere through the same
simulator (flat byte capacity; every missed object admitted), for one-to-one comparison with other
cache simulators. The .npz holds integer arrays ``obj`` and ``size`` (bytes of each request) and
optionally a boolean ``write``. Byte counts are named apart: ``hbm_read_bytes`` (read misses,
fetched) and ``allocation_miss_bytes`` (write misses, allocated without a fetch: no HBM traffic)
make up ``miss_bytes``; ``hbm_bytes`` = HBM reads + write-backs is what crosses HBM."""

from __future__ import annotations

from loopsim.base.limits import MAX_INT, bounded
from loopsim.base.errors import InputError

#: requests fed to the replay kernels at a time: their per-request scratch (miss flags, OPT's next
#: uses) stays a few MiB, reused, instead of fresh pages for the whole trace
CHUNK = 1 << 20


def register(sub) -> None:
    p = sub.add_parser("replay", help="replay a captured access trace (.npz) with lru or opt",
                       description=__doc__)
    p.add_argument("trace", metavar="TRACE.npz")
    p.add_argument("--capacity", type=bounded("--capacity", 1, MAX_INT), required=True, metavar="BYTES")
    p.add_argument("--policy", choices=("lru", "opt"), required=True)
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=run)


def run(args) -> int:
    from loopsim.sim import replayfile
    from loopsim.render.json import dumps  # not ._common: it imports the whole analysis model
    from loopsim.sim import replay

    if args.capacity <= 0:
        raise InputError(f"--capacity={args.capacity} must be > 0")
    obj, write, size = replayfile.load_trace(args.trace)
    res = replay(obj, write, size, args.capacity, args.policy, size=size, chunk=CHUNK)
    d = replayfile.replay_summary(res)
    if args.json:
        print(dumps({**d, "semantics": replayfile.SEMANTICS}))
    else:
        print(f"{args.trace}: {args.policy}, capacity {args.capacity:,} bytes")
        for k in ("requests", "misses"):
            print(f"  {k:<22}{d[k]:>20,}")
        for k in ("miss_bytes", "hbm_read_bytes", "allocation_miss_bytes", "writeback_bytes",
                  "hbm_bytes"):
            print(f"  {k:<22}{d[k]:>20,}  {replayfile.SEMANTICS[k]}")
        print(f"  miss ratio            {d['misses'] / d['requests'] if d['requests'] else 0:>20.4%}")
    return 0
