"""Exercises graded on a traced count (issue 28: one per chapter 0–2): the traced test of
exercise subset.3 passes the reference solution's sequential-addressing reduction and fails the
same kernel with interleaved addressing (bank conflicts). (Exercise matmul.2's traced test is
checked in tests/test_trace_book.py.)"""

from __future__ import annotations

import re

import pytest

from tests.conftest import ROOT
from tests.test_trace_book import _load, needs_simulator


# The solution's reduction loop (sequential addressing), and the same reduction with interleaved
# addressing: thread tid combines s[2·step·tid] with s[2·step·tid + step], step doubling — the
# same result (ties still go to the lower index), its lanes' 8-byte words in a few banks.
SEQUENTIAL = re.compile(r"( +)step = block // 2\n.*?step //= 2\n", re.S)
INTERLEAVED = """{i}step = 1
{i}while step < block:
{i}    j = 2 * step * tid
{i}    if j < block:
{i}        v, i = sv[j + step], si[j + step]
{i}        if v < sv[j] or (v == sv[j] and i < si[j]):
{i}            sv[j] = v
{i}            si[j] = i
{i}    cuda.syncthreads()
{i}    step *= 2
"""


@needs_simulator
def test_the_traced_argmin_test_passes_the_solution_and_fails_interleaved_addressing(rng, tmp_path):
    solution = ROOT / "exercises" / "solutions" / "subset" / "block_argmin.py"
    source = solution.read_text()
    found = SEQUENTIAL.search(source)
    assert found, "the solution's reduction loop is not where this test looks for it"
    (tmp_path / "interleaved.py").write_text(
        source[:found.start()] + INTERLEAVED.format(i=found.group(1)) + source[found.end():])
    sequential = _load(solution, "gpulab_argmin_sequential")
    interleaved = _load(tmp_path / "interleaved.py", "gpulab_argmin_interleaved")
    tests = _load(ROOT / "exercises" / "subset" / "test_subset_exercises.py", "gpulab_subset_exercise_tests")

    tests.test_block_argmin_reduction_is_free_of_bank_conflicts(lambda *_: sequential, rng)
    tests.test_block_argmin(lambda *_: interleaved, rng, 130, 64)  # a correct reduction: only the count fails it
    with pytest.raises(AssertionError, match="shared wavefronts per request"):
        tests.test_block_argmin_reduction_is_free_of_bank_conflicts(lambda *_: interleaved, rng)
