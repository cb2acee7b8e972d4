r"""GP breeding on the GPU (numba.cuda): the CPU breeding's two passes, one thread per child.

[`gpulab.gp.breeding.breed`][gpulab.gp.breeding.breed] is the reference. Its work per child
is already independent of every other child: child ``c`` draws only from stream ``c`` of the
generation's seed (a counter-based SplitMix64 stream, `_seed_stream`), so the order and the
number of threads do not matter. The GPU breeding runs **the same per-child functions**
(`_plan_child`, `_write_child` and the operators they call: tournament, typed point choice with
Koza's 90% internal-node rule, subtree walks, grow), compiled as CUDA device functions, one
thread per child:

1. the ``elite`` best, in the CPU's order (`_elites`: fitness, then size with parsimony, then
   index): on the device (`choose_elites`: each block's ``n`` best, then the best of those) for up to
   `DEVICE_ELITES_MAX` elites, else on the host; for `breed`, each individual's size on
   the host (`sizes_and_elites`; `breed_resident` has the sizes on the device already, from the
   previous generation's validation);
2. `breed_plan`: thread ``c`` decides parent(s), operator, crossover points / mutation subtree,
   and child ``c``'s two tree lengths;
3. `plan_lengths` gathers the children's ``2P`` tree lengths from the plan rows; their prefix sum
   gives the children's offsets, on the device (`gpulab.gp.resident.exclusive_scan`: only the
   total, 4 bytes, goes to the host; read after the write pass when the children's code buffer
   has room for any children, `CODE_ROOM_SHARE`, else first, to size that buffer);
4. `breed_write`: thread ``c`` writes its two trees (a copy, a splice of two spans, or a splice
   of a subtree regrown from the stream state pass 2 saved).

So the children are bit-identical to the CPU breeding's for the same seed (the tests check
it on numba's simulator), and validity, typing, depth/length limits and the operators'
statistics carry over from the CPU breeding's tests.

**Device twins.** The operators are numba ``@njit`` functions in `gpulab.gp.breeding`; here
each one's Python source is compiled again with ``cuda.jit(device=True)``, against a copy of
that module's globals in which every operator name refers to its device twin (a CUDA function
cannot call a CPU-compiled one). One source, two targets: nothing to keep in step by hand.

**CUDA C.** ``breeding.cu`` holds the same kernels (and `plan_lengths`) written in CUDA C, a line-for-line
translation of the same functions (``backend="cuda-c"``: the loop uses them with the
``cuda-c`` evaluators); its children are the same bit for bit (the tests compare them on a GPU).

**The initial population** too ([`initial_population`][gpulab.gp.breeding_gpu.initial_population]):
thread ``t`` runs the CPU's per-tree function (`gpulab.gp.breeding._init_tree`), a prefix sum
places the trees, and the device validation computes their stats: the CPU's
`ramped_half_and_half`, bit for bit, already in the slot the first breeding reads.

The buffers (plan, scratch, lengths, the populations' arrays) are kept from one generation to
the next (`_Buffers`, in a [`PlanCache`][gpulab.launch.PlanCache]; `clear_cache()` frees them).

**On the device between generations.** [`breed_resident`][gpulab.gp.breeding_gpu.breed_resident]
(what the GP loop calls) keeps the population there: the kept buffers hold two populations'
arrays (code, offsets, stats, sizes), used in turn — the children of one breeding are the
parents of the next where they are, and the evaluators read them in place (a
[`DevicePopulation`][gpulab.gp.programs.DevicePopulation]). The children are validated on the
device ([`gpulab.gp.resident.check_children`][gpulab.gp.resident.check_children]: the host
validation's typed scan, one thread per child, which also computes the stats the next breeding
and the evaluators need), and only what the host needs crosses the bus: nothing in (the kernels
read the evaluator's fitness where it is on the device and pick the elites there, so the GP
loop queues a breeding before it has read the fitness; with more than `DEVICE_ELITES_MAX`
elites, or the fitness not on the device, the host picks them and they go up, with the
parents' sizes down first under parsimony); the code's length and the validation's summary (bad
trees, the maxima the evaluators check: 28 bytes) out.
[`breed`][gpulab.gp.breeding_gpu.breed] (host arrays in and out) remains: the
tests compare it with the CPU breeding byte for byte. The prefix sum and the validation have
their CUDA C twins too (``resident.cu``), used with ``backend="cuda-c"``.
"""

from __future__ import annotations

import functools
import types

import numpy as np
from numba import cuda, float64, int32, int64, uint64

from gpulab import device
from gpulab.errors import GpulabError
from gpulab.gp import breeding as _cpu
from gpulab.gp import opcodes as oc
from gpulab.gp import resident
from gpulab.gp.programs import STAT_DEPTH, DevicePopulation, Population
from gpulab.launch import PlanCache, ceil_div, launch_numba

# the per-child functions and everything they call, in gpulab.gp.breeding
_OPERATORS = ("_mix", "_seed_stream", "_next", "_below", "_uniform", "_choose", "_grow", "_better_values", "_better",
              "_tournament", "_pick", "_push_children", "_subtree", "_depth_at", "_copy", "_plan_child", "_write_child",
              "_ramp", "_init_tree")


_ENTRIES = ("_plan_child", "_write_child", "_init_tree")  # what the kernels call


def _quiet(f):
    """On the simulator the operators run as Python on numpy scalars, whose uint64 arithmetic
    warns on the wrap-around SplitMix64 relies on (compiled code wraps silently): the kernels'
    two entry points run under ``np.errstate(over="ignore")`` there (per thread: the
    simulator's threads do not inherit the host's error state)."""
    @functools.wraps(f)
    def quiet(*args):
        with np.errstate(over="ignore"):
            return f(*args)
    return quiet


