r"""What keeps a GPU-bred population on the device: the children's offsets (a prefix sum) and
their validation (a typed scan), as numba kernels.

[`gpulab.gp.breeding_gpu.breed_resident`][gpulab.gp.breeding_gpu.breed_resident] uses both,
with the breeding's backend: the numba kernels below, or their line-for-line CUDA C twins in
``resident.cu`` (``backend="cuda-c"``, through pycuda, on the same buffers).

**The offsets.** Pass 1 of the breeding gives each child's two tree lengths (``2P`` int32);
their exclusive prefix sum is where each tree goes. [`exclusive_scan`][gpulab.gp.resident.exclusive_scan]
does it on the device: each block scans ``SCAN_BLOCK`` lengths in shared memory
(Hillis–Steele, ``log2 SCAN_BLOCK`` steps), the blocks' totals are scanned the same way
(recursively, ``⌈log_{SCAN_BLOCK} 2P⌉`` levels: two at 500,000 individuals), and each block
adds the total of the blocks before it. Only the last offset, the code's total length (4 bytes),
goes to the host: it sizes the children's code buffer.

**Validation.** [`check_children`][gpulab.gp.resident.check_children] does on the device what
[`Population.bred`][gpulab.gp.programs.Population.bred] does on the host: thread ``c`` takes
child ``c``'s two trees; a tree the breeding copied byte for byte from a parent (``src[t] >= 0``)
takes the parent tree's stats row (checked: the same length), every other tree is scanned with
the typed stack of [`analyze`][gpulab.gp.programs.analyze] (the same function, compiled again as
a CUDA device function, as the breeding's operators are), and must also be within the run's
``max_nodes`` and ``max_depth``, which the breeding guarantees for every tree it changes. The scan
writes the children's stats (nodes, height, stack depths: the next breeding reads the heights,
the evaluators check the maxima), and each block reduces into a few ``int32`` that are all the
host reads: how many trees are bad, the first bad one, the largest stack, boolean stack, tree
and program. A bad tree is a bug in the breeding, never a user error: the breeding raises a
[`ProgramError`][gpulab.gp.programs.ProgramError] naming the individual, the tree and what is
wrong, never returns it. The scan is not optional: the next generation needs its stats anyway,
so the check costs nothing more than reading the changed trees once.
"""

from __future__ import annotations

import types

import numpy as np
from numba import cuda, int32, int64

from gpulab import device
from gpulab.gp import opcodes as oc
from gpulab.gp import programs as _prog
from gpulab.launch import ceil_div, launch_numba

SCAN_BLOCK = 256  # lengths per block of the scan (a power of two)
CHECK_THREADS = 128  # children per block of the validation

# the int32 summary the validation reduces into (all that crosses to the host)
BAD, FIRST_BAD, MAX_STACK, MAX_BOOLS, MAX_TREE, MAX_PROGRAM = range(6)
NSUMMARY = 6
SUMMARY_START = np.array([0, np.iinfo(np.int32).max, 0, 0, 0, 0], np.int32)
# why a tree is bad (its stats' STAT_ERR, beyond analyze's kinds): kernel-only kinds
COPY_LENGTH, OVER_NODES, OVER_DEPTH = 16, 17, 18


def _device_twin(f):
    """A numba CPU function's Python source compiled again as a CUDA device function."""
    f = f.py_func
    return cuda.jit(device=True)(types.FunctionType(f.__code__, f.__globals__, f.__name__, f.__defaults__,
                                                    f.__closure__))


analyze_tree = _device_twin(_prog._analyze_tree)


# --8<-- [start:scan]
@cuda.jit
def scan_blocks(x, out, sums):
    """Inclusive scan of ``x`` within each block of ``SCAN_BLOCK`` into ``out``; the block's
    total into ``sums[block]``."""
    sm = cuda.shared.array(SCAN_BLOCK, int32)
    t = cuda.threadIdx.x
    i = cuda.blockIdx.x * SCAN_BLOCK + t
    sm[t] = x[i] if i < x.size else 0
    cuda.syncthreads()
    d = 1
    while d < SCAN_BLOCK:
        v = sm[t - d] if t >= d else 0
        cuda.syncthreads()
        sm[t] += v
        cuda.syncthreads()
        d *= 2
    if i < x.size:
        out[i] = sm[t]
    if t == SCAN_BLOCK - 1:
        sums[cuda.blockIdx.x] = sm[t]


@cuda.jit
def add_block_totals(out, scanned_sums):
    """Block ``b > 0`` of ``out`` += the inclusive scan of the block totals at ``b - 1``."""
    i = cuda.grid(1)
    b = cuda.blockIdx.x
    if b > 0 and i < out.size:
        out[i] += scanned_sums[b - 1]
# --8<-- [end:scan]


