"""Trace files bounded before allocation, and output files that keep their mode (issue 14)."""

import io
import os
import re
import stat
import subprocess
import sys
import zipfile

import numpy as np
import pytest

from loopsim.cli.main import main
from loopsim.base.outfile import remove_leftovers, write_atomic

REPLAY = ["--capacity", "100", "--policy", "lru", "--json"]


def refused(capsys, argv, pattern):
    assert main([str(a) for a in argv]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("loopsim: error: ") and re.search(pattern, err), err


def _header(shape, descr="<i8") -> bytes:
    buf = io.BytesIO()
    np.lib.format.write_array_header_1_0(buf, {"descr": descr, "fortran_order": False, "shape": shape})
    return buf.getvalue()


def _bad_traces(d):
    """name -> (path, pinned message) of the campaign's bad traces."""
    good = d / "good.npz"
    np.savez_compressed(good, obj=np.arange(1000) % 7, size=np.full(1000, 4))
    out = {}
    p = d / "liar.npz"  # a 532-byte archive whose header claims 10^12 elements
    with zipfile.ZipFile(p, "w") as z:
        z.writestr("obj.npy", _header((10**12,)) + bytes(64))
        z.writestr("size.npy", _header((3,)) + bytes(24))
    out["header claims 10^12 elements"] = (p, r"array 'obj': its header declares shape \(1000000000000,\) of int64 "
                                              r"\(8,000,000,000,000 bytes\) but the member holds 192 bytes")
    p = d / "notnpy.npz"
    with zipfile.ZipFile(p, "w") as z:
        z.writestr("obj.npy", b"hello")
        z.writestr("size.npy", b"x")
    out["member not a .npy"] = (p, r"array 'obj' is not a \.npy array")
    p = d / "corrupt.npz"
    data = bytearray(good.read_bytes())
    for i in range(200, 260):
        data[i] ^= 0xFF
    p.write_bytes(bytes(data))
    out["corrupt deflate stream"] = (p, r"array '(obj|size)' (is not a \.npy array|cannot be read) \((error|BadZipFile)")
    p = d / "pickled.npz"
    np.savez(p, obj=np.array([object()], dtype=object), size=np.array([4]))
    out["pickled payload"] = (p, r"array 'obj' holds Python objects \(pickled data is never loaded\)")
    p = d / "bomb.npz"  # a member claiming far more than deflate can give
    with zipfile.ZipFile(p, "w", compression=zipfile.ZIP_DEFLATED) as z:
        z.writestr("obj.npy", _header((3,)) + bytes(24))
        z.writestr("size.npy", _header((3,)) + bytes(24))
    raw = bytearray(p.read_bytes())
    first = raw.find(b"PK\x01\x02")  # the obj member's central directory entry: claim 2^31 bytes
    assert first >= 0
    raw[first + 24:first + 28] = (2**31).to_bytes(4, "little")
    p.write_bytes(bytes(raw))
    out["deflate bomb"] = (p, r"array 'obj' claims 2,147,483,648 bytes from \d+ compressed: more than deflate can give")
    p = d / "random.npz"
    p.write_bytes(bytes(range(256)) * 8)
    out["random bytes"] = (p, r"not an \.npz archive")
    return out


def test_bad_traces_are_refused_before_allocation(tmp_path, capsys):
    for name, (path, pattern) in _bad_traces(tmp_path).items():
        refused(capsys, ["replay", path, *REPLAY], pattern)


def test_a_big_endian_trace_replays_like_a_native_one(tmp_path, capsys):
    obj, size = np.array([5, 9, 5, 7, 9, 5]), np.array([40, 30, 40, 50, 30, 40])
    np.savez(tmp_path / "le.npz", obj=obj, size=size)
    np.savez(tmp_path / "be.npz", obj=obj.astype(">i8"), size=size.astype(">i4"))
    assert main(["replay", str(tmp_path / "le.npz"), *REPLAY]) == 0
    native = capsys.readouterr().out
    assert main(["replay", str(tmp_path / "be.npz"), *REPLAY]) == 0
    assert capsys.readouterr().out == native.replace("le.npz", "be.npz")
    # by hand, LRU of 100 bytes: 5 and 9 miss, 5 hits, 7 evicts 9, 9 evicts 5, 5 evicts 7
    assert '"misses": 5' in native and '"miss_bytes": 190' in native


def _write(path, text="x"):
    write_atomic(str(path), lambda tmp: open(tmp, "w").write(text))


def test_output_keeps_the_mode_it_replaces_and_new_files_honour_the_umask(tmp_path):
    old = tmp_path / "keep.txt"
    old.write_text("old")
    os.chmod(old, 0o600)
    _write(old, "new")
    assert old.read_text() == "new" and stat.S_IMODE(os.stat(old).st_mode) == 0o600
    for umask, mode in ((0o077, 0o600), (0o022, 0o644)):
        mask = os.umask(umask)
        try:
            _write(tmp_path / f"new{umask:o}.txt")
        finally:
            os.umask(mask)
        assert stat.S_IMODE(os.stat(tmp_path / f"new{umask:o}.txt").st_mode) == mode


def test_leftovers_of_a_killed_run_are_removed_by_the_next_write(tmp_path):
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True).stdout.strip()
    live = str(os.getppid())  # a process that exists: its file may still be being written
    (tmp_path / f".fig.png.{dead}.ab12cd.part").write_text("half")
    (tmp_path / f".fig.png.{live}.ef34gh.part").write_text("busy")
    (tmp_path / "unrelated.part").write_text("not ours")
    _write(tmp_path / "other.txt")
    left = sorted(p.name for p in tmp_path.iterdir())
    assert left == sorted([f".fig.png.{live}.ef34gh.part", "other.txt", "unrelated.part"])
    assert remove_leftovers(tmp_path) == []
