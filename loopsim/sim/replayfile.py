"""Trace files for ``loopsim replay``: a ``.npz`` of per-request arrays, read and checked.

Format
------
``obj``
    integer array, shape (n,): object ids, any non-negative integers (not necessarily dense).
``size``
    integer array, shape (n,): bytes of each request, > 0; one object always has one size.
``write`` (optional)
    bool array, shape (n,): True where the request overwrites the whole object. Default all False.

Example
-------
>>> import numpy as np, tempfile, os
>>> p = os.path.join(tempfile.mkdtemp(), "t.npz")
>>> write_trace(p, np.array([10, 99, 10]), np.array([4, 8, 4]))
>>> load_trace(p)
(array([0, 1, 0], dtype=int32), array([False, False, False]), array([4, 8]))
"""

from __future__ import annotations

import mmap
import os
import struct
import zipfile

import numpy as np

from loopsim.base.errors import InputError

__all__ = ["load_trace", "write_trace", "replay_summary"]

def _one_line(e: BaseException) -> str:
    return " ".join(str(e).split())


#: the .npz members read, and what each must be
_MEMBERS = ("obj", "size", "write")
#: deflate cannot shrink data more than ~1032:1; a member claiming more is damaged or a bomb
_MAX_RATIO = 1100


def _native(a: np.ndarray) -> np.ndarray:
    """``a`` in the machine's byte order (a big-endian array would not type in numba)."""
    return a if a.dtype.isnative else a.astype(a.dtype.newbyteorder("="))


def _available_bytes() -> int | None:
    """Memory this process may still take, bytes (None where the system does not say)."""
    try:
        return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):
        return None


def _map(name: str):
    """The whole file mapped copy-on-write (arrays viewed in it are writable, the file is never
    changed), or None where it cannot be mapped."""
    try:
        with open(name, "rb") as f:
            return mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_COPY)
    except (OSError, ValueError):
        return None


def _mapped_member(mm, info: zipfile.ZipInfo, skip: int, shape, fortran: bool, dtype) -> np.ndarray | None:
    """A stored (uncompressed) member's array viewed in the mapped file, no copy (aligned or, as
    ``np.savez`` leaves it, not aligned for its dtype); None where it is
    compressed or encrypted or not inside the file (then it is read through zipfile, which
    reports what is wrong). ``skip``: bytes of its .npy header."""
    if mm is None or info.compress_type != zipfile.ZIP_STORED or info.flag_bits & 1:
        return None
    at = info.header_offset
    head = mm[at:at + 30]
    if len(head) < 30 or head[:4] != b"PK\x03\x04":
        return None
    name_len, extra_len = struct.unpack("<HH", head[26:30])
    start = at + 30 + name_len + extra_len + skip
    count = 1
    for d in shape:
        count *= d
    if skip + count * dtype.itemsize > info.file_size or start + count * dtype.itemsize > len(mm):
        return None
    # unaligned for its dtype (np.savez leaves them so) it is still a view: the jitted passes
    # read unaligned arrays as they are (a specialisation of their own), so nothing is copied
    return np.ndarray(shape, dtype, buffer=mm, offset=start, order="F" if fortran else "C")


def _read_arrays(name: str) -> dict[str, np.ndarray]:
    """The trace's arrays, each bounded before it is allocated: its header's element count must
    match the member's size in the archive, the member's size its compressed size (no deflate
    bombs), and the total the memory available.

    A stored (uncompressed) member is not read through zipfile: aligned for its dtype, as
    :func:`write_trace` writes them, its array is a view of the file mapped copy-on-write (no
    copy, and pages load as they are used); unaligned (``np.savez``) too. Its
    CRC is then not checked (as for a plain .npy); a compressed member is read and checked
    through zipfile."""
    not_npz = f"{name}: not an .npz archive (expected arrays obj, size and optional write"
    try:
        zf = zipfile.ZipFile(name)
    except (zipfile.BadZipFile, OSError, EOFError, ValueError, NotImplementedError) as e:
        # NotImplementedError: a damaged header naming a zip version or method zipfile lacks
        raise InputError(f"{not_npz}; {type(e).__name__}: {_one_line(e)})") from None
    out = {}
    with zf:
        infos = {i.filename[:-4]: i for i in zf.infolist() if i.filename.endswith(".npy")}
        headers = {}
        for key in _MEMBERS:
            if key not in infos:
                continue
            info = infos[key]
            where = f"{name}: array '{key}'"
            if info.compress_size and info.file_size > _MAX_RATIO * max(info.compress_size, 1):
                raise InputError(f"{where} claims {info.file_size:,} bytes from {info.compress_size:,} "
                                 "compressed: more than deflate can give (a damaged file or a zip bomb)")
            try:
                with zf.open(info) as f:
                    version = np.lib.format.read_magic(f)
                    read = (np.lib.format.read_array_header_1_0 if version == (1, 0)
                            else np.lib.format.read_array_header_2_0)
                    shape, fortran, dtype = read(f)
                    skip = f.tell()
            except Exception as e:  # noqa: BLE001  whatever numpy makes of a damaged header
                raise InputError(f"{where} is not a .npy array ({type(e).__name__}: {_one_line(e)})") from None
            if dtype.hasobject:
                raise InputError(f"{where} holds Python objects (pickled data is never loaded)")
            if any(d < 0 for d in shape):
                raise InputError(f"{where}: its header declares shape {shape}, with a negative "
                                 "dimension (a damaged file)")
            count = 1
            for d in shape:
                count *= d
            need = count * dtype.itemsize
            if need > info.file_size:
                raise InputError(f"{where}: its header declares shape {shape} of {dtype} "
                                 f"({need:,} bytes) but the member holds {info.file_size:,} bytes")
            headers[key] = (need, skip, shape, fortran, dtype)
        total = sum(h[0] for h in headers.values())
        free = _available_bytes()
        if free is not None and total > free:
            raise InputError(f"{name}: its arrays need {total:,} bytes and {free:,} bytes of memory "
                             "are free; replay a shorter trace or free memory")
        mm = _map(name) if headers else None
        for key, (_need, skip, shape, fortran, dtype) in headers.items():
            a = _mapped_member(mm, infos[key], skip, shape, fortran, dtype)
            if a is not None:
                out[key] = a
                continue
            try:
                with zf.open(infos[key]) as f:
                    out[key] = np.lib.format.read_array(f, allow_pickle=False)
            except Exception as e:  # noqa: BLE001  zlib.error, BadZipFile (CRC), EOFError, ValueError
                raise InputError(f"{name}: array '{key}' cannot be read ({type(e).__name__}: "
                                 f"{_one_line(e)})") from None
    return out


