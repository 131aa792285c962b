"""The I/O lower bound of a matmul-shaped kernel: no tiling of C = A·B can move fewer bytes.

The red-blue pebble game (Hong & Kung, 1981) showed that an ordinary (not Strassen-like) m x k by
k x n matrix product on a machine with S words of fast memory must move Omega(mnk / sqrt(S)) words
between slow and fast memory. Smith, Lowery, Langou & van de Geijn ("A Tight I/O Lower Bound for
Matrix Multiplication", arXiv:1702.02017, 2019) made the constant tight: computing C := AB + C
takes at least

    2mnk / sqrt(S) - 2S                                    words (reads plus writes)

and an algorithm attains the leading term. Assumptions, as loopsim applies them:

* Words are elements; every element counts as one word. A lower bound in words becomes one in
  bytes by the smallest element size among A, B and C (``p_min``), and S words are the bytes of
  fast memory divided by ``p_min`` (the most elements it can hold), so the conversion stays a
  valid lower bound with mixed dtypes; with one dtype it is exactly ``p`` bytes per word.
* Fast memory S is SBUF *and* PSUM: the Tensor Engine accumulates partial sums in PSUM, so a
  kernel holds data in both; a bound computed with SBUF alone would not hold for kernels that keep
  partial sums in PSUM. (A larger S only weakens the bound, so it stays valid.)
* loopsim's kernels compute C := AB (C is not read first). Any such algorithm becomes one for
  C := AB + C by reading each element of C once, with one more word of fast memory, so
  Q(AB, S) >= Q(AB + C, S + 1) - mn: we use ``2mnk/sqrt(S+1) - 2(S+1) - mn`` words.
* A scope of c physical cores, each with its own SBUF and PSUM of S words, adds the per-core
  bounds (each core's I/O is at least 2 f_c / sqrt(S) - 2S for its f_c multiply-adds):
  ``2mnk/sqrt(S+1) - 2c(S+1) - mn``.
* Every input element is read and every output element written at least once: the compulsory
  traffic is also a lower bound. The bound is the larger of the two.

A simulated Q below the bound means the simulated execution held more than S on chip: an
``as-written`` count whose buffers do not fit, or partial sums kept in PSUM beyond its banks.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from loopsim.ir.kernel import Kernel, Load, Matmul, Store
from loopsim.ir.tiles import matmul_roles

CITATION = ("Smith, Lowery, Langou & van de Geijn, 'A Tight I/O Lower Bound for Matrix "
            "Multiplication' (arXiv:1702.02017, 2019): Q >= 2mnk/sqrt(S) - 2S words; "
            "Hong & Kung (1981): Omega(mnk/sqrt(S))")


@dataclass(frozen=True, slots=True)
class LowerBound:
    """I/O lower bound of one matmul-shaped kernel; bytes unless named words.

    ``fast_bytes`` is S per physical core (SBUF + PSUM), ``S_words`` the same in elements of
    ``p_min`` bytes, ``pebble_words`` the Smith et al. bound adapted as in the module docstring
    (negative for small problems, where it does not bind; shown
    clamped at 0 with :attr:`pebble_note`), ``compulsory_bytes`` every input read once and every
    output written once, ``Q`` the larger of the two in bytes, ``binding`` which one it is.
    """

    m: int
    n: int
    k: int
    p_min: int
    cores: int
    sbuf_bytes: int
    psum_bytes: int
    S_words: int
    pebble_words: int
    compulsory_bytes: int

    @property
    def fast_bytes(self) -> int:
        return self.sbuf_bytes + self.psum_bytes

    @property
    def pebble_bytes(self) -> int:
        return max(0, self.pebble_words) * self.p_min

    @property
    def Q(self) -> int:
        return max(self.compulsory_bytes, self.pebble_bytes)

    @property
    def binding(self) -> str:
        return "pebble" if self.pebble_bytes > self.compulsory_bytes else "compulsory"

    def ratio(self, q: int) -> float:
        """Q / bound (>= 1 for any execution that fits in S)."""
        return q / self.Q if self.Q else math.inf

    @property
    def pebble_note(self) -> str:
        """The pebble-game term in words, or why it does not bind (it is never shown negative)."""
        if self.pebble_words > 0:
            return f"2mnk/sqrt(S+1) - 2c(S+1) - mn = {self.pebble_words:,} words x {self.p_min} B"
        return ("not binding (2mnk/sqrt(S+1) - 2c(S+1) - mn <= 0 at this S: fast memory is large "
                "against the problem; the compulsory traffic is the bound)")

    def describe(self) -> str:
        return (f"lower bound {self.Q:,} bytes ({self.binding}; pebble game: {self.pebble_note}; "
                f"compulsory {self.compulsory_bytes:,} B; S = SBUF {self.sbuf_bytes:,} + PSUM "
                f"{self.psum_bytes:,} bytes = {self.S_words:,} words per core, c = {self.cores})")

    def as_dict(self) -> dict:
        """JSON fields; ``pebble_words`` is clamped at 0 (``pebble_note`` says why)."""
        return {"lower_bound_Q": self.Q, "binding": self.binding,
                "pebble_words": max(0, self.pebble_words), "pebble_note": self.pebble_note,
                "compulsory_bytes": self.compulsory_bytes,
                "S_words": self.S_words, "sbuf_bytes": self.sbuf_bytes, "psum_bytes": self.psum_bytes,
                "p_min": self.p_min, "cores": self.cores, "m": self.m, "n": self.n, "k": self.k,
                "source": CITATION}


def pebble_words(m: int, n: int, k: int, S: int, cores: int = 1) -> int:
    """floor(2mnk/sqrt(S+1)) - 2*cores*(S+1) - mn, exact in integers (words; may be negative).

    ``2mnk/sqrt(S+1)`` is floored exactly as the largest x with x^2 (S+1) <= (2mnk)^2, so
    rounding can only lower the bound.
    """
    t = 2 * m * n * k
    x = math.isqrt(t * t // (S + 1))
    while x * x * (S + 1) > t * t:
        x -= 1
    return x - 2 * cores * (S + 1) - m * n


def matmul_shape(kernel: Kernel):
    """(matmul statement, m, n, k) if the kernel is one matmul C = A·B over distinct tensors, else None."""
    mms = [s for s, _ in kernel.statements() if isinstance(s, Matmul)]
    others = [s for s, _ in kernel.statements() if not isinstance(s, (Matmul, Load, Store))]
    if len(mms) != 1 or others:
        return None
    mm = mms[0]
    names = {mm.stationary.tensor, mm.moving.tensor, mm.out.tensor}
    if len(names) != 3 or {t.name for t in kernel.tensors} != names:
        return None
    r = matmul_roles(mm, kernel)
    if r.batch:  # a batched matmul is not one C = A·B
        return None
    tm = kernel.tensor_map
    a, b = tm[mm.stationary.tensor], tm[mm.moving.tensor]
    return mm, a.shape[r.m_stationary], b.shape[r.n_moving], a.shape[r.k_stationary]


def lower_bound(kernel: Kernel, hw, capacity_bytes: int | None = None) -> LowerBound | None:
    """The I/O lower bound of ``kernel`` on ``hw``, or None when it is not matmul-shaped.

    ``capacity_bytes``: fast-memory bytes per physical core (default the sheet's); the accumulator
    memory (``hw.accumulator_bytes``: PSUM on NeuronCore, none on a flat machine) is added. See the module docstring for the assumptions.
    """
    shape = matmul_shape(kernel)
    if shape is None:
        return None
    mm, m, n, k = shape
    tm = kernel.tensor_map
    p_min = min(tm[a.tensor].elem_bytes for a in (mm.stationary, mm.moving, mm.out))
    sbuf = hw.sbuf_bytes if capacity_bytes is None else capacity_bytes
    psum = hw.accumulator_bytes
    s_words = (sbuf + psum) // p_min
    cores = hw.physical_cores
    return LowerBound(m, n, k, p_min, cores, sbuf, psum, s_words,
                      pebble_words(m, n, k, s_words, cores), kernel.compulsory_bytes)
