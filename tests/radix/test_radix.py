"""Chapter 4: scan, split, and every radix-sort variant against numpy's stable sort.

On the simulator the variants run with small compile-time blocks (SIM_PARAMS) so that tiles,
multi-level scans and partial tiles all occur at a few dozen keys; on a GPU they run with the
registry's parameters at sizes up to millions of keys.
"""

import numpy as np
import pytest
from numba import cuda

import gpulab.radix as rx
from gpulab.errors import DtypeError, LimitError, ShapeError
from gpulab.radix import bench, host
from gpulab.radix.variants import REGISTRY, WARP
from tests.conftest import ON_SIMULATOR, skip_unless_runnable

SIM_PARAMS = {"SCAN_BLOCK": 8, "BLOCK": 32, "ITEMS": 2}
GPU_VARIANTS = [v for v in REGISTRY if v.backend != "cpu"]


def params_for(variant):
    p = dict(variant.params)
    if ON_SIMULATOR:
        p.update({k: v for k, v in SIM_PARAMS.items() if k in p})
        if "ITEMS" in p:
            p["BITS"] = min(p["BITS"], 5)  # BLOCK (32 here) must be >= 2**BITS
    return p


def tile_keys(variant, p):
    """Keys per tile of a variant: the sizes whose edges matter (block-1, block, block+1)."""
    if "ITEMS" in p:
        return p["BLOCK"] * p["ITEMS"]
    return p.get("BLOCK", 2 * p["SCAN_BLOCK"])


# --------------------------------------------------------------------------- key distributions


