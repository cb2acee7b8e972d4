"""A sort naming no variant never meets the default's own key limit: past onesweep's 2^30
keys it runs `local`, in the public sort, in a plan of one's own and in chapter 5's pairing
(which names onesweep in its parameters). Sizes that large do not fit a test, so the limits
and defaults are patched: the premise (n above the limit, at it) holds by construction, on the
simulator and on a GPU alike."""

import numpy as np
import pytest

import gpulab.radix as rx
from gpulab.device import on_simulator


def test_the_limits():
    from gpulab.radix.variants import LARGE_DEFAULTS

    for backend in ("numba", "cuda-c"):
        assert rx.key_limit("onesweep", backend) == 2**30
        assert rx.key_limit("local", backend) is None
        assert rx.key_limit(LARGE_DEFAULTS[backend], backend) is None


def test_the_default_for_a_size(monkeypatch):
    """With onesweep as the registry's default (as on a GPU; patched in so that the simulator
    checks it too): onesweep up to its limit, `local` past it; the CPU baseline unchanged."""
    real = rx.REGISTRY.resolve

    def resolve(variant, backend):
        return rx.REGISTRY.get("onesweep", backend) if variant is None and backend != "cpu" else real(variant, backend)

    monkeypatch.setattr(rx.REGISTRY, "resolve", resolve)
    limit = rx.key_limit("onesweep", "numba")
    assert rx.default_variant(limit, "numba") == "onesweep"
    assert rx.default_variant(limit + 1, "numba") == "local"
    assert rx.default_variant(2**31, "cpu") == "numpy"


@pytest.mark.skipif(on_simulator(), reason="the default is onesweep on a GPU; the simulator's fallback has no limit")
def test_a_named_onesweep_past_its_limit_is_a_clear_error():
    from gpulab.errors import LimitError

    with pytest.raises(LimitError, match="up to 1073741824 keys"):
        rx.plan(2**30 + 1, variant="onesweep")


def test_sized_picks_by_n_only_for_calls_naming_no_variant(monkeypatch):
    monkeypatch.setattr(rx, "_SMALLEST_LIMIT", 100)
    monkeypatch.setattr(rx, "default_variant", lambda n, backend: f"sized-{n}")
    assert rx._sized(None, "numba", 100) is None  # at the limit: the registry's default, unchanged
    assert rx._sized(None, "numba", 101) == "sized-101"
    assert rx._sized("onesweep", "numba", 10**9) == "onesweep"


def test_eulers_pairing_sorts_past_onesweeps_limit_with_the_size_default(rng, monkeypatch):
    """The pairing names onesweep (its tuned sort, with its parameters); for more keys than
    onesweep's limit it asks radix for the size's default and drops onesweep's parameters. The
    limit is lowered to n - 1 and the size's default patched to the simulator-quick
    `radix4_shared` (so the premise holds on a GPU too, where the real default would be
    onesweep again at this size); the plan's small-sort cut-off is 0 so a short sort takes the
    branch. The sort must still be a stable argsort."""
    from numba import cuda

    from gpulab.euler import clear_cache
    from gpulab.euler.api import plan_for
    from gpulab.euler.variants import REGISTRY as EULER

    seen = []
    real_plan = rx.plan

    def plan(n, **kw):
        seen.append((n, kw["variant"], kw["params"]))
        return real_plan(n, **kw)

    n = int(rng.integers(40, 90))
    monkeypatch.setattr(rx, "key_limit", lambda variant, backend: n - 1 if variant == "onesweep" else None)
    monkeypatch.setattr(rx, "default_variant", lambda m, backend: "radix4_shared")
    monkeypatch.setattr(rx, "plan", plan)
    clear_cache()  # (no plan of another test with these parameters)
    ep = plan_for(EULER.resolve("ruling_set", "numba"), n,
                  {"SORT": "onesweep", "SORT_PARAMS": {"BLOCK": 64}, "SMALL_SORT": 0})
    keys = rng.integers(0, 7, n).astype(np.int32)  # few distinct keys: stability is tested
    ok, op = (cuda.to_device(np.full(n, -1, np.int32)) for _ in range(2))
    ep.vmax = int(keys.max())
    try:
        ep.sort(cuda.to_device(keys), n, ok, op)
    finally:
        clear_cache()
    order = np.argsort(keys, kind="stable")
    assert np.array_equal(op.copy_to_host(), order) and np.array_equal(ok.copy_to_host(), keys[order])
    assert seen == [(n, "radix4_shared", None)]
