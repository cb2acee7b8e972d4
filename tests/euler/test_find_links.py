"""The circuit graph's links (`find_links`) on their own, both backends: a warp's segment of
WARP · LINK_ITEMS out-slots, each slot's label gathered once and handed to the slot before it
by a shuffle, the segment's links appended with one atomic, Borůvka's first minima taken on the
way. Compared with a numpy loop over the slots: the same links (in any order: they are appended
by atomics), the same counts, the same minima; nothing written past the count.

Premise: the sorted sources are built from runs of set lengths (runs of one slot, which make no
link, too), and each run's out-slots mix slots on one cycle with slots on others (labels drawn
from a few cycles, then one neighbouring pair forced equal and one forced different). Where the
size allows, a link is forced across a warp's item (slots warp − 1, warp) and across a
segment's end (slots segment − 1, segment: the label the segment's last lane gathers itself).
Sizes: 1, 2, segment − 1, segment, segment + 1, a prime, several segments, and a small grid
whose warps loop over several segments; a new draw each run."""

from __future__ import annotations

import numpy as np
import pytest

from gpulab.euler.host import ROUND
from gpulab.euler.kernels_numba import LINK_ITEMS
from gpulab.euler.variants import REGISTRY
from gpulab.launch import i32 as _i
from tests.conftest import skip_unless_runnable

POISON = -7
INT32_MAX = 2**31 - 1


def _plan(backend, n):
    v = REGISTRY.get("ruling_set", backend)
    skip_unless_runnable(v)
    return v.run(n + 1, v.launch_params())