def _device_twins() -> dict:
    """``{name: device function}``: each operator's Python function recompiled for CUDA, its
    calls resolved among the twins (a shared copy of the module's globals)."""
    g = dict(vars(_cpu))
    for name in _OPERATORS:
        f = getattr(_cpu, name).py_func
        f = types.FunctionType(f.__code__, g, f.__name__, f.__defaults__, f.__closure__)
        g[name] = cuda.jit(device=True)(_quiet(f) if device.on_simulator() and name in _ENTRIES else f)
    return {name: g[name] for name in _OPERATORS}


_DEV = _device_twins()
plan_child, write_child, init_tree, copy_bytes = _DEV["_plan_child"], _DEV["_write_child"], _DEV["_init_tree"], _DEV["_copy"]
THREADS = 128  # threads (children) per block
# the kernels' signatures as `breed` launches them (for the PTX check, gpulab.compilecheck)
SIG_PLAN = ("void(uint8[::1], int32[::1], int32[::1], float64[::1], int32[::1], int64[::1], int64, float64, float64, "
            "int64, int64, int64, float64, float64, boolean, int64, int32[:, ::1], int32[:, ::1], int32[:, ::1], "
            "uint8[:, ::1], int64[:, ::1], uint64[::1])")
SIG_WRITE = ("void(uint8[::1], int32[::1], int64[:, ::1], uint64[::1], int32[::1], uint8[::1], int64[::1], int64, "
             "float64, int32[:, ::1], int32[:, ::1])")


# --8<-- [start:kernels]
@cuda.jit
def breed_plan(code, offsets, tree_depth, fitness, sizes, elites, tournament, p_cross, p_mut, max_depth, max_nodes,
               mut_depth, p_leaf, p_func, parsimony, seed, st, ops, left, grown, plan, grown_at):
    """Pass 1, thread ``c`` = child ``c``: ``plan[c]`` (and ``grown_at[c]``); ``st``, ``ops``,
    ``left``, ``grown``: one row of scratch per child."""
    c = int64(cuda.grid(1))
    if c < plan.shape[0]:
        rng = cuda.local.array(1, uint64)
        plan_child(c, code, offsets, tree_depth, fitness, sizes, elites, tournament, p_cross, p_mut, max_depth,
                   max_nodes, mut_depth, p_leaf, p_func, parsimony, seed, rng, st[c], ops[c], left[c], grown[c], plan,
                   grown_at)


@cuda.jit
def breed_write(code, offsets, plan, grown_at, out_off, out, src, max_nodes, p_leaf, ops, left):
    """Pass 2, thread ``c`` = child ``c``: its two trees at ``out_off[2c]``, ``out_off[2c + 1]``."""
    c = int64(cuda.grid(1))
    if c < plan.shape[0]:
        rng = cuda.local.array(1, uint64)
        write_child(c, code, offsets, plan, grown_at, out_off, out, src, max_nodes, p_leaf, rng, ops[c], left[c])


@cuda.jit
def plan_lengths(plan, lens):
    """``lens[2c + u]`` = child ``c``'s tree ``u`` length, from its plan row: the ``2P`` numbers
    the offsets are a prefix sum of (the only part of the plan the host needs)."""
    c = cuda.grid(1)
    if c < plan.shape[0]:
        lens[2 * c] = plan[c, _cpu._LEN0]
        lens[2 * c + 1] = plan[c, _cpu._LEN1]
# --8<-- [end:kernels]


better_values = _DEV["_better_values"]
ELITE_THREADS = 256  # the elites kernels' blocks (the most they may have: a power of two)
ELITE_CHUNK = 4096  # individuals per block of elite_candidates
# the most elites chosen on the device (each is a pass over the population; more: on the host)
DEVICE_ELITES_MAX = 64


# --8<-- [start:elites]
@cuda.jit(device=True, inline=True)
def ahead(fc, sc, c, fb, sb, b, parsimony):
    """Individual ``c`` (fitness ``fc``, size ``sc``) goes before ``b`` among the elites: better
    (`_better_values`), or as good and earlier, the order in which the CPU's scan (`_elites`)
    keeps the first of equals. -1 goes last."""
    if c < 0 or b < 0:
        return b < 0 and c >= 0
    if better_values(fc, sc, fb, sb, parsimony):
        return True
    return not better_values(fb, sb, fc, sc, parsimony) and c < b


@cuda.jit(device=True, inline=True)
def best_after(fitness, sizes, parsimony, cand, lo, hi, lf, ls, li, bf, bs, bi):
    """The best individual that comes after ``li`` (fitness ``lf``, size ``ls``; -1: none yet),
    among individuals ``lo`` to ``hi - 1`` (``cand`` empty: a range) or ``cand[lo:hi]`` (-1 entries
    skipped): each thread keeps the best of its strided share, and a tree reduction over the
    block in shared memory (``bf``, ``bs``, ``bi``), carrying fitness and size along, finds the
    best of those. Returns its index (-1 if none), fitness and size, in every thread."""
    t = cuda.threadIdx.x
    mf, ms, mi = lf, ls, int64(-1)
    for j in range(lo + t, hi, cuda.blockDim.x):
        c = int64(j) if cand.size == 0 else cand[j]
        if c >= 0:
            fc, sc = fitness[c], sizes[c]
            if (li < 0 or ahead(lf, ls, li, fc, sc, c, parsimony)) and ahead(fc, sc, c, mf, ms, mi, parsimony):
                mf, ms, mi = fc, sc, c
    bf[t], bs[t], bi[t] = mf, ms, mi
    cuda.syncthreads()
    h = cuda.blockDim.x // 2
    while h > 0:
        if t < h and ahead(bf[t + h], bs[t + h], bi[t + h], bf[t], bs[t], bi[t], parsimony):
            bf[t], bs[t], bi[t] = bf[t + h], bs[t + h], bi[t + h]
        cuda.syncthreads()
        h //= 2
    rf, rs, ri = bf[0], bs[0], bi[0]
    cuda.syncthreads()  # (read by all before the next call writes)
    return ri, rf, rs


