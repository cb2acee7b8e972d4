"""Chapter 1's defaults are the fastest measured: in every committed benchmark of the chapter,
at every shape where the variant `fastest` picks was measured, it is the fastest variant of its
backend or within 3% of it; and the simulator runs the quicker-to-simulate fallback.

Products under 0.1 ms are left out: there the order changes from run to run (the thin-B
product, 8192x128x128, measured 0.027 and 0.033 ms for CUDA C's warptile in two H200 runs the
same day, and numba's four fast variants changed places between them)."""

import json
from pathlib import Path

import numpy as np
import pytest

import gpulab.matmul as mm
from gpulab import device
from gpulab.matmul.variants import DEFAULTS, FALLBACKS, REGISTRY, SCALAR_ROWS, default_variant, fastest

ROOT = Path(__file__).resolve().parents[2]
BENCH = sorted((ROOT / "docs" / "benchmarks").glob("matmul-h*.json"))  # gpulab bench matmul
SHAPES = sorted((ROOT / "docs" / "benchmarks").glob("matmul-shapes-*.json"))  # scripts/matmul_shapes.py
NOISE_MS = 0.1


def measured():
    """(file, M, K, N, backend, variant, ms) of every checked record of the committed files."""
    for p in BENCH:
        for r in json.loads(p.read_text())["records"]:
            if r.get("median_ms") and r.get("check") is not False and r["backend"] in DEFAULTS:
                s = r["size"]
                yield p.name, s["M"], s["K"], s["N"], r["backend"], r["variant"], r["median_ms"]
    for p in SHAPES:
        for r in json.loads(p.read_text())["rows"]:
            if r["rel error"] <= 1e-4:  # a checked result (float32 sums of up to 8,191 terms: about 1e-6)
                yield p.name, r["M"], r["K"], r["N"], r["backend"], r["variant"], r["ms"]


def test_the_variant_picked_for_a_shape_is_the_fastest_measured_there():
    groups: dict = {}
    for f, M, K, N, backend, variant, ms in measured():
        groups.setdefault((f, M, K, N, backend), {})[variant] = ms
    checked = 0
    for (f, M, K, N, backend), times in groups.items():
        pick, best = fastest(backend, M, K, N), min(times.values())
        if pick not in times or best < NOISE_MS:
            continue
        assert times[pick] <= 1.03 * best, (f, (M, K, N), backend, pick, times)
        checked += 1
    assert checked >= 10
    picked = {(fastest(b, M, K, N), b) for _, M, K, N, b, _, ms in measured() if ms >= NOISE_MS}
    assert {(v, b) for b, v in DEFAULTS.items()} | {(v, b) for b, v in SCALAR_ROWS.items()} <= picked


def test_a_call_naming_no_variant_runs_the_shapes_pick_or_the_simulators_fallback(rng):
    for backend in DEFAULTS:
        for K, N in ((16, 32), (17, 32), (16, 30)):
            want = FALLBACKS[backend] if device.on_simulator() else fastest(backend, 8, K, N)
            if device.on_simulator() or not REGISTRY.get(want, backend).unavailable_reason():
                assert default_variant(backend, 8, K, N) == want
        want = (FALLBACKS if device.on_simulator() else DEFAULTS)[backend]
        if not REGISTRY.get(want, backend).unavailable_reason():
            assert REGISTRY.resolve(None, backend).name == want
    A = rng.standard_normal((33, 17), dtype=np.float32)
    B = rng.standard_normal((17, 29), dtype=np.float32)
    ref = A.astype(np.float64) @ B.astype(np.float64)
    got = mm.matmul(A, B)
    assert np.max(np.abs(got - ref)) / np.max(np.abs(ref)) < 1e-5


SMALL_AB = ROOT / "docs" / "benchmarks" / "ab-runs" / "matmul-small-tiles-h200.json"  # scripts/matmul_small_ab.py


def test_small_products_take_small_only_where_it_was_measured_as_fast():
    """Below 0.1 ms the benchmarks' order is noise, so `small`'s share of the rule is held to its own
    A/B in turns: wherever `fastest` picks it, it was at least as fast as `streamk` (within 2 %) in
    every turn, and the rule the file was measured with is today's."""
    checked = 0
    for r in json.loads(SMALL_AB.read_text())["rows"]:
        dims = r["shape"].replace("³", f"×{r['shape'][:-1]}×{r['shape'][:-1]}") if r["shape"].endswith("³") else r["shape"]
        M, K, N = (int(x) for x in dims.split("×"))
        pick = fastest(r["backend"], M, K, N)
        assert pick == r["picked"], (r["shape"], r["backend"], pick, r["picked"])
        gains = [float(g) for g in r["gain per turn"].split(" · ")]
        if pick == "small":
            assert min(gains) >= 0.98, (r["shape"], r["backend"], gains)
            checked += 1
    assert checked >= 6