def _case(backend, which):
    """(warp, segment, size, grid) of a case: the size named by `which`, around this backend's
    segment of WARP · LINK_ITEMS; "looping": two blocks (2·BLOCK/WARP warps), three segments
    each and a part, so that every warp loops; grid None: the plan's own launch shape."""
    block = _plan(backend, 1).params["BLOCK"]
    warp = min(32, block)
    seg = warp * LINK_ITEMS
    n = {"1": 1, "2": 2, "seg-1": seg - 1, "seg": seg, "seg+1": seg + 1, "prime": 1009, "many": 7 * seg + 13,
         "looping": 3 * (2 * block // warp) * seg + 13}[which]
    return warp, seg, n, 2 if which == "looping" else None


def _appended(plan, name, n, grid, args, outs):
    """Launch `name` (count at ROUND), and return the count and the appended (x, y, weight)
    triples in weight order (appends come in any order), with the whole output arrays."""
    plan.set_ctr(0)
    plan.preset(ROUND, 0)
    if grid is None:
        plan.launch(name, n, *args)
    else:
        plan.K(name, (grid,), (plan.params["BLOCK"],), *args)
    m = int(plan.read()[ROUND])
    cols = [o.copy_to_host() for o in outs]
    return m, sorted(zip(*(c[:m].tolist() for c in cols)), key=lambda t: t[2]), cols


def _force_link(ssrc, out_order, label, cycles, p):
    """Slots p and p + 1 leave one vertex (sources stay sorted) and lie on two cycles."""
    ssrc[p + 1] = ssrc[p]
    a = label[out_order[p]]
    label[out_order[p + 1]] = cycles[(list(cycles).index(a) + 1) % cycles.size]


def _inputs(n, seg, rng, warp):
    """Sorted sources of n out-slots in runs (long ones across segment ends, and ones of one
    slot), a random out-order and the edges' labels from a few cycles."""
    lengths, total = [], 0
    while total < n:
        r = int(rng.choice([1, 2, 3, 5, seg - 1, seg + 3]))
        lengths.append(min(r, n - total))
        total += lengths[-1]
    ssrc = np.repeat(np.arange(len(lengths), dtype=np.int32) * 3, lengths)
    out_order = rng.permutation(n).astype(np.int32)
    cycles = rng.choice(n, size=min(n, 5), replace=False).astype(np.int32)  # the cycles' labels (edge ids)
    label = cycles[rng.integers(0, cycles.size, n)]
    same = np.flatnonzero(ssrc[:-1] == ssrc[1:])
    if same.size >= 2 and cycles.size >= 2:  # one link inside a cycle, one between two: both cases occur
        p, q = rng.choice(same, 2, replace=False)
        label[out_order[p + 1]] = label[out_order[p]]
        if label[out_order[q]] == label[out_order[q + 1]]:
            label[out_order[q + 1]] = cycles[(list(cycles).index(label[out_order[q]]) + 1) % cycles.size]
    if cycles.size >= 2:
        for p in (warp - 1, seg - 1):  # across a warp's item, across the segment's end
            if p + 1 < n:
                _force_link(ssrc, out_order, label, cycles, p)
    return ssrc, out_order, label, cycles


def _reference(ssrc, out_order, label, n):
    links, best = [], {}
    for p in range(n - 1):
        if ssrc[p] == ssrc[p + 1]:
            a, b = int(label[out_order[p]]), int(label[out_order[p + 1]])
            if a != b:
                links.append((a, b, p))
                best[a] = min(best.get(a, INT32_MAX), p)
                best[b] = min(best.get(b, INT32_MAX), p)
    return links, best


@pytest.mark.parametrize("backend", ["numba", "cuda-c"])
@pytest.mark.parametrize("which", ["1", "2", "seg-1", "seg", "seg+1", "prime", "many", "looping"])
def test_find_links_matches_a_loop_over_the_slots(backend, which, rng):
    from numba import cuda

    warp, seg, n, grid = _case(backend, which)
    plan = _plan(backend, n)
    ssrc, out_order, label, cycles = _inputs(n, seg, rng, warp)
    links, best_ref = _reference(ssrc, out_order, label, n)
    at = {w for _, _, w in links}
    for p in (warp - 1, seg - 1):  # the premise: links across an item and across the segment's end
        assert p + 1 >= n or p in at
    best0 = np.full(n + 1, POISON, np.int32)
    best0[cycles] = INT32_MAX  # as list_nodes leaves it: no lightest link yet
    d = {k: cuda.to_device(v) for k, v in (("ssrc", ssrc), ("out_order", out_order), ("label", label),
                                            ("best", best0))}
    out = {k: cuda.to_device(np.full(n + 1, POISON, np.int32)) for k in ("lu", "lv", "lp")}
    args = (d["ssrc"], d["out_order"], d["label"], _i(n), out["lu"], out["lv"], out["lp"], d["best"], plan.ctr,
            _i(ROUND))
    m, got, (lu, lv, lp) = _appended(plan, "find_links", n, grid, args, [out[k] for k in ("lu", "lv", "lp")])
    assert m == len(links)
    assert got == links
    assert np.all(lu[m:] == POISON) and np.all(lp[m:] == POISON)  # nothing past the count
    best = d["best"].copy_to_host()
    for c in cycles:
        assert best[c] == best_ref.get(int(c), INT32_MAX)
    untouched = np.ones(n + 1, bool)
    untouched[cycles] = False
    assert np.all(best[untouched] == POISON)


@pytest.mark.parametrize("backend", ["numba", "cuda-c"])
@pytest.mark.parametrize("which", ["1", "seg-1", "seg", "seg+1", "prime", "many", "looping"])
def test_min_links_keeps_the_links_between_components(backend, which, rng):
    """A later Borůvka round (`min_links`): the links whose ends' components differ are kept as
    root pairs, appended a segment at a time; each component's lightest such link is its
    minimum. Premise: nodes hang below a few roots, and one link is forced inside a component
    and one between two, so both kinds occur in every case."""
    from numba import cuda

    _, _, m, grid = _case(backend, which)
    plan = _plan(backend, m)
    nodes = 2 * m + 2
    roots = rng.choice(nodes, size=min(nodes, 4), replace=False).astype(np.int32)
    comp = roots[rng.integers(0, roots.size, nodes)]
    comp[roots] = roots
    lu = rng.integers(0, nodes, m).astype(np.int32)
    lv = rng.integers(0, nodes, m).astype(np.int32)
    lp = rng.permutation(4 * m)[:m].astype(np.int32)  # unique weights
    lv[0] = lu[0]  # one link inside a component
    if m > 1:
        lu[1], lv[1] = roots[0], roots[1]  # and one between two
    keep = comp[lu] != comp[lv]
    want = sorted(zip(comp[lu][keep].tolist(), comp[lv][keep].tolist(), lp[keep].tolist()), key=lambda t: t[2])
    best_ref = {}
    for cu, cv, w in want:
        best_ref[cu] = min(best_ref.get(cu, INT32_MAX), w)
        best_ref[cv] = min(best_ref.get(cv, INT32_MAX), w)
    best0 = np.full(nodes, POISON, np.int32)
    best0[roots] = INT32_MAX  # as reset_best leaves the roots
    d = {k: cuda.to_device(v) for k, v in (("lu", lu), ("lv", lv), ("lp", lp), ("comp", comp), ("best", best0))}
    out = {k: cuda.to_device(np.full(m + 1, POISON, np.int32)) for k in ("lu2", "lv2", "lp2")}
    args = (d["lu"], d["lv"], d["lp"], _i(m), d["comp"], d["best"], out["lu2"], out["lv2"], out["lp2"], plan.ctr,
            _i(ROUND))
    k, got, (_, _, lp2) = _appended(plan, "min_links", m, grid, args, [out[x] for x in ("lu2", "lv2", "lp2")])
    assert k == len(want)
    assert got == want
    assert np.all(lp2[k:] == POISON)
    best = d["best"].copy_to_host()
    for r in roots:
        assert best[r] == best_ref.get(int(r), INT32_MAX)
    others = np.ones(nodes, bool)
    others[roots] = False
    assert np.all(best[others] == POISON)