@cuda.jit(device=True, inline=True)
def best_in_order(fitness, sizes, parsimony, cand, lo, hi, out):
    """``out[:]`` = the ``out.size`` best of the range or list (`best_after`), in order; -1
    where there are fewer."""
    bf = cuda.shared.array(ELITE_THREADS, float64)
    bs = cuda.shared.array(ELITE_THREADS, int32)
    bi = cuda.shared.array(ELITE_THREADS, int64)
    lf, ls, li = float64(0), int32(0), int64(-1)
    for k in range(out.size):
        ri, rf, rs = best_after(fitness, sizes, parsimony, cand, lo, hi, lf, ls, li, bf, bs, bi)
        if cuda.threadIdx.x == 0:
            out[k] = ri
        if ri < 0:  # (none left: the rest stay -1; the same in every thread)
            for m in range(k + 1 + cuda.threadIdx.x, out.size, cuda.blockDim.x):
                out[m] = -1
            return
        lf, ls, li = rf, rs, ri


@cuda.jit
def elite_candidates(fitness, sizes, parsimony, chunk, n, cand):
    """Block ``b``: the ``n`` best of individuals ``b * chunk`` to ``(b + 1) * chunk - 1`` into
    ``cand[b * n:(b + 1) * n]``, in order: every elite is among its block's ``n`` best, so the
    elites are among these candidates."""
    b = cuda.blockIdx.x
    lo = b * chunk
    best_in_order(fitness, sizes, parsimony, cand[:0], lo, min(lo + chunk, fitness.size), cand[b * n:(b + 1) * n])


@cuda.jit
def select_elites(fitness, sizes, parsimony, cand, elites):
    """One block: the ``elites.size`` best of the candidates (``cand``, flat), in order: the
    CPU's `_elites` for fitness without NaN (`ahead` is then a total order, so the individuals
    not yet taken are exactly those after the last elite chosen)."""
    best_in_order(fitness, sizes, parsimony, cand, 0, cand.size, elites)
# --8<-- [end:elites]


SIG_CANDIDATES = "void(float64[::1], int32[::1], boolean, int64, int64, int64[::1])"
SIG_ELITES = "void(float64[::1], int32[::1], boolean, int64[::1], int64[::1])"


# --8<-- [start:init-kernels]
@cuda.jit
def init_trees(min_depth, max_depth, max_nodes, p_leaf, seed, grown, ops, left, lens, src):
    """The initial population, thread ``t`` = tree ``t`` (the CPU's `ramped_half_and_half`, one
    tree per thread): its code into row ``t`` of ``grown``, its length into ``lens[t]``, and
    ``src[t] = -1`` (a new tree)."""
    t = int64(cuda.grid(1))
    if t < lens.size:
        rng = cuda.local.array(1, uint64)
        lens[t] = init_tree(t, min_depth, max_depth, max_nodes, p_leaf, seed, rng, grown[t], ops[t], left[t])
        src[t] = -1


@cuda.jit
def init_write(grown, offsets, code):
    """Thread ``t``: row ``t`` of ``grown`` to its place in ``code`` (``offsets``: the lengths' prefix sum)."""
    t = int64(cuda.grid(1))
    if t < grown.shape[0]:
        copy_bytes(code, offsets[t], grown[t], 0, offsets[t + 1] - offsets[t])
# --8<-- [end:init-kernels]


SIG_LENGTHS = "void(int64[:, ::1], int32[::1])"
SIG_INIT = "void(int64, int64, int64, float64, int64, uint8[:, ::1], int32[:, ::1], int32[:, ::1], int32[::1], int64[::1])"
SIG_INIT_WRITE = "void(uint8[:, ::1], int32[::1], uint8[::1])"


