"""Step 2 of chapter 5, the labelling: ``label[e]`` = the smallest edge id of e's cycle.

Every function here is one way of doing it, ``(plan, succ, n, label)`` on an
[`EulerPlan`][gpulab.euler.host.EulerPlan]'s buffers; a variant's
[`EulerPolicy`][gpulab.euler.policy.EulerPolicy] names the one it runs (``labelling=``), and
[`EulerPlan.label_cycles`][gpulab.euler.host.EulerPlan.label_cycles] calls it. In the order the
book climbs them:

* [`label_partition`][gpulab.euler.labelling.label_partition]: the blog's CPU step (the
  successors cross the bus both ways);
* [`label_propagate`][gpulab.euler.labelling.label_propagate]: one edge per round;
* [`label_jump`][gpulab.euler.labelling.label_jump]: pointer jumping over all edges;
* [`label_shared`][gpulab.euler.labelling.label_shared]: contract inside tiles in shared
  memory, jump on the rest;
* [`label_ruling_set`][gpulab.euler.labelling.label_ruling_set]: random splitters walk their
  sublists in registers.
"""

from __future__ import annotations

import numpy as np

from gpulab.errors import LimitError
from gpulab.euler.host import FLAGS, ROUND, ceil_log2
from gpulab.launch import ceil_div, u32
from gpulab.launch import i32 as _i


# --8<-- [start:min_jump]
def min_jump(plan, lo: int, hi: int, bound: int):
    """Min-label pointer jumping on the cycles of the words W0[lo:hi] (value, next): at most
    ``bound`` rounds (ceil(log2) of the longest cycle: then every window covers its cycle),
    launched in batches of JUMP_CHECK rounds whose flags are read once per batch. Returns
    (the buffer holding the result, rounds run)."""
    cur, other = plan.buf("W0"), plan.buf("W1")
    check = max(1, int(plan.params.get("JUMP_CHECK", 8)))
    plan.zero_flags()
    r = 0
    while r < bound:
        batch = min(check, bound - r)
        for k in range(r, r + batch):
            plan.launch("jump_round", hi - lo, cur, other, _i(lo), _i(hi), plan.ctr, _i(FLAGS + k))
            cur, other = other, cur
        r += batch
        if r >= bound:
            break
        if not plan.read()[FLAGS + r - batch:FLAGS + r].all():  # a round that changed nothing
            break
    return cur, r
# --8<-- [end:min_jump]


def label_jump(plan, succ, n, label):
    """Min-label pointer jumping on all n edges: ceil(log2 n) rounds at most, each over every edge."""
    plan.launch("jump_init", n, succ, _i(n), plan.buf("W0"))
    res, rounds = min_jump(plan, 0, n, ceil_log2(n))
    plan.launch("unpack_labels", n, res, _i(0), _i(n), label)
    plan.stats["label_rounds"] = rounds


def label_propagate(plan, succ, n, label):
    """Rounds of propagation in batches of JUMP_CHECK, each with its own flag: the rounds
    counted are exactly those that moved a label, plus the one that found nothing to move."""
    plan.launch("iota", n, label, _i(n))
    check = max(1, int(plan.params.get("JUMP_CHECK", 8)))
    cap = plan.params.get("MAX_ROUNDS")
    rounds = 0
    while True:
        plan.zero_flags()
        for k in range(check):
            plan.launch("propagate_round", n, succ, label, _i(n), plan.ctr, _i(FLAGS + k))
        f = plan.read()[FLAGS:FLAGS + check]
        if not f.all():
            rounds += int(np.argmin(f)) + 1
            break
        rounds += check
        if cap and rounds >= cap:
            plan.stats["label_rounds"] = rounds
            raise LimitError(f"propagate: labels still moving after {rounds} rounds (MAX_ROUNDS); a "
                             "round moves a label one edge, so a cycle of L edges needs about L rounds")
    plan.stats["label_rounds"] = rounds


