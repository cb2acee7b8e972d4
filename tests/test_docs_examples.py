"""The examples in the package docstrings run, as doctests, on whatever numba finds (the
simulator without a GPU), and none of them is skipped: what the API pages show is what the
code returns.

The examples are small (a 33 × 17 matrix, 20 stocks choose 5, a 32-stock market, a 5-edge
graph): each runs in about a second on the simulator. `gpulab.radix`'s example stays a
plain code block: a sort of 1,000 keys took about a minute on the simulator.
"""

import doctest
import importlib

import pytest

MODULES = ["gpulab.matmul", "gpulab.subset", "gpulab.gp", "gpulab.euler"]
FLAGS = doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE


@pytest.mark.parametrize("name", MODULES)
def test_package_docstring_examples_run(name):
    module = importlib.import_module(name)
    finder = doctest.DocTestFinder(exclude_empty=True)
    tests = [t for t in finder.find(module) if t.examples]
    assert tests and any(t.name == name for t in tests), f"{name}: its docstring has no example"
    skipped = [f"{t.name}: {e.source.strip()}" for t in tests for e in t.examples if e.options.get(doctest.SKIP)]
    assert not skipped, "examples marked +SKIP:\n" + "\n".join(skipped)
    result = doctest.testmod(module, optionflags=FLAGS, verbose=False, report=True)
    assert result.attempted >= 3 and result.failed == 0, result


def test_a_wrong_example_fails():
    """The check can fail: an example whose printed value is wrong is counted as a failure."""
    import types

    m = types.ModuleType("broken_example")
    m.__doc__ = ">>> 1 + 1\n3\n"
    result = doctest.testmod(m, optionflags=FLAGS, verbose=False, report=False)
    assert result == (1, 1)