def load_trace(path) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Read a trace ``.npz``.

    Parameters
    ----------
    path : str or os.PathLike
        The file.

    Returns
    -------
    obj : numpy.ndarray of int32 (int64 from 2**31 requests), shape (n,)
        Dense object ids: the rank of each original id among the distinct ids (the replay
        kernels' id type, so the replay copies nothing).
    write : numpy.ndarray of bool, shape (n,)
        Possibly a view of the mapped file (see :func:`_read_arrays`).
    size : numpy.ndarray of int64, shape (n_objects,)
        Bytes of each dense object.

    Raises
    ------
    InputError
        One line naming the file (and the array) for a missing or unreadable file, a missing
        array, a wrong dtype or shape, mismatched lengths, a negative id, a size <= 0, or an
        object requested with two different sizes.
    """
    name = os.fspath(path)
    if not os.path.isfile(name):
        raise InputError(f"{name}: no such trace file")
    arrays = _read_arrays(name)

    for key in ("obj", "size"):
        if key not in arrays:
            raise InputError(f"{name}: missing array '{key}' (expected arrays obj, size and optional write)")
    obj, size = (_native(arrays[k]) for k in ("obj", "size"))
    for key, a in (("obj", obj), ("size", size)):
        if a.dtype.kind not in "iu":
            raise InputError(f"{name}: array '{key}' must be integer, got dtype={a.dtype}")
        if a.ndim != 1:
            raise InputError(f"{name}: array '{key}' must be 1-D, got shape={a.shape}")
    n = obj.shape[0]
    if size.shape[0] != n:
        raise InputError(f"{name}: array 'size' has length {size.shape[0]}, expected {n} (the length of 'obj')")
    if "write" in arrays:
        write = arrays["write"]
        if write.dtype != np.bool_:
            raise InputError(f"{name}: array 'write' must be bool, got dtype={write.dtype}")
        if write.shape != (n,):
            raise InputError(f"{name}: array 'write' has shape {write.shape}, expected ({n},) (the length of 'obj')")
        write = np.ascontiguousarray(write)
    else:
        write = np.zeros(n, np.bool_)
    if n:
        for key, a, lo, what in (("obj", obj, 0, ">= 0"), ("size", size, 1, "> 0")):
            if a.dtype.kind == "u" and lo == 0:
                continue  # unsigned: never negative
            k = int(np.argmin(a))
            if a[k] < lo:
                raise InputError(f"{name}: array '{key}'[{k}]={int(a[k])} must be {what}")
        for key, a in (("obj", obj), ("size", size)):
            if a.dtype.kind == "u" and a.dtype.itemsize == 8 and int(a.max()) > np.iinfo(np.int64).max:
                raise InputError(f"{name}: array '{key}' max={int(a.max())} does not fit in int64")

    from loopsim.sim._jit import kernels

    filters = kernels("loopsim.sim._filters", n)  # a short trace: plain Python, no numba
    dense = np.empty(n, np.int32 if n < 2**31 else np.int64)
    top = int(obj.max()) if n else 0
    obj, size = np.ascontiguousarray(obj), np.ascontiguousarray(size)
    with np.errstate(over="ignore"):  # the plain twin's hash wraps uint64 as the compiled one does
        if top <= 4 * n + 1024:
            # ids not far above n: ranks from a presence map, sizes checked, in one jitted call
            obj_size, first_bad = filters.densify(obj, size, top, dense)
        else:
            # sparse ids (hashed, say): a jitted hash pass ranks them and checks sizes, O(n)
            obj_size, first_bad = filters.hash_densify(obj, size, dense)
    if first_bad >= 0:
        obj64 = np.asarray(obj, dtype=np.int64)
        size64 = np.asarray(size, dtype=np.int64)
        i = int(first_bad)
        j = int(np.flatnonzero((obj64 == obj64[i]) & (size64 != size64[i]))[0])
        i, j = min(i, j), max(i, j)
        raise InputError(
            f"{name}: array 'size': object {int(obj64[i])} is requested with two sizes, "
            f"{int(size64[i])} (request {i}) and {int(size64[j])} (request {j})"
        )
    return dense, write, obj_size


def _compact(a: np.ndarray) -> np.ndarray:
    """uint32 when every value fits (half the bytes to read back), else the array as given."""
    if a.dtype.kind in "iu" and a.size and a.min() >= 0 and a.max() <= np.iinfo(np.uint32).max:
        return a.astype(np.uint32, copy=False)
    return a


def write_trace(path, obj, size, write=None) -> None:
    """Write a trace ``.npz`` that :func:`load_trace` reads back (uncompressed, and with ids and
    sizes stored as uint32 where they fit, for load speed).

    Parameters
    ----------
    path : str or os.PathLike
    obj : array of int, shape (n,)
        Object id per request (non-negative).
    size : array of int, shape (n,)
        Bytes per request (> 0).
    write : array of bool, shape (n,), optional
        Omitted from the file when None.
    """
    arrays = {"obj": _compact(np.asarray(obj)), "size": _compact(np.asarray(size))}
    if write is not None:
        arrays["write"] = np.asarray(write, dtype=np.bool_)
    for key, a in arrays.items():
        if a.ndim != 1 or a.shape[0] != arrays["obj"].shape[0]:
            raise InputError(f"write_trace: {key} shape={a.shape} must be ({arrays['obj'].shape[0]},), the shape of obj")
    for key in ("obj", "size"):
        if arrays[key].dtype.kind not in "iu":
            raise InputError(f"write_trace: {key} must be integer, got dtype={arrays[key].dtype}")
    with open(os.fspath(path), "wb") as f:
        _write_npz(f, arrays)


#: each member's array data starts at a multiple of this many bytes into the file, so that the
#: reader can map it (a .npy header is padded to a multiple of 64 bytes itself)
_ALIGN = 64
#: the zip extra field that pads a local header to that alignment (the id Android's zipalign
#: uses; zip readers skip fields they do not know)
_PAD_FIELD = 0xD935


def _write_npz(f, arrays: dict[str, np.ndarray]) -> None:
    """What ``np.savez`` writes (stored .npy members, zip64), with each array's data aligned to
    :data:`_ALIGN` bytes in the file. ``f``: a seekable binary file at position 0."""
    with zipfile.ZipFile(f, "w", zipfile.ZIP_STORED, allowZip64=True) as zf:
        for key, a in arrays.items():
            info = zipfile.ZipInfo(f"{key}.npy", date_time=(1980, 1, 1, 0, 0, 0))
            # the local header: 30 bytes, the name, our padding field (4 + pad), the zip64 field (20)
            pad = -(f.tell() + 30 + len(info.filename) + 4 + 20) % _ALIGN
            info.extra = struct.pack("<HH", _PAD_FIELD, pad) + bytes(pad)
            with zf.open(info, "w", force_zip64=True) as member:
                np.lib.format.write_array(member, a, allow_pickle=False)


#: what each byte count of :func:`replay_summary` counts (its JSON carries this as "semantics")
SEMANTICS = {
    "miss_bytes": "bytes of every missed request, reads and writes: hbm_read_bytes + "
                  "allocation_miss_bytes (a cache simulator's byte-miss count)",
    "hbm_read_bytes": "bytes fetched from HBM: the size of each read miss",
    "allocation_miss_bytes": "bytes of write misses: the object is allocated in SBUF without a "
                             "fetch, so they cross no HBM",
    "writeback_bytes": "bytes written to HBM: dirty evictions, the final flush, writes too large to admit",
    "hbm_bytes": "hbm_read_bytes + writeback_bytes: the traffic that crosses HBM (loopsim's Q)",
}


def replay_summary(result) -> dict:
    """The JSON body of ``loopsim replay``: policy, capacity, requests, misses, and the byte counts
    of :data:`SEMANTICS` (HBM reads and allocation misses apart; ``miss_bytes`` is their sum)."""
    fetch, wb = int(result.fetch_bytes), int(result.writeback_bytes)
    return {
        "policy": result.policy,
        "capacity": int(result.capacity),
        "requests": int(result.requests),
        "misses": int(result.misses),
        "miss_bytes": int(result.miss_bytes),
        "hbm_read_bytes": fetch,
        "allocation_miss_bytes": int(result.miss_bytes) - fetch,
        "writeback_bytes": wb,
        "hbm_bytes": fetch + wb,
    }