# --8<-- [start:label_shared]
def label_shared(plan, succ, n, label):
    """Contract the chains inside each tile in shared memory, label the contracted cycles by
    pointer jumping in global memory, expand."""
    T = plan.params["TILE"]
    xit, mn, cid, exits = plan.buf("xit"), plan.buf("mn"), plan.buf("cid"), plan.buf("exits")
    plan.K("tile_contract", (ceil_div(n, T),), (T,), succ, _i(n), xit, mn, label)
    plan.set_ctr(0)
    plan.launch("compact_exits", n, xit, _i(n), cid, exits, plan.ctr)
    m = int(plan.get_ctr(1)[0])
    plan.stats["contracted"] = m
    rounds = 0
    if m:
        plan.launch("build_contracted", m, succ, xit, mn, cid, exits, _i(m), plan.buf("W0"))
        res, rounds = min_jump(plan, 0, m, ceil_log2(m))
        plan.launch("expand_labels", n, xit, cid, res, _i(n), label)
    plan.stats["label_rounds"] = rounds
# --8<-- [end:label_shared]


# --8<-- [start:label_ruling_set]
def splitter_rounds(plan, own, n, scale: int = 1):
    """The ruling set's rounds over ``own`` (NONE: not labelled yet), which the first pick fills. Each
    round picks as splitters the unlabelled edges whose hash is below a threshold (one in
    SPACING, GROWTH times denser each round, every edge left in the last), and yields (base,
    total, thresh, seed): its splitters are ``spl[base:total]``, its hash (thresh, seed) the one
    the walks test; the caller walks and labels them, so that the next pick sees what is left.
    One wait per round (how many splitters, how many edges were still unlabelled)."""
    from gpulab.euler.kernels_numba import PICK_ITEMS  # (kernels.cu's macro of the same name)

    plan.preset(0, 0)
    plan.launch("fill_i32", FLAGS - ROUND, plan.rounds_ctr, _i(FLAGS - ROUND), _i(0))
    spacing, growth = plan.params["SPACING"], plan.params["GROWTH"]
    seed = int(plan.params.get("SEED", 0x5EED))
    base, rounds = 0, 0
    while True:
        thresh = u32(0xFFFFFFFF if spacing <= 1 else (1 << 32) // spacing - 1)
        rseed = u32(seed + rounds * 0x9E3779B9)
        # one thread per PICK_ITEMS edges; the first round writes every own[i] (NONE or its slot)
        plan.launch("pick_splitters", ceil_div(n, PICK_ITEMS), own, _i(n), thresh, rseed, plan.buf("spl"), plan.ctr,
                    _i(ROUND + rounds), _i(scale), _i(rounds == 0))
        h = plan.read()
        total, todo = int(h[0]), int(h[ROUND + rounds])
        if todo == 0:
            return
        yield base, total, thresh, rseed
        rounds += 1
        base = total
        if spacing <= 1:
            return
        spacing = max(1, spacing // growth)


def label_ruling_set(plan, succ, n, label):
    """Rounds of random splitters among the edges not labelled yet. Each splitter walks its
    sublist in registers (the walk tests "splitter?" by the same hash, so its only read per
    edge is the successor) and marks every edge it passes as its own; the short list of
    splitters is labelled by pointer jumping; one pass over the edges turns "owned by
    splitter j" into the label. Cycles that drew no splitter wait for the next round, whose
    splitters are denser; the last round makes every remaining edge a splitter.
    One wait per round (how many splitters, how many edges were still unlabelled) and one
    per batch of jumping rounds.

    With ``SUBLISTS`` = 1 the walk also keeps, for the final ranking
    ([`EulerPlan.rank_sublists`][gpulab.euler.host.EulerPlan.rank_sublists]), each sublist's
    length, successor and last edge; the owners (4 bytes an edge) and the splitters then live in
    buffers of their own until the ranking. It keeps them only while there are at most
    2·E / RANK_SPACING + 1 splitters, as many as the ranking would reuse
    ([`EulerPlan.sublists_room`][gpulab.euler.host.EulerPlan.sublists_room])."""
    keep = plan.sublists_room(n)  # as many splitters as the ranking would reuse (`rank_sublists`)
    # only for the pipeline's own successors (an undirected graph's darts are not what it ranks)
    record = int(bool(plan.params.get("SUBLISTS", 0)) and succ is plan.buf("succ"))
    own = plan.buf("owner") if record else label
    spl, clab = plan.buf("spl"), plan.buf("clab")
    sublist, last = (plan.buf("sublist", np.uint64, size=keep), plan.buf("last_edge", size=keep)) if record \
        else (plan.buf("W1"), own)
    picked, splitters, jump_rounds = 0, [], 0
    for base, total, thresh, rseed in splitter_rounds(plan, own, n):
        s, picked = total - base, total
        splitters.append(s)
        record = record and total <= keep
        if s:
            plan.launch("walk_label", s, succ, own, spl, _i(base), _i(total), thresh, rseed, plan.buf("W0"),
                        sublist, last, _i(record))
            res, jr = min_jump(plan, base, total, ceil_log2(s))
            jump_rounds += jr
            plan.launch("unpack_labels", s, res, _i(base), _i(total), clab)
    plan.launch("label_from_owner", n, own, _i(n), clab, label)
    plan.walked = None
    if record:  # the splitters outlive the scratch slot they were picked into
        plan.buf("lspl", size=keep)[:picked].copy_to_device(spl[:picked])
        plan.walked = (succ, n, picked)
    plan.stats.update(label_rounds=len(splitters), splitters=splitters, label_jump_rounds=jump_rounds)
# --8<-- [end:label_ruling_set]


# --8<-- [start:label_trails]
def label_trails(plan, dsucc, n):
    """An undirected graph's closed trails (``dsucc``: the successors of its 2n darts), each
    walked once, from both ends of every stretch between splitters (`walk_trail`): the rounds,
    spacing and hash of [`label_ruling_set`][gpulab.euler.labelling.label_ruling_set], but the
    splitters are edges, each with two walkers, one per direction, and a walker stops where it
    meets the one coming the other way. Leaves ``town`` (each edge's walker and the parity of
    the dart it walked the edge as) and ``clab`` (each walker's cycle's smallest dart) for
    `orient_trails`; the darts' labelling would walk every edge twice, once per direction."""
    if n >= 2**30:
        raise LimitError(f"{n} edges: a trail's walkers are numbered below 2^31 (at most 2^30 - 1 edges)")
    town, spl, clab = plan.buf("town", size=n), plan.buf("spl"), plan.buf("clab")
    splitters, jump_rounds = [], 0
    for base, total, thresh, rseed in splitter_rounds(plan, town, n, scale=4):
        s = total - base
        splitters.append(s)
        if s:
            plan.launch("walk_trail", 2 * s, dsucc, town, spl, _i(base), _i(total), thresh, rseed, plan.buf("W0"))
            res, jr = min_jump(plan, 2 * base, 2 * total, ceil_log2(2 * s))
            jump_rounds += jr
            plan.launch("unpack_labels", 2 * s, res, _i(2 * base), _i(2 * total), clab)
    plan.stats.update(trail_rounds=len(splitters), trail_splitters=splitters, trail_jump_rounds=jump_rounds)
    return town, clab
# --8<-- [end:label_trails]


def label_partition(plan, succ, n, label):
    """The blog's step 2: copy the successors to the host, walk the cycles on the CPU (one
    thread), copy the labels back."""
    from gpulab.euler.reference import _walk_labels

    plan.syncs += 2
    host_succ = succ[:n].copy_to_host().astype(np.int64)
    lab = _walk_labels(host_succ).astype(np.int32)
    label[:n].copy_to_device(lab)
    plan.stats["label_rounds"] = 1
