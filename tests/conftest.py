"""Shared test fixtures. Importing gpulab first selects GPU or simulator before numba loads."""

import os

import numpy as np
import pytest

import gpulab  # noqa: F401
from gpulab import device


@pytest.fixture
def rng(request):
    """A fresh random generator per test; its seed is printed so a failure can be replayed."""
    seed = int(os.environ.get("GPULAB_TEST_SEED", np.random.SeedSequence().entropy % 2**32))
    print(f"[{request.node.nodeid}] seed={seed} (replay with GPULAB_TEST_SEED={seed})")
    return np.random.default_rng(seed)


def skip_unless_runnable(variant):
    """Skip (never silently pass) a variant that cannot run here, naming the reason."""
    reason = variant.unavailable_reason()
    if reason:
        pytest.skip(f"{variant.key}: {reason}")


ON_SIMULATOR = device.on_simulator()
