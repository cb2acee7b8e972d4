"""The radix defaults are the fastest measured: the committed H200 benchmark decides them."""

import json
from pathlib import Path

import pytest

from gpulab import radix
from gpulab.radix.variants import DEFAULTS, REGISTRY

BENCH = Path(__file__).resolve().parents[2] / "docs" / "benchmarks" / "radix-h200.json"


@pytest.mark.parametrize("backend", ["numba", "cuda-c"])
def test_each_gpu_backends_default_is_its_fastest_variant_at_every_measured_size(backend):
    records = [r for r in json.loads(BENCH.read_text())["records"] if r["backend"] == backend and r.get("median_ms")]
    sizes = {r["label"] for r in records}
    assert len(sizes) >= 4, sorted(sizes)  # the premise: the benchmark measured this backend at several sizes
    for size in sorted(sizes):
        here = [r for r in records if r["label"] == size]
        fastest = min(here, key=lambda r: r["median_ms"])
        mine = [r for r in here if r["variant"] == DEFAULTS[backend]]
        assert mine, f"{size}: the default {DEFAULTS[backend]!r} was not measured"
        # the default, or within 3% of the fastest (run-to-run spread at the smallest sizes)
        assert mine[0]["median_ms"] <= 1.03 * fastest["median_ms"], (size, fastest["variant"], fastest["median_ms"])


def test_the_public_default_is_the_registrys_and_the_simulator_falls_back():
    assert radix.DEFAULT_VARIANT == REGISTRY.default("numba") == "onesweep"
    assert REGISTRY.default("cpu") == "numpy"
    from gpulab import device

    if device.on_simulator():  # every lane a Python thread: the quicker exact sort runs instead
        assert radix._resolve(None, "numba").name == radix.FALLBACK_VARIANT
