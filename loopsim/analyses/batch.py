"""Many verdicts in one process: the requests of an agent loop, one JSON object each.

A request names what ``entitle`` would analyse: ``spec`` (a bundled name or a ``.toml`` path) or
``toml`` (the spec's text inline, read as data), ``hardware``, and optionally ``set`` (also
``sets``), ``policy``, ``dtype``, ``sbuf_bytes``, ``buffers`` (an int or {tensor: n}), ``lnc``,
``roofs``, ``model`` (:data:`MODELS`) and ``id`` (echoed). A kernel reference ``PATH.py::FUNCTION`` (with ``args``,
``kwargs``, ``grid``) EXECUTES that file, so it is refused unless the caller allows it
(``evaluate --batch --execute-kernels``): a batch file is data.

:func:`evaluate` answers with the verdict (``feasible``, ``reasons``, ``T``, ``limit``), W, Q, SBUF
and PSUM use and ``seconds`` (the time to answer); a bad request gets ``{"id", "error"}``. Sheets
and spec files are read once per process, and a request equal to an earlier one is answered
from that answer (``cached``: true): the pipeline is deterministic.
"""

from __future__ import annotations

from loopsim.model.verdict import transfers_s

import json
import time
from typing import Mapping

from loopsim.base.errors import InputError, LoopsimError

KEYS = ("id", "spec", "toml", "hardware", "set", "sets", "policy", "dtype", "sbuf_bytes",
        "buffers", "lnc", "roofs", "model", "args", "kwargs", "grid", "registers")
#: verdict models a request may ask for (:func:`loopsim.model.pipeline.analyze`): ``timeline``
#: (the default: the verdict ``entitle`` prints, the engine timeline's predicted time included,
#: tens of milliseconds a request), ``floor`` (every roof and ceiling and the timeline's transfer
#: floor ``dma_transfers``, a few milliseconds: what search ranks by before it confirms),
#: ``roofline`` (the roofs and ceilings alone)
MODELS = ("timeline", "floor", "roofline")
#: longest request line, characters (an inline spec included)
MAX_LINE = 1 << 20
#: answers kept for repeated requests (the oldest are dropped first)
MAX_CACHED = 10_000


class Session:
    """The state kept between requests: loaded sheets, read specs, earlier answers."""

    def __init__(self, *, execute_kernels: bool = False, model: str = "timeline"):
        self.execute_kernels = execute_kernels
        self.model = model
        self.sheets: dict = {}
        self.specs: dict = {}
        self.answers: dict = {}


def answer_line(s: Session, n: int, line: str) -> dict:
    """The answer to line ``n`` (1-based) of a batch: its request's, or an error for a line that
    is too long or not JSON."""
    if len(line) > MAX_LINE:
        return {"id": None, "error": f"line {n}: longer than {MAX_LINE:,} characters"}
    try:
        req = json.loads(line)
    except (ValueError, RecursionError) as e:
        return {"id": None, "error": f"line {n}: not JSON ({str(e).splitlines()[0][:80]})"}
    return evaluate(s, req)


_SESSIONS: dict[tuple[bool, str], Session] = {}


def answer_chunk(job: tuple[bool, str, tuple[tuple[int, str], ...]]) -> list[dict]:
    """Answers of (line number, line) pairs in this process's session (a worker's unit of work);
    ``seconds`` of each is its own, the pool's start aside."""
    execute, model, lines = job
    s = _SESSIONS.setdefault((execute, model), Session(execute_kernels=execute, model=model))
    return [answer_line(s, n, line) for n, line in lines]


def _field(req: Mapping, key: str, kinds, what: str):
    v = req.get(key)
    if v is not None and (not isinstance(v, kinds) or isinstance(v, bool)):
        raise InputError(f"{key}={v!r} must be {what}")
    return v


def _sheet(s: Session, name: str, roofs: str):
    key = (name, roofs)
    if key not in s.sheets:
        from loopsim.targets import hardware

        s.sheets[key] = hardware.load(name).with_roofs(roofs)
    return s.sheets[key]


def _spec(s: Session, req: Mapping):
    """The request's spec file, read once per process (an inline one per text)."""
    from loopsim.frontends import spec as spec_mod

    if req.get("toml") is not None:
        text = _field(req, "toml", str, "a spec's TOML text")
        if req.get("spec") is not None:
            raise InputError("give spec or toml, not both")
        key = ("toml", text)
        if key not in s.specs:
            from loopsim.base import tomlfile
            from loopsim.base.errors import SpecError

            where = f"request {req.get('id', '')}: toml".strip()
            data = tomlfile.loads(text, where, SpecError)
            spec_mod.validate(where, data)
            s.specs[key] = spec_mod.SpecFile(where, data, text)
        return s.specs[key]
    ref = _field(req, "spec", str, "a bundled spec name or a .toml path")
    if not ref:
        raise InputError("a request needs spec (a bundled name or a .toml path) or toml")
    if "::" in ref:
        if not s.execute_kernels:
            raise InputError(f"spec={ref!r} is a kernel reference, which EXECUTES its file; a batch "
                             "file is data: pass --execute-kernels to allow it")
        return None  # read with its inputs below
    key = ("spec", ref)
    if key not in s.specs:
        s.specs[key] = spec_mod.read(ref)
    return s.specs[key]


def _canonical(req: Mapping) -> str:
    return json.dumps({k: req[k] for k in sorted(req) if k != "id"}, sort_keys=True)


