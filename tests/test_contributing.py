"""CONTRIBUTING.md's "How to add a variant", followed to the letter for a toy variant: one
registry entry (a `Variant` with its policy), and nothing else. Every part of gpulab that reads
a chapter — the public call, the tests' registry loops, `gpulab tour`, the benchmark, the PTX
compile check and the memory tracer — must then know it."""

from __future__ import annotations

import numpy as np
import pytest

import gpulab.matmul as mm
from gpulab import chapters
from gpulab.checking import float32_tolerance, relative_error
from gpulab.matmul import host
from gpulab.matmul.policy import MatmulPolicy
from gpulab.registry import Variant
from tests.conftest import ON_SIMULATOR


@pytest.fixture
def toy(monkeypatch):
    """Step 2 of the list: one entry in the chapter's registry (restored after the test)."""
    reg = chapters.get("matmul").registry
    monkeypatch.setattr(reg, "_variants", dict(reg._variants))
    policy = MatmulPolicy("matmul_shared", tile=("TILE", "TILE"))
    return reg.add(Variant("toy_shared8", "numba", ("global", "shared"), "a toy: shared tiles of 8 × 8",
                           host.launcher(policy, "numba"), params={"TILE": 8}, policy=policy))


def test_a_registry_entry_is_all_a_variant_needs(toy, rng):
    chapter = chapters.get("matmul")
    # the public call runs it, on sizes that are not multiples of its tile
    M, K, N = (int(x) for x in rng.choice([x for x in range(9, 30) if x % 8], size=3))  # tile 8
    A = rng.standard_normal((M, K), dtype=np.float32)
    B = rng.standard_normal((K, N), dtype=np.float32)
    C = mm.matmul(A, B, variant=toy.name, backend="numba")
    assert relative_error(C, A.astype(np.float64) @ B) <= float32_tolerance(K)
    # the tests, the tour and the benchmark iterate the registry
    assert toy in chapter.registry.select(backend="numba", runnable=True)
    assert any(case.variant is toy for case in chapter.tour_cases(True))
    # the PTX check compiles the kernel with its parameters
    assert any(label == "matmul_shared{'TILE': 8}" for label, _, _ in chapter.ptx_targets())
    # the benchmark's check runs it
    case = next(c for c in chapter.bench.cases(True))
    ok, detail = chapter.bench.check(toy, chapter.bench.setup(case, rng))
    assert ok, detail


@pytest.mark.skipif(not ON_SIMULATOR, reason="the tracer runs on numba's simulator")
def test_the_tracer_sees_the_new_variant(toy):
    from gpulab import trace

    result = trace.trace_chapter("matmul", [toy.name])
    assert [row["variant"] for row in result["rows"]] == [toy.name]
