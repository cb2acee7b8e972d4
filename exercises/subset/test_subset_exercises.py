"""Tests of the chapter 2 exercises (graded per exercise by `gpulab grade subset`)."""

import math
from itertools import combinations

import numpy as np
import pytest
from numba import cuda

from gpulab.checking import poisoned
from gpulab.errors import LimitError


@pytest.mark.exercise("subset.1-revolving-door")
@pytest.mark.parametrize("n,k", [(1, 1), (4, 0), (5, 3), (6, 1), (7, 4), (8, 8), (9, 5)])
def test_revolving_door_visits_every_subset_by_single_swaps(impl, n, k):
    mod = impl("subset", "revolving_door")
    seq = list(mod.revolving_door(n, k))
    assert len(seq) == math.comb(n, k) and set(seq) == set(combinations(range(n), k))
    assert all(tuple(sorted(c)) == tuple(c) for c in seq)
    for a, b in zip(seq, seq[1:]):
        assert len(set(a) ^ set(b)) == 2, f"{a} -> {b} is not a single swap"


@pytest.mark.exercise("subset.1-revolving-door")
def test_revolving_door_rejects_bad_k(impl):
    mod = impl("subset", "revolving_door")
    with pytest.raises(LimitError):
        list(mod.revolving_door(3, 4))


def _corr(rng, n):
    R = rng.standard_normal((n + 5, n))
    C = np.corrcoef(R, rowvar=False)
    C = (C + C.T) / 2
    np.fill_diagonal(C, 1.0)
    return C


@pytest.mark.exercise("subset.2-l1-objective")
@pytest.mark.parametrize("n,k", [(4, 1), (6, 2), (7, 3), (8, 8), (9, 4)])
def test_l1_matches_itertools(impl, rng, n, k):
    mod = impl("subset", "l1_objective")
    C = _corr(rng, n)
    best = min(((sum(abs(C[b, a]) for i, b in enumerate(c) for a in c[:i]), m, c)
                for m, c in enumerate(combinations(range(n), k))), key=lambda t: (t[0], t[1]))
    out = cuda.to_device(poisoned(math.comb(n, k), np.float64))
    comb, value, rank = mod.least_correlated_l1(C, k, out=out)
    assert tuple(comb) == best[2] and rank == best[1]
    assert math.isclose(value, best[0], rel_tol=1e-9, abs_tol=1e-300)
    assert not np.isnan(out.copy_to_host()).any()


@pytest.mark.exercise("subset.2-l1-objective")
def test_l1_ties_go_to_the_lowest_rank(impl):
    mod = impl("subset", "l1_objective")
    C = np.full((6, 6), -0.2)
    np.fill_diagonal(C, 1.0)
    comb, value, rank = mod.least_correlated_l1(C, 3)
    assert tuple(comb) == (0, 1, 2) and rank == 0 and math.isclose(value, 0.6)


@pytest.mark.exercise("subset.3-block-argmin")
@pytest.mark.parametrize("n,block", [(1, 32), (31, 32), (32, 32), (33, 32), (130, 64), (97, 16)])
def test_block_argmin(impl, rng, n, block):
    mod = impl("subset", "block_argmin")
    v = np.round(rng.standard_normal(n), 1)
    for b in range(0, n, block):  # a tie at every block's minimum (where a block has two values): the first must win
        seg = v[b:b + block]
        if seg.size > 1:
            seg[rng.choice(seg.size, 2, replace=False)] = seg.min()
    bm, bi = mod.block_argmin(v, block=block)
    nb = -(-n // block)
    assert len(bm) == nb and len(bi) == nb
    for b in range(nb):
        seg = v[b * block:(b + 1) * block]
        assert bm[b] == seg.min() and bi[b] == b * block + int(np.argmin(seg))


@pytest.mark.exercise("subset.3-block-argmin")
def test_block_argmin_rejects_bad_blocks(impl):
    mod = impl("subset", "block_argmin")
    with pytest.raises(LimitError):
        mod.block_argmin(np.ones(4), block=48)
    with pytest.raises(LimitError):
        mod.block_argmin(np.ones(4), block=2048)


@pytest.mark.exercise("subset.3-block-argmin")
def test_block_argmin_reduction_is_free_of_bank_conflicts(impl, rng):
    """Traced on the simulator: every line of the kernel that reads or writes shared memory
    costs at most 2 wavefronts per warp-wide request — what a conflict-free warp of 8-byte
    (float64, int64) accesses costs, each element covering two banks. Sequential addressing
    (`sv[tid]` with `sv[tid + step]`) stays there; interleaved addressing (`sv[2 * step * tid]`)
    piles the lanes' words into a few banks."""
    from gpulab import device, trace

    if not device.on_simulator():
        pytest.skip("the memory tracer runs only on numba's simulator (GPULAB_DEVICE=sim)")
    mod = impl("subset", "block_argmin")
    block = 64
    v = rng.standard_normal(2 * block + int(rng.integers(1, block)))  # two full blocks and a partial one
    with trace.recording() as rec:
        bm, bi = mod.block_argmin(v, block=block)
    starts = range(0, v.size, block)
    assert list(bi) == [b + int(np.argmin(v[b:b + block])) for b in starts]
    assert list(bm) == [v[b:b + block].min() for b in starts]
    reports = trace.merge(rec.reports)
    assert any(r.totals["shared_requests"] for r in reports), "no kernel used shared memory: reduce in cuda.shared.array"
    for r in reports:
        for (_, line, array), c in r.by_line.items():
            if c["shared_requests"]:
                wf = c["shared_wavefronts"] / c["shared_requests"]
                assert wf <= 2, (f"{r.kernel}, line {line} ({array}): {wf:.3g} shared wavefronts per request "
                                 "(bank conflicts); want at most 2 (one 8-byte element per lane, no conflict)")