def evaluate(s: Session, req: object) -> dict:
    """The answer to one request (a dict; ``error`` set when it cannot be answered)."""
    t0 = time.perf_counter()
    rid = req.get("id") if isinstance(req, dict) else None
    try:
        if not isinstance(req, dict):
            raise InputError(f"a request is a JSON object, not {type(req).__name__}")
        unknown = sorted(set(req) - set(KEYS))
        if unknown:
            raise InputError(f"{unknown[0]}: not a request field; known: {', '.join(KEYS)}")
        key = _canonical(req)
        hit = s.answers.get(key)
        if hit is not None:
            return {"id": rid, **hit, "cached": True, "seconds": time.perf_counter() - t0}
        out = _answer(s, req)
        if len(s.answers) >= MAX_CACHED:
            s.answers.pop(next(iter(s.answers)))
        s.answers[key] = out
        return {"id": rid, **out, "cached": False, "seconds": time.perf_counter() - t0}
    except LoopsimError as e:
        return {"id": rid, "error": str(e).splitlines()[0] if str(e) else type(e).__name__}
    except RecursionError:
        return {"id": rid, "error": "the request nests too deeply"}


def _answer(s: Session, req: Mapping) -> dict:
    from loopsim.frontends import spec as spec_mod
    from loopsim.model import pipeline

    hwname = _field(req, "hardware", str, "a hardware sheet name or .toml path")
    if not hwname:
        raise InputError("a request needs hardware (a sheet name or a .toml path)")
    roofs = _field(req, "roofs", str, "spec or measured") or "spec"
    hw = _sheet(s, hwname, roofs)
    if req.get("set") is not None and req.get("sets") is not None:
        raise InputError("give set or sets, not both")
    sets = req.get("set") if req.get("set") is not None else req.get("sets") or {}
    if not isinstance(sets, dict) or not all(isinstance(k, str) and type(v) is int
                                             for k, v in sets.items()):
        raise InputError(f"set={sets!r} must be an object of NAME: integer")
    buffers = req.get("buffers")
    if buffers is not None:
        if type(buffers) is int:
            buffers = (("*", buffers),)
        elif isinstance(buffers, dict) and all(type(v) is int for v in buffers.values()):
            buffers = tuple(buffers.items())
        else:
            raise InputError(f"buffers={buffers!r} must be an integer or an object of TENSOR: integer")
    lnc = _field(req, "lnc", int, "an integer number of physical cores")
    sbuf = _field(req, "sbuf_bytes", int, "an integer number of bytes")
    policy = _field(req, "policy", str, "as-written, lru or opt") or "as-written"
    dtype = _field(req, "dtype", str, "a dtype name")
    model = _field(req, "model", str, "timeline, floor or roofline") or s.model
    if model not in MODELS:
        raise InputError(f"model={model!r} must be one of {', '.join(MODELS)}")
    sf = _spec(s, req)
    if sf is None:  # a kernel reference, allowed: read with its inputs
        prog = pipeline.load(req["spec"], sets, lnc_cores=lnc, buffers=buffers,
                             kernel_args=kernel_args(req.get("args"), req.get("kwargs"),
                                                     req.get("grid"), req.get("registers")))
    else:
        prog = pipeline.build(sf, spec_mod.bind_params(sf, sets), lnc_cores=lnc, buffers=buffers)
    a = pipeline.analyze(prog, hw, policy=policy, sbuf_bytes=sbuf, dtype=dtype, model=model)
    return result(a)


def kernel_args(args: Mapping | None, kwargs: Mapping | None, grid, registers=None) -> dict:
    """Inputs of a kernel reference: ``args`` name -> "D0xD1[:dtype]" (as ``--arg``) or
    (shape, dtype); ``kwargs`` name -> a Python value; ``grid`` a sequence of ints;
    ``registers`` ``--register-value`` strings ("8", "kern.py:42=8")."""
    if not (args or kwargs or grid or registers):
        return {"args": {}, "kwargs": {}, "grid": ()}
    from loopsim.frontends.nki.load import parse_arg
    from loopsim.frontends.nki.registers import parse as parse_registers

    if isinstance(registers, str) or not all(isinstance(r, str) for r in registers or ()):
        raise InputError("registers must be a list of --register-value strings (\"8\", \"kern.py:42=8\")")

    if not isinstance(args or {}, Mapping) or not isinstance(kwargs or {}, Mapping):
        raise InputError("args and kwargs must be objects of NAME: value")
    a = {}
    for name, v in (args or {}).items():
        a[name] = parse_arg(f"{name}={v}")[1] if isinstance(v, str) else (tuple(v[0]), v[1])
    return {"args": a, "kwargs": dict(kwargs or {}), "grid": tuple(grid or ()),
            "registers": parse_registers(registers)}


def result(a) -> dict:
    """The numbers an agent ranks by: the verdict, W, Q and on-chip use (bytes, banks)."""
    res = a.residency
    psum = [st.ceilings.psum for st in a.stages]
    return {"kernel": a.name, "hardware": a.hardware.name, "params": dict(a.params),
            "feasible": a.feasible, "reasons": list(a.infeasible_reasons), "T": a.T,
            "limit": a.limit, "W": a.W, "Q": a.Q, "compulsory_Q": a.counts.compulsory_bytes,
            "transfers_s": transfers_s(a.verdict),
            "sbuf_peak": res.peak_cost, "sbuf_capacity": res.capacity_cost,
            "sbuf_unit": "bytes per partition" if res.lanes else "bytes",
            "psum_banks": max(p.needed_banks for p in psum), "psum_capacity_banks": psum[0].banks}
