"""NKI's data types as the shim hands them to a kernel: strings that compare and print as NKI's.

Since NKI 0.2 (Neuron 2.29) ``nki.language.bfloat16`` *is* the string ``'bfloat16'``
(https://awsdocs-neuron.readthedocs-hosted.com/en/v2.29.0/nki/api/generated/nki.language.float8_e4m3.html:
``nki.language.float8_e4m3 = 'float8_e4m3'``), so a kernel's ``assert t.dtype == nl.bfloat16`` and
``str(dt) == str(nl.bfloat16)`` hold for equal names. :class:`NkiDType` is such a string that also
carries ``itemsize`` (bytes per element) and the loopsim dtype whose bytes per element it has.

The packed MX types hold four values in one element
(https://awsdocs-neuron.readthedocs-hosted.com/en/latest/nki/api/generated/nki.language.float8_e5m2_x4.html:
"4x packed float8_e5m2 elements, custom data type for nki.isa.nc_matmul_mx"): ``float8_*_x4`` is
4 bytes per element, ``float4_e2m1fn_x4`` 2 bytes (4 x 4 bits). loopsim counts bytes, so a packed
tensor is counted as the loopsim dtype of the same element size (fp32 resp. bf16): the bytes are
exact; the Tensor Engine rate of an MX matmul is ASSUMED to be that of the stand-in dtype.
"""

from __future__ import annotations

#: NKI dtype name -> (bytes per element, loopsim dtype counted in its place)
NKI_DTYPES: dict[str, tuple[int, str]] = {
    "float32": (4, "fp32"), "tfloat32": (4, "fp32"), "bfloat16": (2, "bf16"),
    "float16": (2, "fp16"),
    "float8_e4m3": (1, "fp8"), "float8_e5m2": (1, "fp8"), "float8_e4m3fn": (1, "fp8"),
    "float8_e4m3fn_x4": (4, "fp32"), "float8_e5m2_x4": (4, "fp32"),
    "float4_e2m1fn_x4": (2, "bf16"),
    "int8": (1, "int8"), "uint8": (1, "int8"), "bool_": (1, "int8"), "bool": (1, "int8"),
    "int16": (2, "fp16"), "uint16": (2, "fp16"), "int32": (4, "fp32"), "uint32": (4, "fp32"),
}


class NkiDType(str):
    """An NKI dtype: the string of its name, with ``itemsize`` (bytes) and ``loopsim`` (the
    loopsim dtype of the same element size)."""

    def __new__(cls, name: str):
        if name not in NKI_DTYPES:
            raise ValueError(f"{name!r} is not an NKI dtype")
        s = super().__new__(cls, name)
        s.itemsize, s.loopsim = NKI_DTYPES[name]
        return s

    @property
    def name(self) -> str:
        return str.__str__(self)

    @property
    def __name__(self) -> str:  # numpy-style name, as the older neuronxcc.nki dtypes had
        return self.name

    def __repr__(self) -> str:
        return f"'{self.name}'"

    __hash__ = str.__hash__


def all_dtypes() -> dict[str, NkiDType]:
    """Every NKI dtype, keyed by the attribute name ``nki.language`` gives it."""
    return {n: NkiDType(n) for n in NKI_DTYPES}


def loopsim_dtype(dt, default: str = "bf16") -> str:
    """The loopsim dtype counted for ``dt`` (an NkiDType, an NKI or loopsim name, a numpy dtype
    or class with a ``name``/``__name__``); ``default`` when ``dt`` is None or unknown."""
    if dt is None:
        return default
    if isinstance(dt, NkiDType):
        return dt.loopsim
    name = dt if isinstance(dt, str) else (getattr(dt, "__name__", None) or getattr(dt, "name", None)
                                           or str(dt))
    name = str(name).split(".")[-1]
    if name in NKI_DTYPES:
        return NKI_DTYPES[name][1]
    if name in ("fp32", "bf16", "fp16", "fp8", "int8"):
        return name
    return {"float64": "fp32", "int64": "fp32"}.get(name, default)


def itemsize(dt, default: int = 2) -> int:
    """Bytes per element of ``dt`` (as :func:`loopsim_dtype` reads it)."""
    if isinstance(dt, NkiDType):
        return dt.itemsize
    name = dt if isinstance(dt, str) else getattr(dt, "name", None) or getattr(dt, "__name__", "")
    if name in NKI_DTYPES:
        return NKI_DTYPES[name][0]
    return {"fp32": 4, "bf16": 2, "fp16": 2, "fp8": 1, "int8": 1}.get(name, default)