class _Slot:
    """One population's device arrays: ``code`` (grows), ``offsets`` (allocated zeroed:
    ``offsets[0]`` is never written), ``stats`` (``int32 [6, 2P]``, `analyze`'s columns as rows),
    ``sizes`` (both trees' nodes per individual) and ``src`` (the parent tree each tree copies,
    or -1, for children bred into it). ``epoch`` counts the times a breeding
    claimed it to write (a [`DevicePopulation`][gpulab.gp.programs.DevicePopulation] in it
    remembers the epoch it was written at, and refuses to be read after the next claim)."""

    def __init__(self, P: int):
        self.code = cuda.device_array(1, np.uint8)
        self.offsets = cuda.to_device(np.zeros(2 * P + 1, np.int32))
        self.stats = cuda.device_array((6, 2 * P), np.int32)
        self.sizes = cuda.device_array(P, np.int32)
        self.src = cuda.device_array(2 * P, np.int64)
        self.epoch = 0
        # views made once (a numba slice costs tens of microseconds of host time, every generation):
        # the trees' heights, and the scan's output and total (read back through a pinned buffer)
        self.depth = self.stats[STAT_DEPTH]
        self.scan_views = (self.offsets[1:], self.offsets[2 * P:], device.Readback(1, np.int32))

    def claim(self) -> "_Slot":
        self.epoch += 1
        return self

    def room(self, nbytes: int, spare: bool = True):
        """The code buffer, with room for ``nbytes`` (grown by a quarter more than asked, unless
        not ``spare``). A new
        buffer holds no population: the epoch moves on, so a `DevicePopulation` written into the
        old one refuses to be read instead of reading the new one's garbage."""
        if self.code.size < nbytes:
            self.code = cuda.device_array(nbytes + (nbytes // 4 if spare else 0), np.uint8)
            self.epoch += 1
        return self.code


class _Buffers:
    """One generation's device buffers, kept from one generation to the next: while the
    population size and the limits stay the same, a breeding allocates no device memory (the
    walks' stack is sized for the longest tree the limits allow, not the longest present, so the
    trees' growth never reallocates it) except when the population's code outgrows its buffer.
    Two [`_Slot`][gpulab.gp.breeding_gpu._Slot]s hold the parents and the children in turn: the
    children of one breeding are the parents of the next where they are."""

    def __init__(self, P: int, max_nodes: int, mut_depth: int, width: int, n_elites: int):
        self.plan = cuda.device_array((P, _cpu.NPLAN), np.int64)
        self.grown_at = cuda.device_array(P, np.uint64)  # read only where pass 1 wrote it (mutations)
        self.ops = cuda.device_array((P, mut_depth + 2), np.int32)
        self.left = cuda.device_array((P, mut_depth + 2), np.int32)
        self.st = cuda.device_array((P, width), np.int32)  # width >= the longest tree + 2
        self.grown = cuda.device_array((P, max_nodes + 8), np.uint8)
        self.lens = cuda.device_array(2 * P, np.int32)
        self.fitness = cuda.device_array(P, np.float64)
        self.elites = cuda.device_array(max(n_elites, 1), np.int64)
        self.elites_in = self.elites[:n_elites]  # (what the kernels take: numba reads the count from its shape)
        self.elites_host = cuda.pinned_array(max(n_elites, 1), np.int64)[:n_elites]  # (copied up without a wait)
        self.candidates = cuda.device_array(max(ceil_div(P, ELITE_CHUNK) * n_elites, 1), np.int64)  # (choose_elites')
        self.summary_start = cuda.pinned_array(resident.NSUMMARY, np.int32)
        self.summary_start[:] = resident.SUMMARY_START
        self.slots = (_Slot(P), _Slot(P))
        self.summary = cuda.device_array(resident.NSUMMARY, np.int32)
        self.summary_back = device.Readback(resident.NSUMMARY, np.int32)
        self._init: tuple = (None,)  # (the initialization's scratch: its key, then the arrays)

    def init_scratch(self, depth: int, max_nodes: int):
        """The initialization's scratch for ``2P`` trees of at most ``depth`` levels (made once
        per depth): ``grown`` (a row of ``max_nodes + 8`` bytes per tree), ``ops``, ``left``,
        ``lens``."""
        T = 2 * self.slots[0].sizes.size
        key = (int(depth), int(max_nodes))
        if self._init[0] != key:
            self._init = (key, cuda.device_array((T, int(max_nodes) + 8), np.uint8),
                          cuda.device_array((T, int(depth) + 2), np.int32), cuda.device_array((T, int(depth) + 2), np.int32),
                          cuda.device_array(T, np.int32))
        return self._init[1:]

    def drop_init_scratch(self) -> None:
        """Let the initialization's scratch go (it serves once a run)."""
        self._init = (None,)

    def holds(self, pop) -> bool:
        """``pop`` is a [`DevicePopulation`][gpulab.gp.programs.DevicePopulation] in one of
        these slots, not yet overwritten."""
        return (isinstance(pop, DevicePopulation) and any(pop._slot is s for s in self.slots)
                and pop._slot.epoch == pop._epoch)


# The share of the free device memory the two slots' code buffers may take to hold any children
# the limits allow (2 * P * max_nodes bytes each: 12.8 MB at the paper's 25,000 × 255): then a
# breeding queues its write pass without waiting for the children's code length.
CODE_ROOM_SHARE = 0.1

_BUFFERS = PlanCache(maxsize=1, after_evict=device.release_memory)  # one population size at a time


def clear_cache() -> None:
    """Free the GPU breeding's kept buffers."""
    _BUFFERS.clear()
    resident.clear_cache()


def _buffers(P, max_nodes, mut_depth, width, n_elites) -> _Buffers:
    key = (P, int(max_nodes), int(mut_depth), width, n_elites)
    return _BUFFERS.get(key, lambda: _Buffers(*key))


def _upload(slot: _Slot, code, offsets, depth, sizes, stats=None) -> None:
    """A host population into ``slot``: its code, offsets, sizes and its stats (or only the trees' heights)."""
    if code.size:
        slot.room(code.size)[:code.size].copy_to_device(code)
    slot.offsets.copy_to_device(offsets)
    if stats is not None:
        slot.stats.copy_to_device(np.ascontiguousarray(stats.T))
    else:
        slot.stats[STAT_DEPTH].copy_to_device(np.ascontiguousarray(depth, np.int32))
    slot.sizes.copy_to_device(sizes)


def _breed_into(b: _Buffers, parents: _Slot, children: _Slot, fitness, P, width, tournament, p_cross, p_mut,
                max_depth, max_nodes, mut_depth, p_leaf, p_func, parsimony, seed, backend, mark):
    """The two passes from ``parents`` into ``children``, the elites in ``b.elites_in`` already
    (`_elites_up` or `_select_elites`); the offsets' prefix sum on the device
    (`gpulab.gp.resident.exclusive_scan`). Returns a function that returns the children's code
    length: when ``children``'s code buffer already has room for any ``P`` children (two trees of
    ``width - 2`` nodes each, what [`reserve`][gpulab.gp.breeding_gpu.reserve] allocates where
    it fits) the host does not wait for the length before the write pass, and the function
    waits for it (call it after a later synchronization: it is then free); otherwise the length
    was read first, to size the buffer. ``fitness``: a
    host array (copied into the kept buffer), or a device array of ``P`` (read where it is: the
    kernels that follow on the stream read it before any later work can write it)."""
    if not _in_place(fitness, P):
        b.fitness.copy_to_device(fitness)
        fitness = b.fitness
    d_code, d_off = parents.code, parents.offsets
    inputs = (d_code, d_off, parents.depth, fitness, parents.sizes, b.elites_in)
    blocks = ceil_div(P, THREADS)
    mark("upload")
    if backend == "cuda-c":
        from gpulab import cudac

        i, f = np.int64, np.float64
        cudac.launch(cuda_c_kernel("breed_plan"), (blocks,), (THREADS,), *inputs, i(b.elites_in.size), i(P),
                     i(tournament),
                     f(p_cross), f(p_mut), i(max_depth), i(max_nodes), i(mut_depth), f(p_leaf), f(p_func),
                     np.int32(bool(parsimony)), i(seed), b.st, i(width), b.ops, b.left, b.grown, b.plan, b.grown_at)
        cudac.launch(cuda_c_kernel("plan_lengths"), (blocks,), (THREADS,), b.plan, b.lens, i(P))
    else:
        launch_numba(breed_plan, blocks, THREADS, *inputs, int(tournament), float(p_cross), float(p_mut),
                     int(max_depth), int(max_nodes), int(mut_depth), float(p_leaf), float(p_func), bool(parsimony),
                     int(seed), b.st, b.ops, b.left, b.grown, b.plan, b.grown_at)
        launch_numba(plan_lengths, blocks, THREADS, b.plan, b.lens)
    mark("plan")
    out, total = _place_trees(children, b.lens, 2 * P * (width - 2), backend)
    mark("offsets")
    if backend == "cuda-c":
        cudac.launch(cuda_c_kernel("breed_write"), (blocks,), (THREADS,), d_code, d_off, b.plan, b.grown_at,
                     children.offsets, out, children.src, np.int64(P), np.int64(max_nodes), np.float64(p_leaf),
                     np.int64(mut_depth), b.ops, b.left)
    else:
        launch_numba(breed_write, blocks, THREADS, d_code, d_off, b.plan, b.grown_at, children.offsets, out,
                     children.src, int(max_nodes), float(p_leaf), b.ops, b.left)
    mark("write")
    return total


def _in_place(fitness, P: int) -> bool:
    """``fitness`` is a device array the kernels read where it is: ``P`` contiguous float64."""
    return (not isinstance(fitness, np.ndarray) and fitness.size == P and fitness.dtype == np.float64
            and fitness.strides == (8,))


def elites_on_device(fitness_device, P: int, elite) -> bool:
    """Whether [`breed_resident`][gpulab.gp.breeding_gpu.breed_resident] chooses the elites on
    the device (`choose_elites`), with no host fitness needed: ``fitness_device`` is ``P``
    contiguous float64 on the device and there are at most `DEVICE_ELITES_MAX` elites."""
    return fitness_device is not None and _in_place(fitness_device, P) and min(int(elite), P) <= DEVICE_ELITES_MAX


def _device_elites(fitness, fitness_device, P: int, elite) -> bool:
    """The one decision of `breed` and `breed_resident`: the elites are chosen on the device
    (`elites_on_device`) unless the host fitness, where given, holds NaN (then the order is not
    total, and the host's scan defines the elites)."""
    return elites_on_device(fitness_device, P, elite) and (fitness is None or not np.isnan(fitness).any())


def _elites_up(b: _Buffers, elites: np.ndarray) -> None:
    """The elites the host chose into ``b.elites_in`` (from a pinned buffer, without a wait)."""
    if elites.size:
        b.elites_host[:] = elites
        device.upload(b.elites_in, b.elites_host)


def choose_elites(fitness, sizes, parsimony, elites, backend: str = "numba", threads: int = ELITE_THREADS,
                  chunk: int = ELITE_CHUNK, cand=None) -> None:
    """``elites`` (a device array of ``n`` int64) = the ``n`` best individuals in order, as the
    CPU's `_elites` picks them from ``fitness`` and ``sizes`` (``P`` each, on the device), -1
    past ``P``; in two launches: `elite_candidates` (a block per ``chunk`` individuals: its ``n``
    best) and `select_elites` (one block: the ``n`` best of those). The fitness must hold no NaN
    (the order is then total; with NaN, elites may repeat). ``threads``: a power of two up to
    `ELITE_THREADS`; ``cand``: the candidates' buffer (``ceil(P / chunk) * n`` int64; made if
    None).

    Raises:
        GpulabError: ``threads`` not a power of two in [1, `ELITE_THREADS`], ``chunk`` below 1,
            or ``cand`` of another size."""
    n, P = elites.size, fitness.size
    if not (isinstance(threads, (int, np.integer)) and 1 <= threads <= ELITE_THREADS and threads & (threads - 1) == 0):
        raise GpulabError(f"choose_elites: threads = {threads!r} must be a power of two from 1 to {ELITE_THREADS}")
    if not (isinstance(chunk, (int, np.integer)) and chunk >= 1):
        raise GpulabError(f"choose_elites: chunk = {chunk!r} must be a whole number >= 1")
    if not n:
        return
    blocks = ceil_div(P, chunk)
    if cand is None:
        cand = cuda.device_array(blocks * n, np.int64)
    if cand.size != blocks * n:
        raise GpulabError(f"choose_elites: cand holds {cand.size} int64, and {blocks} blocks of {n} candidates "
                          f"need {blocks * n}")
    if backend == "cuda-c":
        from gpulab import cudac

        i = np.int64
        cudac.launch(cuda_c_kernel("elite_candidates"), (blocks,), (threads,), fitness, sizes, i(P),
                     np.int32(bool(parsimony)), i(chunk), cand, i(n))
        cudac.launch(cuda_c_kernel("select_elites"), (1,), (threads,), fitness, sizes, np.int32(bool(parsimony)),
                     cand, i(cand.size), elites, i(n))
    else:
        launch_numba(elite_candidates, blocks, threads, fitness, sizes, bool(parsimony), int(chunk), int(n), cand)
        launch_numba(select_elites, 1, threads, fitness, sizes, bool(parsimony), cand, elites)


def _select_elites(b: _Buffers, fitness, sizes, parsimony, backend: str) -> None:
    """``b.elites_in`` chosen on the device (`choose_elites`, with the kept candidates' buffer;
    32 threads a block on the simulator, whose threads are Python's)."""
    choose_elites(fitness, sizes, parsimony, b.elites_in, backend, 32 if device.on_simulator() else ELITE_THREADS,
                  cand=b.candidates)


def _place_trees(slot: _Slot, lens, most: int, backend: str):
    """The prefix sum of the trees' ``lens`` into ``slot``'s offsets, and the code buffer the
    trees are then written to, with a function that returns their total length. When the
    buffer already has room for ``most`` bytes (any trees the limits allow), the total's copy is
    only queued: the host does not wait for it before the write pass, and the function waits
    (free after a later synchronization). Otherwise the total is read first and the buffer grown
    to it."""
    if slot.code.size >= most:
        return slot.code, resident.exclusive_scan(lens, slot.offsets, backend, slot.scan_views, wait=False)
    n = resident.exclusive_scan(lens, slot.offsets, backend, slot.scan_views)
    return slot.room(max(n, 1)), (lambda: n)


def breed(code, offsets, tree_depth, fitness, elite, tournament, p_cross, p_mut, max_depth, max_nodes, mut_depth,
          p_leaf, p_func, parsimony, seed, backend: str = "numba", timings: dict | None = None):
    """[`gpulab.gp.breeding.breed`][gpulab.gp.breeding.breed] on the GPU: the same arguments
    (host arrays), the same ``(code, offsets, src)`` (host arrays), bit for bit. ``backend``:
    ``"numba"`` (the kernels above) or ``"cuda-c"`` (their twins in ``breeding.cu``, through
    pycuda; the same buffers, the same launches). ``timings``: a dict that receives each stage's
    seconds (host work, uploads, elites, plan kernel, offsets, write kernel, download), the device
    synchronized after each stage (so only for measuring: it adds the syncs).

    The buffers stay allocated between calls (`_Buffers`). This is the breeding with host arrays
    in and out (what the tests compare with the CPU breeding); the GP loop uses
    [`breed_resident`][gpulab.gp.breeding_gpu.breed_resident], which keeps the population on the device."""
    mark = _stage_clock(timings)
    code = np.ascontiguousarray(code, np.uint8)
    offsets = np.ascontiguousarray(offsets, np.int32)
    fitness = np.ascontiguousarray(fitness, np.float64)
    P = (offsets.size - 1) // 2
    sizes, elites, longest = _cpu.sizes_and_elites(offsets, fitness, elite, bool(parsimony))
    width = max(int(max_nodes), int(longest)) + 2  # the walks' stack: any tree the limits allow
    b = _buffers(P, max_nodes, mut_depth, width, elites.size)
    parents, children = b.slots[0].claim(), b.slots[1].claim()
    mark("host")
    _upload(parents, code, offsets, tree_depth, sizes)
    mark("upload")
    if _device_elites(fitness, b.fitness, P, elite):  # (as breed_resident does: the tests compare them)
        b.fitness.copy_to_device(fitness)
        fitness = b.fitness
        _select_elites(b, fitness, parents.sizes, parsimony, backend)
    else:
        _elites_up(b, elites)
    mark("elites")
    total = _breed_into(b, parents, children, fitness, P, width, tournament, p_cross, p_mut, max_depth,
                        max_nodes, mut_depth, p_leaf, p_func, parsimony, seed, backend, mark)()
    result = (children.code[:total].copy_to_host() if total else np.zeros(0, np.uint8), children.offsets.copy_to_host(),
              children.src.copy_to_host())
    mark("download")
    return result


# --8<-- [start:resident]
def breed_resident(parents: Population, fitness, elite, tournament, p_cross, p_mut, max_depth, max_nodes, mut_depth,
                   p_leaf, p_func, parsimony, seed, backend: str = "numba",
                   timings: dict | None = None, fitness_device=None, wait: bool = True):
    """One generation bred on the GPU, kept there: the children of
    [`breed`][gpulab.gp.breeding_gpu.breed] (the same, bit for bit), validated on the device
    ([`gpulab.gp.resident`][gpulab.gp.resident]), as a
    [`DevicePopulation`][gpulab.gp.programs.DevicePopulation] that the evaluators read in place.

    ``parents``: a host [`Population`][gpulab.gp.programs.Population] (uploaded) or the
    [`DevicePopulation`][gpulab.gp.programs.DevicePopulation] of the previous call (read where
    it is: the children go to the other of the two kept slots). ``fitness``: the parents'
    fitness as a host array, or ``None`` where ``fitness_device`` serves
    ([`elites_on_device`][gpulab.gp.breeding_gpu.elites_on_device]). ``fitness_device``: the
    same fitness on the device (the evaluator's output): read where it is when it is ``P``
    contiguous float64 (the kernels that read it come before any later work on the stream; any
    other device array is copied into the kept buffer first). With the fitness read in place and
    at most `DEVICE_ELITES_MAX` elites, the elites are chosen on the device (`choose_elites`,
    the CPU's choice for fitness without NaN, which the loop's always is: a market's prices are
    finite and positive in float32), with the parents' sizes where they are; otherwise the host
    picks them from ``fitness`` and they go up (under ``parsimony``, after the parents' sizes
    come down, which waits for the work queued before), and the kernels read ``fitness_device``
    if given, else ``fitness`` copied into the kept buffer. What
    crosses the bus per generation, with the fitness on the device: the children's code length
    (4 bytes) and the validation's summary (24 bytes) down, nothing up. ``timings`` as in
    `breed`, with a ``validate`` stage. ``wait=False``: every kernel is queued, and a function
    is returned that waits for the validation's summary and returns the children (the host is
    free meanwhile: the GP loop reads both periods' fitness); call it before anything else reads
    or breeds these populations.

    Raises:
        ProgramError: the device validation found an invalid child (a bug in the breeding:
            never returned); the message names the individual, the tree and what is wrong.
        GpulabError: ``fitness`` is ``None`` where the elites cannot be chosen on the device."""
    mark = _stage_clock(timings)
    P = len(parents)
    on_device = _device_elites(fitness, fitness_device, P, elite)
    if not on_device:
        if fitness is None:
            why = (f"elite = {elite} is over DEVICE_ELITES_MAX = {DEVICE_ELITES_MAX}"
                   if fitness_device is not None and _in_place(fitness_device, P)
                   else f"fitness_device is not {P} contiguous float64 on the device")
            raise GpulabError(f"breed_resident: fitness=None needs the elites chosen on the device, and {why}")
        fitness = np.ascontiguousarray(fitness, np.float64)
    width = _width(max_nodes, parents)
    n_elites = min(int(elite), P)
    b = _buffers(P, max_nodes, mut_depth, width, n_elites)
    if b.holds(parents):
        src = parents._slot
        sizes = None if on_device or not (parsimony and n_elites) else src.sizes.copy_to_host()
    else:
        src, sizes = _place(b, parents.to_host() if isinstance(parents, DevicePopulation) else parents)
    dst = b.slots[1] if src is b.slots[0] else b.slots[0]
    dst.claim()
    mark("host")
    if on_device:
        _select_elites(b, fitness_device, src.sizes, parsimony, backend)
    else:
        _elites_up(b, _cpu._elites(fitness, np.zeros(P, np.int32) if sizes is None else sizes, int(elite),
                                   bool(parsimony)))
    mark("elites")
    total = _breed_into(b, src, dst, fitness if fitness_device is None else fitness_device, P, width, tournament,
                        p_cross, p_mut, max_depth, max_nodes, mut_depth, p_leaf, p_func, parsimony, seed, backend,
                        mark)
    maxima = resident.validate(dst.code, dst.offsets, dst.src, src.stats, max_nodes, max_depth, b.st, b.grown,
                               dst.stats, dst.sizes, b.summary, b.summary_back, backend, b.summary_start, wait=False)
    epoch = dst.epoch  # (written at this epoch: a claim before children() is called makes them stale)

    def children() -> DevicePopulation:
        m = maxima()  # (the one wait: the code length arrived before the summary)
        mark("validate")
        return DevicePopulation(dst, P, total(), m, epoch=epoch)._bred_from(parents, dst.src)

    return children() if wait else children
# --8<-- [end:resident]


def _width(max_nodes, pop) -> int:
    """The walks' stack width for breeding ``pop``: any tree the limits allow, and ``pop``'s longest."""
    return max(int(max_nodes), int(pop.max_tree_nodes)) + 2


def _place(b: _Buffers, host: Population) -> tuple[_Slot, np.ndarray]:
    """A host population uploaded into the first kept slot (claimed); returns it and the sizes."""
    sizes, _, _ = _cpu.sizes_and_elites(host.offsets, np.zeros(len(host)), 0, False)
    slot = b.slots[0].claim()
    _upload(slot, host.code, host.offsets, None, sizes, stats=host.stats)
    return slot, sizes


def reserve(pop: Population, elite, max_nodes, mut_depth, backend: str = "numba") -> None:
    """Allocate now what breeding ``pop``'s size on the GPU keeps: the buffers (`_Buffers`), both
    slots' code buffers (room for any ``P`` children the limits allow, where two such buffers fit
    `CODE_ROOM_SHARE` of the free device memory, so that a breeding never waits for the
    children's length; else twice ``pop``'s code, so that the trees' growth over a run seldom
    reallocates them), the prefix sum's block totals, and run the prefix sum once at this
    size (its kernels loaded, or compiled by numba, the deeper levels included). A run's
    warm-up ([`evolve`][gpulab.gp.loop.evolve] calls it before starting its clock): the first
    timed breeding then allocates nothing, as the later ones. Changes no population."""
    P = len(pop)
    width = _width(max_nodes, pop)
    b = _buffers(P, max_nodes, mut_depth, width, min(int(elite), P))
    _room(b, P, width, pop.total_nodes)  # (room for any P children: the breeding never waits for their length)
    _scan_once(b, P, backend)


def to_device(pop: Population, elite, max_nodes, mut_depth) -> DevicePopulation:
    """``pop`` (a host population) uploaded once into the GPU breeding's kept buffers, as the
    [`DevicePopulation`][gpulab.gp.programs.DevicePopulation] that
    [`breed_resident`][gpulab.gp.breeding_gpu.breed_resident] with the same settings reads in
    place (and the evaluators too): what [`evolve`][gpulab.gp.loop.evolve] does with its initial
    population, so that its first generation, like every other, uploads nothing. It keeps
    ``pop`` as its host copy (nothing to download). A `DevicePopulation` still on the device is
    returned as it is; one overwritten since is uploaded again from its host copy, into the
    first slot, which ends the life of any population bred into that slot before."""
    if isinstance(pop, DevicePopulation):
        pop = pop.device_or_host()  # overwritten since, with a host copy: uploaded again from it
        if isinstance(pop, DevicePopulation):
            return pop
    P = len(pop)
    b = _buffers(P, max_nodes, mut_depth, _width(max_nodes, pop), min(int(elite), P))
    slot, _ = _place(b, pop)
    return DevicePopulation(slot, P, pop.total_nodes, {"stack": pop.max_stack_depth, "bools": pop.max_bool_depth,
                                                       "tree_nodes": pop.max_tree_nodes,
                                                       "program_nodes": pop.max_program_nodes}, host=pop)


# --8<-- [start:initial]
def initial_population(P: int, min_depth: int, max_depth: int, max_nodes: int, p_leaf: float, seed: int, elite: int,
                       mut_depth: int, backend: str = "numba") -> DevicePopulation:
    """[`gpulab.gp.breeding.ramped_half_and_half`][gpulab.gp.breeding.ramped_half_and_half] on
    the GPU, into the first slot of the breeding's kept buffers for these settings (those of
    [`breed_resident`][gpulab.gp.breeding_gpu.breed_resident] with the same ``elite``,
    ``max_nodes``, ``mut_depth``): the same population, bit for bit, validated on the device,
    as the [`DevicePopulation`][gpulab.gp.programs.DevicePopulation] that the evaluators and the
    first breeding read in place. Thread ``t`` runs the CPU's per-tree function (`_init_tree`)
    into its own row, a prefix sum of the lengths places the trees, a second kernel copies them
    there, and the validation computes the stats and maxima: nothing crosses the bus but the
    code's length and the validation's summary. `reserve_initial` (off a run's clock) makes the
    buffers first. ``backend``: ``"numba"`` or ``"cuda-c"`` (``breeding.cu``).
    (``max_nodes`` must be at most `MAX_TREE_NODES`; `GPParams.check` has checked the rest.)"""
    width = int(max_nodes) + 2
    b = _buffers(P, max_nodes, mut_depth, width, min(int(elite), P))
    grown, ops, left, lens = b.init_scratch(max_depth, max_nodes)
    slot = b.slots[0].claim()
    T, blocks = 2 * P, ceil_div(2 * P, THREADS)
    if backend == "cuda-c":
        from gpulab import cudac

        i = np.int64
        cudac.launch(cuda_c_kernel("init_trees"), (blocks,), (THREADS,), i(min_depth), i(max_depth), i(max_nodes),
                     np.float64(p_leaf), i(seed), grown, i(grown.shape[1]), ops, left, i(ops.shape[1]), lens, slot.src,
                     i(T))
    else:
        launch_numba(init_trees, blocks, THREADS, int(min_depth), int(max_depth), int(max_nodes), float(p_leaf),
                     int(seed), grown, ops, left, lens, slot.src)
    code, total = _place_trees(slot, lens, T * int(max_nodes), backend)
    if backend == "cuda-c":
        cudac.launch(cuda_c_kernel("init_write"), (blocks,), (THREADS,), grown, np.int64(grown.shape[1]), slot.offsets,
                     code, np.int64(T))
    else:
        launch_numba(init_write, blocks, THREADS, grown, slot.offsets, code)
    maxima = resident.validate(slot.code, slot.offsets, slot.src, slot.stats, max_nodes, max_depth, b.st, b.grown,
                               slot.stats, slot.sizes, b.summary, b.summary_back, backend, b.summary_start)
    b.drop_init_scratch()  # (used once a run: its memory goes back; the kernels that read it are done)
    return DevicePopulation(slot, P, total(), maxima)
# --8<-- [end:initial]


def initial_fits(P: int, max_depth: int, max_nodes: int) -> bool:
    """Whether the initialization's scratch for ``P`` individuals (``2P`` rows of
    ``max_nodes + 8`` bytes, and ``2P`` of ``2(max_depth + 2)`` int32) fits `CODE_ROOM_SHARE`
    of the free device memory (else [`evolve`][gpulab.gp.loop.evolve] initializes on the host)."""
    need = 2 * P * (int(max_nodes) + 8 + 8 * (int(max_depth) + 2) + 4)
    return need <= CODE_ROOM_SHARE * device.free_bytes()


def reserve_initial(P: int, max_depth: int, max_nodes: int, elite: int, mut_depth: int, backend: str = "numba") -> None:
    """[`reserve`][gpulab.gp.breeding_gpu.reserve] for a run whose initial population
    [`initial_population`][gpulab.gp.breeding_gpu.initial_population] makes on the GPU: the
    buffers for ``P`` individuals, both slots' code buffers, the initialization's scratch, the
    prefix sum run once at this size. Changes no population."""
    width = int(max_nodes) + 2
    b = _buffers(P, max_nodes, mut_depth, width, min(int(elite), P))
    _room(b, P, width)
    b.init_scratch(max_depth, max_nodes)
    _scan_once(b, P, backend)


def _room(b: _Buffers, P: int, width: int, nodes: int = 0) -> None:
    """Both slots' code buffers: room for any ``P`` children (``2P(width - 2)`` bytes) where two
    of them fit `CODE_ROOM_SHARE` of the free memory, else twice ``nodes``."""
    most = 2 * P * (width - 2)
    nbytes = most if 2 * most <= CODE_ROOM_SHARE * device.free_bytes() else 2 * max(nodes, 1)
    for slot in b.slots:
        slot.room(nbytes, spare=False)


def _scan_once(b: _Buffers, P: int, backend: str) -> None:
    b.lens.copy_to_device(np.zeros(2 * P, np.int32))
    resident.inclusive_scan(b.lens, b.lens, backend)  # (scratch only: no population lives in lens)
    cuda.synchronize()


def _stage_clock(timings: dict | None):
    """``mark(stage)``: adds the seconds since the last mark to ``timings[stage]`` (the device
    synchronized first); does nothing when ``timings`` is None."""
    if timings is None:
        return lambda stage: None
    import time

    last = [time.perf_counter()]

    def mark(stage: str) -> None:
        cuda.synchronize()
        now = time.perf_counter()
        timings[stage] = timings.get(stage, 0.0) + now - last[0]
        last[0] = now
    return mark


CUDA_SOURCE = "breeding.cu"
CUDA_DEFINES = {"NF": oc.NF, "NB": oc.NB, "OP_AND": oc.OP_AND, "OP_NOT": oc.OP_NOT, "OP_LT": oc.OP_LT,
                "ELITE_THREADS": ELITE_THREADS}


def cuda_c_kernel(name: str):
    """``breed_plan`` / ``breed_write`` of ``breeding.cu`` (NVRTC, once), as a pycuda function."""
    from gpulab import cudac

    return cudac.kernel("gpulab.gp", CUDA_SOURCE, name, CUDA_DEFINES)