SIG_SCAN, SIG_ADD = "void(int32[::1], int32[::1], int32[::1])", "void(int32[::1], int32[::1])"  # (the PTX check)
_SCRATCH: dict = {}  # the block totals of each level, by length: kept for every length seen (a few KB each)


def inclusive_scan(x, out, backend: str = "numba") -> None:
    """``out[i] = x[0] + ... + x[i]`` on the device (``int32`` device arrays, ``out`` as long as
    ``x``; ``out`` may be ``x``). ``backend``: ``"numba"`` or ``"cuda-c"`` (``resident.cu``)."""
    n = x.size
    blocks = ceil_div(n, SCAN_BLOCK)
    sums = _SCRATCH.get(n)
    if sums is None:
        sums = _SCRATCH[n] = cuda.device_array(max(blocks, 1), np.int32)
    if backend == "cuda-c":
        from gpulab import cudac

        cudac.launch(cuda_c_kernel("scan_blocks"), (blocks,), (SCAN_BLOCK,), x, out, sums, np.int64(n))
    else:
        launch_numba(scan_blocks, blocks, SCAN_BLOCK, x, out, sums)
    if blocks > 1:
        inclusive_scan(sums, sums, backend)
        if backend == "cuda-c":
            cudac.launch(cuda_c_kernel("add_block_totals"), (blocks,), (SCAN_BLOCK,), out, sums, np.int64(n))
        else:
            launch_numba(add_block_totals, blocks, SCAN_BLOCK, out, sums)


def exclusive_scan(lens, offsets, backend: str = "numba", views=None, wait: bool = True):
    """``offsets[0] = 0``, ``offsets[k + 1] = lens[0] + ... + lens[k]`` on the device; returns the
    total (``offsets[-1]``, the one number copied to the host). ``offsets[0]`` must already be 0
    (it is never written: the breeding's offset buffers are allocated zeroed). ``views``: the
    caller's ``(offsets[1:], offsets[-1:], Readback(1, int32))``, made once (a numba slice and
    a pageable copy cost tens of microseconds of host time each, every generation).
    ``wait=False`` (with ``views``): the total's copy is queued and a function returned that
    waits for it and returns it (the host goes on queueing work meanwhile)."""
    after0, last, back = views if views is not None else (offsets[1:], offsets[lens.size:lens.size + 1], None)
    if lens.size:
        inclusive_scan(lens, after0, backend)
    if not wait and back is not None:
        arrived = back.start(last)
        return lambda: int(arrived()[0])
    total = int((back.fetch(last) if back is not None else last.copy_to_host())[0])
    return total if wait else (lambda: total)


def clear_cache() -> None:
    """Free the scan's kept block totals."""
    _SCRATCH.clear()


# --8<-- [start:check]
@cuda.jit
def check_children(code, offsets, src, parent_stats, max_nodes, max_depth, heights, kinds, stats, sizes, summary):
    """Thread ``c`` = child ``c``: its two trees' stats into ``stats[:, 2c + u]`` (copied from
    the parent tree ``src[t]``, or a typed scan with ``heights[c]``, ``kinds[c]`` as its stack),
    its size into ``sizes[c]``; the block's bad count, first bad tree and maxima into ``summary``
    (atomics in shared memory, then one per block in global memory)."""
    red = cuda.shared.array(NSUMMARY, int32)
    t0 = cuda.threadIdx.x
    for k in range(t0, NSUMMARY, cuda.blockDim.x):
        red[k] = 2147483647 if k == FIRST_BAD else 0  # (the first bad tree: a minimum)
    cuda.syncthreads()
    c = int64(cuda.grid(1))
    if c < sizes.size:
        row = cuda.local.array(6, int32)
        for u in range(2):
            t = 2 * c + u
            a, b = offsets[t], offsets[t + 1]
            n = b - a
            s = src[t]
            if s >= 0:
                for k in range(6):
                    row[k] = parent_stats[k, s]
                if row[0] != n:
                    row[4] = COPY_LENGTH
            elif n > max_nodes or n < 1:
                for k in range(6):
                    row[k] = 0
                row[0] = n
                row[4] = OVER_NODES
            else:
                analyze_tree(code, a, b, kinds[c], heights[c], row)
                if row[4] == 0 and row[1] > max_depth:
                    row[4] = OVER_DEPTH
            for k in range(6):
                stats[k, t] = row[k]
            if row[4] != 0:
                cuda.atomic.add(red, BAD, 1)
                cuda.atomic.min(red, FIRST_BAD, int32(t))
            cuda.atomic.max(red, MAX_STACK, row[2])
            cuda.atomic.max(red, MAX_BOOLS, row[3])
            cuda.atomic.max(red, MAX_TREE, row[0])
        sizes[c] = offsets[2 * c + 2] - offsets[2 * c]
        cuda.atomic.max(red, MAX_PROGRAM, sizes[c])
    cuda.syncthreads()
    if t0 == 0:
        cuda.atomic.add(summary, BAD, red[BAD])
        cuda.atomic.min(summary, FIRST_BAD, red[FIRST_BAD])
        for k in range(MAX_STACK, NSUMMARY):
            cuda.atomic.max(summary, k, red[k])
