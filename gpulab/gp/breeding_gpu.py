r"""GP breeding on the GPU (numba.cuda): the CPU breeding's two passes, one thread per child.

[`gpulab.gp.breeding.breed`][gpulab.gp.breeding.breed] is the reference. Its work per child
is already independent of every other child: child ``c`` draws only from stream ``c`` of the
generation's seed (a counter-based SplitMix64 stream, `_seed_stream`), so the order and the
number of threads do not matter. The GPU breeding runs **the same per-child functions**
(`_plan_child`, `_write_child` and the operators they call: tournament, typed point choice with
Koza's 90% internal-node rule, subtree walks, grow), compiled as CUDA device functions, one
thread per child:

1. on the host, each individual's size and the ``elite`` best (`sizes_and_elites`: O(elite × P),
   from the fitness the loop already holds on the host);
2. `breed_plan`: thread ``c`` decides parent(s), operator, crossover points / mutation subtree,
   and child ``c``'s two tree lengths;
3. `plan_lengths` gathers the children's ``2P`` tree lengths from the plan rows; their prefix sum
   gives the children's offsets (on the host: ``2P`` int32 down through pinned memory, the
   offsets back up);
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

The buffers (plan, scratch, lengths, the code buffers) are kept from one generation to the
next (`_Buffers`, in a [`PlanCache`][gpulab.launch.PlanCache]; `clear_cache()` frees them).

**Not yet on the device between generations:** the population comes from the host and goes
back to it (the loop validates the changed trees with
[`Population.bred`][gpulab.gp.programs.Population.bred], on the host); the prefix sum and the
elites are host work too. Measured on an H100 (`docs/benchmarks/gp-breeding-h100.json`), those
copies and the host work are most of a GPU breeding's time: at 500,000 individuals 9.7 of
10.3 ms, the kernels (the two passes and `plan_lengths`) 0.66 ms.
"""

from __future__ import annotations

import functools
import types

import numpy as np
from numba import cuda, int64, uint64

from gpulab import device
from gpulab.gp import breeding as _cpu
from gpulab.gp import opcodes as oc
from gpulab.launch import PlanCache, ceil_div

# the per-child functions and everything they call, in gpulab.gp.breeding
_OPERATORS = ("_mix", "_seed_stream", "_next", "_below", "_uniform", "_choose", "_grow", "_better", "_tournament",
              "_pick", "_push_children", "_subtree", "_depth_at", "_copy", "_plan_child", "_write_child")


_ENTRIES = ("_plan_child", "_write_child")  # what the kernels call


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
plan_child, write_child = _DEV["_plan_child"], _DEV["_write_child"]
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


SIG_LENGTHS = "void(int64[:, ::1], int32[::1])"