def gen(dist, rng, n, bits=32):
    hi = 2**bits
    if dist == "random":
        return rng.integers(0, hi, n, dtype=np.uint64).astype(np.uint32)
    if dist == "equal":
        return np.full(n, rng.integers(0, hi), dtype=np.uint32)
    if dist == "sorted":
        return np.sort(rng.integers(0, hi, n, dtype=np.uint64)).astype(np.uint32)
    if dist == "reverse":
        return np.sort(rng.integers(0, hi, n, dtype=np.uint64))[::-1].astype(np.uint32)
    if dist == "few":
        return rng.choice(rng.integers(0, hi, 3, dtype=np.uint64), n).astype(np.uint32)
    if dist == "max":  # the largest key: every bit significant, no early exit
        k = rng.integers(0, hi, n, dtype=np.uint64).astype(np.uint32)
        k[rng.integers(0, n, max(1, n // 5))] = np.uint32(0xFFFFFFFF)
        return k
    raise ValueError(dist)


def sim_cases(variant, p):
    """Few sorts per variant: each simulated launch costs about a second, whatever n is."""
    t = tile_keys(variant, p)
    # (distribution, n, significant bits). Few bits keep the passes few (the early exit);
    # the 4-bit variants also sort one set of full 32-bit keys.
    small = 4 if variant.name.startswith("split1") else 7
    cases = [("random", 0, small), ("random", 1, small), ("few", t + 1, small), ("reverse", 2 * t - 1, small),
             ("equal", t, small)]
    if variant.name == "radix4_shared":
        cases += [("max", t - 1, 32), ("sorted", 3 * t + 2, small)]
    return cases


def gpu_cases(variant, p):
    t = tile_keys(variant, p)
    out = []
    for n in (0, 1, 2, t - 1, t, t + 1, 3 * t + 7, 65_537, 1_000_003, 2**22 + 17):
        out.append(("random", n, 32))
    for dist in ("equal", "sorted", "reverse", "few", "max"):
        out += [(dist, 1_000_003, 32), (dist, t + 1, 32)]
    out += [("random", 999_983, 7), ("random", 2**20, 20)]
    return out


CASES = [pytest.param(v, c, id=f"{v.key}-{c[0]}-{c[1]}-{c[2]}b")
         for v in GPU_VARIANTS for c in (sim_cases(v, params_for(v)) if ON_SIMULATOR else gpu_cases(v, params_for(v)))]


def run_plan(variant, keys, p, values=None, iota=True):
    """Sort through the registry entry, on poisoned work buffers; return (keys, values)."""
    plan = variant.run(keys.size, True, p)
    for buf in plan.keys + plan.vals:
        buf[:] = np.uint32(0xDEADBEEF)
    d_vals = cuda.to_device(values) if values is not None else None
    dk, dv = plan.sort(cuda.to_device(keys), d_vals, iota=values is None and iota)
    return dk.copy_to_host(), dv.copy_to_host(), plan


@pytest.mark.parametrize("variant,case", CASES)
def test_variant_sorts_stably(variant, case, rng):
    skip_unless_runnable(variant)
    dist, n, bits = case
    p = params_for(variant)
    keys = gen(dist, rng, n, bits)
    ks, perm, plan = run_plan(variant, keys, p)
    ref = np.sort(keys, kind="stable")
    assert np.array_equal(ks, ref), f"{variant.key} {case}: keys differ from numpy.sort"
    ok, detail = bench.check_argsort(keys, perm, ref)
    assert ok, f"{variant.key} {case}: {detail}"
    assert np.array_equal(perm, np.argsort(keys, kind="stable"))
    if n > 1:  # the early exit: only the significant bits are sorted
        assert plan.passes_run == bench.passes(variant.name, p, int(keys.max()))


@pytest.mark.parametrize("name", WARP)
def test_ballot_ranking_of_the_numba_kernels(name, rng):
    """The numba registry ranks with match_any_sync; its ballot ranking (BALLOT=1, the CUDA C
    default) is checked here too: on the simulator through gpulab.simwarp, on a GPU for real."""
    v = REGISTRY.get(name, "numba")
    skip_unless_runnable(v)
    p = {**params_for(v), "BALLOT": 1}
    t = p["BLOCK"] * p["ITEMS"]
    for dist, n, bits in (("random", 2 * t + 5, 10), ("few", t - 1, 32)):
        keys = gen(dist, rng, n, bits)
        ks, perm, _ = run_plan(v, keys, p)
        assert np.array_equal(ks, np.sort(keys)), (dist, n)
        assert np.array_equal(perm, np.argsort(keys, kind="stable")), (dist, n)


# --------------------------------------------------------------------------- public API, signed and float keys


def sim_variant():
    """The variant the public-API tests use: the fast one where it runs, else radix4_shared."""
    name = "radix4_shared" if ON_SIMULATOR else "local"
    v = REGISTRY.get(name, "numba")
    return name, params_for(v)


@pytest.mark.parametrize("backend", ["numba", "cuda-c"])
def test_signed_and_float_keys(backend, rng):
    skip_unless_runnable(REGISTRY.get("radix4_shared", backend))
    name, p = sim_variant()
    n = 45 if ON_SIMULATOR else 1_000_003
    ints = rng.integers(-2**31, 2**31, n, dtype=np.int64).astype(np.int32)
    ints[:3] = [-2**31, 2**31 - 1, -1]
    ints[3:6] = ints[6:9]  # equal keys, so stability shows
    ks, vs = rx.sort_pairs(ints, np.arange(n, dtype=np.uint32), name, backend, p)
    assert np.array_equal(ks, np.sort(ints, kind="stable"))
    assert np.array_equal(vs, np.argsort(ints, kind="stable"))
    fl = rng.standard_normal(n).astype(np.float32) * 1e3
    specials = np.array([np.nan, -np.inf, np.inf, -0.0, 0.0, -np.nan, 1e-45, -1e-45, np.float32(3.4e38)], np.float32)
    fl[rng.choice(np.arange(4, n), specials.size, replace=False)] = specials
    fl[:4] = fl[4:8]  # equal keys, so stability shows
    vals = np.arange(n, dtype=np.float32)  # exact up to 2**24: the positions, as float32 values
    ks, vs = rx.sort_pairs(fl, vals, name, backend, p)
    assert np.array_equal(ks, np.sort(fl, kind="stable"), equal_nan=True)
    assert np.isnan(ks[-2:]).all(), "NaNs sort last"
    assert vs.dtype == np.float32 and np.array_equal(vs, np.argsort(fl, kind="stable").astype(np.float32))
    if not ON_SIMULATOR:
        assert np.array_equal(rx.argsort(fl, name, backend, p), np.argsort(fl, kind="stable"))
        assert np.array_equal(rx.sort(ints, name, backend, p), np.sort(ints))


@pytest.mark.parametrize("n", [0, 1, 70])
def test_distinct_matches_numpy_unique(n, rng):
    name, p = sim_variant()
    skip_unless_runnable(REGISTRY.get(name, "numba"))
    keys = rng.integers(0, max(n // 3, 1), n, dtype=np.uint32)
    assert np.array_equal(rx.distinct(keys, name, params=p), np.unique(keys))
    if n > 1:
        fl = rng.choice(np.array([np.nan, -0.0, 0.0, 1.5, -2.0, np.inf], np.float32), n)
        assert np.array_equal(rx.distinct(fl, name, params=p), np.unique(fl), equal_nan=True)


@pytest.mark.skipif(ON_SIMULATOR, reason="millions of keys: GPU only")
@pytest.mark.parametrize("variant", GPU_VARIANTS, ids=lambda v: v.key)
def test_distinct_every_variant_gpu(variant, rng):
    skip_unless_runnable(variant)
    keys = rng.integers(0, 500_000, 2_000_003, dtype=np.uint32)
    assert np.array_equal(rx.distinct(keys, variant.name, variant.backend), np.unique(keys))


def test_cpu_baseline_is_numpy(rng):
    keys = rng.integers(0, 50, 101, dtype=np.uint32)
    assert np.array_equal(rx.sort(keys, "numpy", "cpu"), np.sort(keys))
    assert np.array_equal(rx.distinct(keys, "numpy", "cpu"), np.unique(keys))


# --------------------------------------------------------------------------- scan and split on their own


SCAN_SIZES = [0, 1, 7, 8, 9, 8 * 8 + 3] if ON_SIMULATOR else [0, 1, 1023, 1024, 1025, 1_000_003, 2**24 + 1]


@pytest.mark.parametrize("backend", ["numba", "cuda-c"])
@pytest.mark.parametrize("method", ["blelloch", "hillis_steele"])
@pytest.mark.parametrize("n", SCAN_SIZES)
def test_scan(backend, method, n, rng):
    skip_unless_runnable(REGISTRY.get("split1_global", backend))
    block = 4 if ON_SIMULATOR else 512  # small blocks: several levels of block sums at small n
    x = rng.integers(-1000, 1000, n).astype(np.int32)
    for inclusive in (False, True):
        got = rx.scan(x, inclusive=inclusive, method=method, backend=backend, block=block)
        assert np.array_equal(got, rx.scan_reference(x, inclusive)), (n, inclusive)


def test_scan_wraps_like_uint32(rng):
    x = np.full(20, 2**31 + 5, np.uint32)
    assert np.array_equal(rx.scan(x, inclusive=True, block=4), np.cumsum(x, dtype=np.uint32))


def test_split_worked_example():
    """GPU Gems 3, ch. 39: the 8-element example, split on bit 0."""
    keys = np.array([1, 0, 1, 1, 0, 0, 1, 0], np.uint32) | (np.arange(8, dtype=np.uint32) << 4)
    out = rx.split(keys, 0, block=4)
    # flags e = [0 1 0 0 1 1 0 1], scan = [0 0 1 1 1 2 3 3], totalFalses = 4:
    # zeros go to 0..3 in input order, ones to 4..7 in input order.
    assert list(out) == [0x10, 0x40, 0x50, 0x70, 0x01, 0x21, 0x31, 0x61]


@pytest.mark.parametrize("n,bit", [(1, 0), (33, 31), (70, 5)])
def test_split_random(n, bit, rng):
    keys = rng.integers(0, 2**32, n, dtype=np.uint64).astype(np.uint32)
    assert np.array_equal(rx.split(keys, bit, block=4), rx.split_reference(keys, bit))


# --------------------------------------------------------------------------- transforms, errors, registry


def test_key_transforms_preserve_order(rng):
    ints = rng.integers(-2**31, 2**31, 10_000, dtype=np.int64).astype(np.int32)
    u = host.to_ordered(ints)
    assert np.array_equal(np.argsort(u, kind="stable"), np.argsort(ints, kind="stable"))
    assert np.array_equal(host.from_ordered(u, np.int32), ints)
    fl = np.concatenate([rng.standard_normal(10_000).astype(np.float32) * 10.0 ** rng.integers(-40, 38, 10_000),
                         np.array([np.nan, -np.nan, np.inf, -np.inf, 0.0, -0.0], np.float32)]).astype(np.float32)
    u = host.to_ordered(fl)
    assert np.array_equal(np.argsort(u, kind="stable"), np.argsort(fl, kind="stable"))
    back = host.from_ordered(u, np.float32)
    assert np.array_equal(back, fl, equal_nan=True)


def test_bad_inputs_raise_clear_errors():
    with pytest.raises(DtypeError, match="uint32, int32 and float32"):
        rx.sort(np.ones(4, np.float64))
    with pytest.raises(ShapeError, match="1-D"):
        rx.sort(np.ones((2, 2), np.uint32))
    with pytest.raises(ShapeError, match="one value per key"):
        rx.sort_pairs(np.ones(4, np.uint32), np.ones(3, np.uint32))
    with pytest.raises(DtypeError, match="4-byte"):
        rx.sort_pairs(np.ones(4, np.uint32), np.ones(4, np.float64))
    with pytest.raises(LimitError, match="1024 threads"):
        rx.sort(np.ones(4, np.uint32), "radix4_shared", params={"BLOCK": 2048})
    with pytest.raises(LimitError, match="power-of-two"):
        rx.scan(np.ones(4, np.int32), block=48)
    with pytest.raises(LimitError, match="49152"):
        rx.sort(np.ones(4, np.uint32), "local", params={"ITEMS": 64}) if not ON_SIMULATOR else \
            host.check_params({"BLOCK": 256, "ITEMS": 64, "BITS": 8, "SCAN_BLOCK": 512})
    with pytest.raises(LimitError, match="bits 0 to 31"):
        rx.split(np.ones(4, np.uint32), 32)


def test_every_step_has_both_backends():
    numba_names = set(REGISTRY.names("numba"))
    assert numba_names == set(REGISTRY.names("cuda-c"))
    assert {"split1_global", "split1_shared", "radix4_shared", "local"} <= numba_names


@pytest.mark.skipif(not ON_SIMULATOR, reason="checks the simulator's skip reason")
def test_warp_variants_run_on_the_simulator_unless_the_shim_is_off(monkeypatch):
    from gpulab import simwarp

    assert REGISTRY.get("local", "numba").unavailable_reason() is None
    monkeypatch.setattr(simwarp, "_installed", False)
    reason = REGISTRY.get("local", "numba").unavailable_reason()
    assert reason and "warp intrinsics" in reason and "GPULAB_SIM_WARP=0" in reason


def test_unsorted_output_is_caught(rng):
    """The checks can fail: one pass of a 4-bit sort leaves 8-bit keys unsorted."""
    v = REGISTRY.get("radix4_shared", "numba")
    skip_unless_runnable(v)
    keys = rng.integers(0, 256, 40, dtype=np.uint32)
    plan = v.run(keys.size, True, params_for(v))
    plan.passes = lambda max_key: 1
    dk, dv = plan.sort(cuda.to_device(keys), iota=True)
    ok, _ = bench.check_argsort(keys, dv.copy_to_host(), np.sort(keys))
    assert not ok and not np.array_equal(dk.copy_to_host(), np.sort(keys))