# --8<-- [end:check]


SIG_CHECK = ("void(uint8[::1], int32[::1], int64[::1], int32[:, ::1], int64, int64, int32[:, ::1], uint8[:, ::1], "
             "int32[:, ::1], int32[::1], int32[::1])")


def validate(code, offsets, src, parent_stats, max_nodes: int, max_depth: int, heights, kinds, stats, sizes,
             summary, summary_back, backend: str = "numba", start=None, wait: bool = True):
    """Launch [`check_children`][gpulab.gp.resident.check_children] and read its summary (the
    one synchronization, through `summary_back`, a [`Readback`][gpulab.device.Readback] of
    `summary`); raise [`ProgramError`][gpulab.gp.programs.ProgramError] for the first
    bad tree. Returns the maxima a [`DevicePopulation`][gpulab.gp.programs.DevicePopulation] carries.
    ``backend``: ``"numba"`` or ``"cuda-c"`` (``resident.cu``). ``start``: `SUMMARY_START` in a
    pinned host array, copied without waiting for the device (else from pageable memory).
    ``wait=False``: the summary's copy is queued and a function returned that waits for it, checks
    it and returns the maxima (the host goes on meanwhile)."""
    P = sizes.size
    if start is not None:
        device.upload(summary, start)
    else:
        summary.copy_to_device(SUMMARY_START)
    limit, blocks = min(int(max_nodes), _prog.MAX_TREE_NODES), ceil_div(P, CHECK_THREADS)
    if backend == "cuda-c":
        from gpulab import cudac

        i = np.int64
        cudac.launch(cuda_c_kernel("check_children"), (blocks,), (CHECK_THREADS,), code, offsets, src, parent_stats,
                     i(limit), i(max_depth), heights, i(heights.shape[1]), kinds, i(kinds.shape[1]), stats, sizes,
                     summary, i(P))
    else:
        launch_numba(check_children, blocks, CHECK_THREADS, code, offsets, src, parent_stats, limit, int(max_depth),
                     heights, kinds, stats, sizes, summary)
    arrived = summary_back.start(summary) if not wait else lambda: summary_back.fetch(summary)

    def maxima() -> dict:
        summary_host = arrived()
        if summary_host[BAD]:
            raise _prog.ProgramError(bad_tree_message(code, offsets, src, stats, int(summary_host[BAD]),
                                                      int(summary_host[FIRST_BAD]), max_nodes, max_depth))
        return {"stack": summary_host[MAX_STACK], "bools": summary_host[MAX_BOOLS],
                "tree_nodes": summary_host[MAX_TREE], "program_nodes": summary_host[MAX_PROGRAM]}

    return maxima() if wait else maxima


def bad_tree_message(code, offsets, src, stats, bad: int, t: int, max_nodes: int, max_depth: int) -> str:
    """The message for the first bad tree ``t`` (its stats row, span and code downloaded)."""
    row = stats[:, t].copy_to_host()
    a, b = (int(x) for x in offsets[t:t + 2].copy_to_host())
    ops = code[a:b].copy_to_host() if b > a else np.zeros(0, np.uint8)
    kind, where = int(row[_prog.STAT_ERR]), f"individual {t // 2}, {_prog.TREES[t % 2]} tree"
    if kind == COPY_LENGTH:
        what = (f"{where}: a copy of parent tree {int(src[t:t + 1].copy_to_host()[0])} has {b - a} nodes, "
                f"its parent {int(row[_prog.STAT_NODES])}")
    elif kind == OVER_NODES:
        what = f"{where}: {b - a} nodes, over max_nodes = {min(int(max_nodes), _prog.MAX_TREE_NODES)}"
    elif kind == OVER_DEPTH:
        what = f"{where}: depth {int(row[_prog.STAT_DEPTH])}, over max_depth = {max_depth}"
    else:
        what = _prog.error_message(row, ops, t // 2, t % 2)
    return f"GPU breeding produced {bad} invalid tree(s) (a bug in the breeding, please report it); the first: {what}"


CUDA_SOURCE = "resident.cu"
CUDA_DEFINES = {"NF": oc.NF, "OP_AND": oc.OP_AND, "OP_NOT": oc.OP_NOT, "OP_LT": oc.OP_LT, "SCAN_BLOCK": SCAN_BLOCK}


def cuda_c_kernel(name: str):
    """A kernel of ``resident.cu`` (NVRTC, once), as a pycuda function."""
    from gpulab import cudac

    return cudac.kernel("gpulab.gp", CUDA_SOURCE, name, CUDA_DEFINES)
