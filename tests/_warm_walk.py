"""Compile the engine timeline's compiled walk (numba, cache=True) into its cache, for the test
session: tests/conftest.py starts this in a process of its own when the session starts, so the
compile (~40 s CPU on a cold cache) runs on another core while other tests run; the tests that
walk compiled wait for it (the ``walk_warm`` fixture). Run by hand: ``python -m tests._warm_walk``."""

from loopsim.frontends import spec
from loopsim.model import pipeline
from loopsim.targets import hardware
from loopsim.targets.neuron import timeline as ntl


def main() -> None:
    hw = hardware.load("trn2-core")
    kernel = pipeline.load(str(spec.locate("matmul"))).stages[0].kernel
    ntl.timeline(kernel, hw, dtype="bf16", W_P=1e-6, Q_BW=1e-6, Q=1, compiled=True)


if __name__ == "__main__":
    main()
