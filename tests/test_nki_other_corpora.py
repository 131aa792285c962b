"""Idioms of NKI kernels published outside nki-samples and nki-library (model code in
neuronx-distributed-inference and optimum-neuron, the Neuron SDK's examples), in kernels written
for these tests. Every count is a hand count of the test kernel's source (derivations beside)."""

from __future__ import annotations

from pathlib import Path

from loopsim.frontends import program
from loopsim.frontends.nki.load import trace_kernel
from loopsim.model import pipeline
from loopsim.targets import hardware

KERNELS = Path(__file__).parent / "nki_kernels" / "other_corpora"
TRN2 = hardware.load("trn2-core")


def counts_of(file, func, **args):
    k, rec = trace_kernel(str(KERNELS / file), func, args=args)
    prog = k if isinstance(k, program.Program) else program.Program.single(k)
    return pipeline.analyze(prog, TRN2).counts, rec


def test_an_optional_package_probe_finds_nothing_instead_of_a_stub():
    """``importlib.util.find_spec(missing) is not None`` is False, so the module defines its
    own helper (a stub answering the probe sent the kernel into the missing package).
    x 128 x 512 bf16 read once, out written once: Q = 2 x 128 x 512 x 2 B = 262,144."""
    c, rec = counts_of("probed.py", "probed_copy", x=((128, 512), "bf16"))
    assert c.Q == 2 * 128 * 512 * 2 == 262_144
    assert not any("loopsim_test_fastcopy_missing" in n for n in rec.notes)
