"""Exercise tests load the code under test through the ``impl`` fixture.

By default that is the student's file in ``exercises/<set>/``; with
``GPULAB_EXERCISE_IMPL=solutions`` (``gpulab grade <set> --solutions``) it is the reference
solution in ``exercises/solutions/<set>/`` — which an instructor can delete before handing
the exercises out.
"""

import importlib.util
import os
from pathlib import Path

import numpy as np
import pytest

import gpulab  # noqa: F401  (selects GPU or simulator before numba is imported)

HERE = Path(__file__).parent


def load_impl(exercise_set: str, module: str):
    which = os.environ.get("GPULAB_EXERCISE_IMPL", "student")
    base = HERE / "solutions" / exercise_set if which == "solutions" else HERE / exercise_set
    path = base / f"{module}.py"
    if not path.exists():
        pytest.fail(f"{path} does not exist")
    spec = importlib.util.spec_from_file_location(f"_exercise_{which}_{exercise_set}_{module}", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.fixture
def impl():
    return load_impl


@pytest.fixture
def rng(request):
    """A fresh random generator per test; its seed is printed so a failure can be replayed
    (``GPULAB_TEST_SEED=<seed> gpulab grade <set>``)."""
    seed = int(os.environ.get("GPULAB_TEST_SEED", np.random.SeedSequence().entropy % 2**32))
    print(f"[{request.node.nodeid}] seed={seed} (replay with GPULAB_TEST_SEED={seed})")
    return np.random.default_rng(seed)