class _Buffers:
    """One generation's device buffers and the pinned host buffers of its copies, kept from one
    generation to the next: while the population size and the limits stay the same, a breeding
    allocates no device memory (the walks' stack is sized for the longest tree the limits allow,
    not the longest present, so the trees' growth never reallocates it) except when the
    population's code outgrows its buffer (which then grows by a quarter more than asked)."""

    def __init__(self, P: int, max_nodes: int, mut_depth: int, width: int, n_elites: int):
        self.plan = cuda.device_array((P, _cpu.NPLAN), np.int64)
        self.grown_at = cuda.device_array(P, np.uint64)  # read only where pass 1 wrote it (mutations)
        self.ops = cuda.device_array((P, mut_depth + 2), np.int32)
        self.left = cuda.device_array((P, mut_depth + 2), np.int32)
        self.st = cuda.device_array((P, width), np.int32)  # width >= the longest tree + 2
        self.grown = cuda.device_array((P, max_nodes + 8), np.uint8)
        self.lens = cuda.device_array(2 * P, np.int32)
        self.src = cuda.device_array(2 * P, np.int64)
        # the inputs, copied in each generation
        self.offsets = cuda.device_array(2 * P + 1, np.int32)
        self.depth = cuda.device_array(2 * P, np.int32)
        self.fitness = cuda.device_array(P, np.float64)
        self.sizes = cuda.device_array(P, np.int32)
        self.elites = cuda.device_array(max(n_elites, 1), np.int64)
        self.out_off = cuda.device_array(2 * P + 1, np.int32)
        # pinned host memory for the offsets' round trip
        self.lens_host = cuda.pinned_array(2 * P, np.int32)
        self.out_off_host = cuda.pinned_array(2 * P + 1, np.int32)
        self.code = self.out = cuda.device_array(1, np.uint8)

    def room(self, name: str, nbytes: int):
        """The code buffer ``name`` (``"code"`` or ``"out"``) with room for ``nbytes``."""
        buf = getattr(self, name)
        if buf.size < nbytes:
            buf = cuda.device_array(nbytes + nbytes // 4, np.uint8)
            setattr(self, name, buf)
        return buf


_BUFFERS = PlanCache(maxsize=1, after_evict=device.release_memory)  # one population size at a time


def clear_cache() -> None:
    """Free the GPU breeding's kept buffers."""
    _BUFFERS.clear()


def breed(code, offsets, tree_depth, fitness, elite, tournament, p_cross, p_mut, max_depth, max_nodes, mut_depth,
          p_leaf, p_func, parsimony, seed, backend: str = "numba", timings: dict | None = None):
    """[`gpulab.gp.breeding.breed`][gpulab.gp.breeding.breed] on the GPU: the same arguments
    (host arrays), the same ``(code, offsets, src)`` (host arrays), bit for bit. ``backend``:
    ``"numba"`` (the kernels above) or ``"cuda-c"`` (their twins in ``breeding.cu``, through
    pycuda; the same buffers, the same launches). ``timings``: a dict that receives each stage's
    seconds (host work, uploads, plan kernel, offsets, write kernel, download), the device
    synchronized after each stage (so only for measuring: it adds the syncs).

    The buffers stay allocated between calls (`_Buffers`); the offsets' round trip moves only
    the ``2P`` tree lengths (`plan_lengths`) down and the offsets up, through pinned host memory."""
    mark = _stage_clock(timings)
    code = np.ascontiguousarray(code, np.uint8)
    offsets = np.ascontiguousarray(offsets, np.int32)
    fitness = np.ascontiguousarray(fitness, np.float64)
    P = (offsets.size - 1) // 2
    sizes, elites, longest = _cpu.sizes_and_elites(offsets, fitness, elite, bool(parsimony))
    width = max(int(max_nodes), int(longest)) + 2  # the walks' stack: any tree the limits allow
    b = _BUFFERS.get((P, int(max_nodes), int(mut_depth), width, elites.size),
                     lambda: _Buffers(P, int(max_nodes), int(mut_depth), width, elites.size))
    mark("host")
    d_code = b.room("code", code.size)
    d_code[:code.size].copy_to_device(code)
    for dst, src in ((b.offsets, offsets), (b.depth, np.ascontiguousarray(tree_depth, np.int32)),
                     (b.fitness, fitness), (b.sizes, sizes), (b.elites[:elites.size], elites)):
        if src.size:
            dst.copy_to_device(src)
    d_off = b.offsets
    inputs = (d_code, d_off, b.depth, b.fitness, b.sizes, b.elites[:elites.size])  # (numba reads the elites' count from its shape)
    blocks = ceil_div(P, THREADS)
    mark("upload")
    if backend == "cuda-c":
        from gpulab import cudac

        i, f = np.int64, np.float64
        cudac.launch(cuda_c_kernel("breed_plan"), (blocks,), (THREADS,), *inputs, i(elites.size), i(P), i(tournament),
                     f(p_cross), f(p_mut), i(max_depth), i(max_nodes), i(mut_depth), f(p_leaf), f(p_func),
                     np.int32(bool(parsimony)), i(seed), b.st, i(width), b.ops, b.left, b.grown, b.plan, b.grown_at)
        cudac.launch(cuda_c_kernel("plan_lengths"), (blocks,), (THREADS,), b.plan, b.lens, i(P))
    else:
        breed_plan[blocks, THREADS](*inputs, int(tournament), float(p_cross), float(p_mut), int(max_depth),
                                    int(max_nodes), int(mut_depth), float(p_leaf), float(p_func), bool(parsimony),
                                    int(seed), b.st, b.ops, b.left, b.grown, b.plan, b.grown_at)
        plan_lengths[blocks, THREADS](b.plan, b.lens)
    mark("plan")
    b.lens.copy_to_host(b.lens_host)
    b.out_off_host[0] = 0
    np.cumsum(b.lens_host, out=b.out_off_host[1:])
    total = int(b.out_off_host[-1])
    out = b.room("out", max(total, 1))
    b.out_off.copy_to_device(b.out_off_host)
    out_off = b.out_off_host.copy()  # the caller's to keep: the pinned buffer is the next generation's
    mark("offsets")
    if backend == "cuda-c":
        cudac.launch(cuda_c_kernel("breed_write"), (blocks,), (THREADS,), d_code, d_off, b.plan, b.grown_at, b.out_off,
                     out, b.src, np.int64(P), np.int64(max_nodes), np.float64(p_leaf), np.int64(mut_depth), b.ops,
                     b.left)
    else:
        breed_write[blocks, THREADS](d_code, d_off, b.plan, b.grown_at, b.out_off, out, b.src, int(max_nodes),
                                     float(p_leaf), b.ops, b.left)
    mark("write")
    result = out[:total].copy_to_host() if total else np.zeros(0, np.uint8), out_off, b.src.copy_to_host()
    mark("download")
    return result


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
CUDA_DEFINES = {"NF": oc.NF, "NB": oc.NB, "OP_AND": oc.OP_AND, "OP_NOT": oc.OP_NOT, "OP_LT": oc.OP_LT}


def cuda_c_kernel(name: str):
    """``breed_plan`` / ``breed_write`` of ``breeding.cu`` (NVRTC, once), as a pycuda function."""
    from gpulab import cudac

    return cudac.kernel("gpulab.gp", CUDA_SOURCE, name, CUDA_DEFINES)
