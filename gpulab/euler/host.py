"""Host side of chapter 5: validation, buffers, and the one launch sequence of the whole pipeline.

The sequence is written once, here, and runs on either backend through a *kernel provider*
``K(name, grid, block, *args)`` (as in chapter 4): the numba and CUDA C variants of a step
differ only inside the kernels. An `EulerPlan` owns every buffer a graph of up to
``capacity`` edges needs (allocated once, outside any timed region) and runs what its
variant's [`EulerPolicy`][gpulab.euler.policy.EulerPolicy] names, never branching on a
variant's name:

1. **pairing** — sort the edge ids by source and by destination (chapter 4's radix sort, or a
   one-launch rank sort for short inputs), check in = out at every vertex, pair;
2. **labelling** — the policy's step (`gpulab.euler.labelling`): ``propagate``, ``jump``,
   ``shared``, ``ruling_set`` or the blog's CPU ``partition``; every one labels a cycle with
   its smallest edge id;
3. **circuit graph** — one node per cycle, one link per pair of neighbouring out-slots of a
   vertex in different cycles;
4. **spanning forest** — Borůvka with atomics (weight = slot, unique, so the forest is the
   unique minimum one whatever the schedule); more than one tree = not weakly connected;
5. **splice** — rotate the successors along each run of tree links;
6. **ranking** — order the single cycle from the start edge, the policy's way:
   [`rank_wyllie`][gpulab.euler.host.EulerPlan.rank_wyllie] (pointer jumping),
   [`rank_ruling_set`][gpulab.euler.host.EulerPlan.rank_ruling_set] (splitters walked in registers)
   or [`rank_sublists`][gpulab.euler.host.EulerPlan.rank_sublists] (the labelling's splitters and
   sublists, walked once).

The host waits for the device only where it must decide something (how many splitters, is a
labelling round needed, did the pointer jumping converge, how many links, how many trees):
small counters live in one int32 array that kernels reset in stream order, and one copy of it
answers every question of that moment. Rounds whose count can be proven (list ranking:
ceil(log2 n)) run without any check; rounds that stop on convergence are launched in batches
whose every round sets its own flag, read once per batch. Nothing of size E crosses the bus
except in the ``partition`` variant, whose point is exactly that.
"""

from __future__ import annotations

import contextlib
import time

import numpy as np

from gpulab import device
from gpulab.errors import DtypeError, LimitError, ShapeError
from gpulab.euler.reference import NotEulerian
from gpulab.launch import KernelSource, ceil_div, u32
from gpulab.launch import i32 as _i

PACKAGE = "gpulab.euler"
SOURCE = "kernels.cu"
INT32_MAX = 2**31 - 1
MAX_VERTEX = 2**31 - 2  # lower_bound(v + 1) must not overflow
MAX_GRID = 1 << 16
ID_DTYPES = (np.dtype(np.int32), np.dtype(np.int64))
STAGES = ("validate", "pairing", "labelling", "circuit_graph", "spanning_forest", "splice", "ranking")

# --8<-- [start:slots]
# Buffers of one stage share memory with the dead buffers of earlier stages. Scratch slots
# D0..D3 hold 8 bytes per edge: a name takes a whole one as a uint64 array ("w": the packed
# words of pointer jumping) or one half as an int32 array (0 / 1); S0 holds 4 bytes per edge.
# Kept for the whole run: src/dst (copies, when needed), ssrc, out_order, in_order, succ,
# label, out, tree (uint8).
SLOTS = {
    # pairing ("pkeys": the sorted keys of `permute_by_sort`)
    "sdst": ("D0", 0), "pkeys": ("D1", 0),
    # labelling (jump, shared, ruling set) and ranking (Wyllie, ruling set)
    "W0": ("D0", "w"), "W1": ("D1", "w"), "spl": ("D2", 0), "clab": ("D2", 1), "sid": ("D2", 1),
    # the shared contraction
    "xit": ("D2", 0), "mn": ("D2", 1), "cid": ("D3", 0), "exits": ("D3", 1),
    # circuit graph and spanning forest
    "nodes": ("D0", 0), "comp": ("D0", 1), "best": ("D1", 0), "lu": ("D1", 1), "lv": ("D2", 0),
    "lp": ("D2", 1), "lu2": ("D3", 0), "lv2": ("D3", 1), "lp2": ("S0", 0),
    # ranking from the labelling's sublists (W0 and W1 hold the pieces' words)
    "bidx": ("D2", 0),
    # checks
    "vpos": ("D0", 0),
}
SLOT_WIDTH = {"D0": 2, "D1": 2, "D2": 2, "D3": 2, "S0": 1}  # int32 words per edge

# The plan's int32 counters (one array, read back whole, reset by kernels in stream order).
CTR_SIZE = 128
C_BAD, C_FIRST = 8, 9            # pairing: positions where in != out, the first one
C_TREES = 10                     # 10, 11, 12: trees, smallest and largest root
C_NODES, C_LINKS = 13, 14        # nodes and links of the circuit graph
C_CUTS = 4                       # ranking from sublists: cuts (4), the head's piece (5)
ROUND = 16                       # 16..47: per-round counts (labelling, Borůvka)
FLAGS = 48                       # 48..111: per-round "changed" flags of a batch of rounds
MAX_FLAGS = 64
SHORTCUTS = 4                    # Borůvka: pointer-jumping rounds launched before a check
# --8<-- [end:slots]


# ----------------------------------------------------------------------------- kernels


def numba_kernel(name: str, p: dict):
    """The numba kernel ``name``: built for its compile-time parameter where
    `kernels_numba.TEMPLATED` lists it, else the module's kernel of that name."""
    from gpulab.euler import kernels_numba as kn

    templated = kn.TEMPLATED.get(name)
    if templated is not None:
        build, param, _ = templated
        return build(p[param])
    return getattr(kn, name)


# The -D macros of the CUDA C source (one module serves every variant of a BLOCK and TILE)
KERNELS = KernelSource(PACKAGE, numba_kernel, defines=("BLOCK", "TILE"), fixed_defines={"TILE": 1024},
                       source=SOURCE)
cuda_defines = KERNELS.cuda_defines
provider = KERNELS.provider


def launch_shape(n: int, block: int, sim: bool):
    """(grid, block) of an element-wise launch over n items (grid-stride loops)."""
    if sim:  # the simulator pays per thread: one block, the loop does the rest
        return (1,), (block,)
    return (max(1, min(ceil_div(n, block), MAX_GRID)),), (block,)


# ----------------------------------------------------------------------------- validation


# --8<-- [start:validate]
def check_edges(src, dst) -> int:
    """Shapes and dtypes of the edge arrays (read from the array interfaces, host or device);
    returns the number of edges. Values are checked on the device (`EulerPlan.load`)."""
    from gpulab.arrays import check_array

    s_shape, s_dt = check_array(src, "src", ndim=1)
    d_shape, d_dt = check_array(dst, "dst", ndim=1)
    if s_shape != d_shape:
        raise ShapeError(f"src has {s_shape[0]} edges but dst has {d_shape[0]}: one (src, dst) pair per edge")
    for name, dt in (("src", s_dt), ("dst", d_dt)):
        if dt not in ID_DTYPES:
            raise DtypeError(f"{name} has dtype {dt}; vertex ids must be int32 or int64")
    n = s_shape[0]
    if n > INT32_MAX - 1:
        raise LimitError(f"{n} edges: edge ids are int32 on the GPU, so at most {INT32_MAX - 1} edges "
                         "(one id is kept for the extra edge of an Euler path)")
    return n
# --8<-- [end:validate]


# ----------------------------------------------------------------------------- the plan


class EulerPlan:
    """Buffers and launches of one variant for graphs of up to ``capacity`` edges (or darts)."""

    def __init__(self, policy, backend: str, capacity: int, params: dict):
        from numba import cuda

        self.policy, self.backend, self.capacity = policy, backend, max(int(capacity), 1)
        self.params = dict(params)
        if self.params.get("GROWTH", 2) < 2:
            raise LimitError(f"GROWTH = {self.params['GROWTH']}: the splitters must get denser each round (>= 2)")
        self.sim = device.on_simulator()
        block = int(self.params.get("BLOCK", 32))
        if not self.sim and (block < 32 or block % 32):
            raise LimitError(f"BLOCK = {block}: a multiple of 32 on a GPU (the warp appends name all 32 lanes)")
        self.K = provider(backend, self.params)
        self._bufs: dict = {}
        self._raw: dict = {}
        self._loaded: set = set()  # ids of the arrays `load` returned in this call
        self._views: dict = {}  # (slot, part) -> (the slot's array, its view): made once per allocation
        self._u32s: dict = {}  # id(array) -> (array, length, its uint32 view): the sorts' arguments (`u32`)
        self._sorts: dict = {}
        # zeroed once: `read` copies every counter, and a counter no kernel wrote reads as 0, not
        # as whatever the allocation held (compute-sanitizer's initcheck flagged that copy)
        self.ctr = cuda.to_device(np.zeros(CTR_SIZE, np.int32))
        self.flags = self.ctr[FLAGS:FLAGS + MAX_FLAGS]
        self.rounds_ctr = self.ctr[ROUND:FLAGS]
        self.stats64 = cuda.to_device(np.zeros(4, np.int64))
        self.counters = np.zeros(CTR_SIZE, np.int32)
        self.vmax = None  # the largest vertex id of the loaded edges (the sorts' key bound)
        self.stats: dict = {}
        self.syncs = 0
        self.instrument = False
        self.on_stage = None  # called with each stage's name as it begins, None after a launch (a progress bar)
        self.stage_ms: dict = {}
        self._marks: list = []
        self.walked = None  # (succ, n, splitters) when the labelling kept its sublists (SUBLISTS)

    # --------------------------------------------------------------- buffers and launch shapes

    def buf(self, name: str, dtype=np.int32, size: int | None = None):
        """A named device buffer of ``capacity`` (or ``size``) elements, allocated on first use;
        names of different stages share a scratch slot (`SLOTS`)."""
        from numba import cuda

        want = max(int(size if size is not None else self.capacity), 1)
        slot = SLOTS.get(name)
        if slot is None:
            key = (name, np.dtype(dtype).str)
            b = self._bufs.get(key)
            if b is None or b.size < want:
                b = self._bufs[key] = cuda.device_array(want, dtype)
            return b
        sname, part = slot
        width = SLOT_WIDTH[sname]
        raw = self._raw.get(sname)
        if raw is None or raw.size < width * want:
            for k in [k for k in self._views if k[0] == sname]:  # (the old array's views: let it go)
                del self._views[k]
            raw = self._raw[sname] = cuda.device_array(width * want, np.int32)
        # the view made last for this slot and part, while the slot keeps its array: a numba view
        # is a new array object, and a deep 42M-edge circuit made 33 of them a call (14 ms of
        # host time in 5 calls under cProfile, CUDA C, on an H200 host), in both backends
        kept = self._views.get(slot)
        if kept is not None and kept[0] is raw:
            return kept[1]
        cap = raw.size // width
        view = raw.view(np.uint64) if part == "w" else raw[part * cap:(part + 1) * cap]
        self._views[slot] = (raw, view)
        return view

    def u32(self, a, n: int | None = None):
        """``a[:n]`` (``a`` whole for ``None``) as uint32, the type the sorts take: the view made
        once and kept while ``a`` is the same array object — the plan's buffers (kept by `buf`)
        and, within one call, the loaded edges (`load` makes their views before it waits for the
        device, so that a numba view is not made while the GPU waits for the first sort). The
        loaded edges may be the caller's arrays: the call forgets them at its end."""
        kept = self._u32s.get(id(a))
        if kept is not None and kept[0] is a and kept[1] == n:
            return kept[2]
        v = (a if n is None or n == a.shape[0] else a[:n]).view(np.uint32)
        if len(self._u32s) > 32:  # (buffers replaced since: let their arrays go)
            self._u32s.clear()
        self._u32s[id(a)] = (a, n, v)
        return v

    def hand_over(self, r):
        """A device array holding the result ``r`` (a prefix of one of the plan's own buffers, as
        `directed` returns it) that the caller may keep: that buffer itself, the plan taking a new
        one of the same size in its place, so the next call cannot overwrite the caller's result
        and no copy of it is made. The new buffer is allocated now, at the end of the call, while
        the GPU still runs the call's last kernels (the next call would allocate it where the GPU
        waits for the host). Copied instead: a result in a shared slot, an empty one, and one much
        shorter than its buffer (an undirected graph's circuit fills half of a buffer sized for its
        darts: handed over, it would keep twice its memory alive)."""
        from numba import cuda

        from gpulab.arrays import span

        if r.size:
            ptr = span(r)[0]
            for key, b in self._bufs.items():
                if span(b)[0] == ptr and b.dtype == r.dtype and r.size <= b.size <= r.size + max(64, r.size // 16):
                    self._bufs[key] = cuda.device_array(b.size, b.dtype)
                    return b[: r.size]
        c = cuda.device_array(r.size, r.dtype)
        if r.size:
            c.copy_to_device(r)
        return c

    def nbytes(self) -> int:
        """Device memory this plan holds now (its buffers and its sort plans' key/value buffers)."""
        total = sum(b.size * b.dtype.itemsize for b in list(self._bufs.values()) + list(self._raw.values()))
        for sp in self._sorts.values():
            total += sum(getattr(a, "size", 0) * 4 for a in getattr(sp, "keys", []) + getattr(sp, "vals", []))
        return total

    def buffers(self) -> dict:
        """{name or slot: (elements, dtype)} of the buffers allocated so far (memory accounting)."""
        out = {k[0]: (b.size, k[1]) for k, b in self._bufs.items()}
        out.update({k: (b.size, "<i4") for k, b in self._raw.items()})
        return out

    def ew(self, n: int):
        """(grid, block) of an element-wise launch over n items (`launch_shape`)."""
        return launch_shape(n, self.params["BLOCK"], self.sim)

    def launch(self, name, n, *args):
        g, b = self.ew(n)
        self.K(name, g, b, *args)
        if self.on_stage is not None:
            self.on_stage(None)  # a tick: the bar's clock moves within a long stage

    # --------------------------------------------------------------- counters

    def preset(self, i0: int, *values):
        """ctr[i0:i0 + 4] = values (zeros after them), by a kernel: no wait for the device."""
        v = list(values) + [0] * (4 - len(values))
        self.K("preset_i32", (1,), (32,), self.ctr, _i(i0), *(_i(x) for x in v))

    def set_ctr(self, *values):
        """ctr[0:8] = values (zeros after them)."""
        v = list(values) + [0] * (8 - len(values))
        self.preset(0, *v[:4])
        self.preset(4, *v[4:8])

    def read(self) -> np.ndarray:
        """Every counter, in one copy: the host waits for the device here (and only here)."""
        self.syncs += 1
        self.counters = self.ctr.copy_to_host()
        return self.counters

    def get_ctr(self, k: int = 8) -> np.ndarray:
        return self.read()[:k]

    def zero_flags(self):
        self.launch("fill_i32", MAX_FLAGS, self.flags, _i(MAX_FLAGS), _i(0))

    def read_stats64(self) -> np.ndarray:
        self.syncs += 1
        return self.stats64.copy_to_host()

    # --------------------------------------------------------------- stage timing

    def mark(self, stage: str):
        """Close the previous stage and open ``stage`` (timed only when instrumented)."""
        if self.on_stage is not None:
            self.on_stage(stage)
        if not self.instrument:
            return
        from numba import cuda

        if self.sim:
            cuda.synchronize()
            self._marks.append((stage, time.perf_counter()))
        else:
            ev = cuda.event()
            ev.record()
            self._marks.append((stage, ev))

    def _close_marks(self):
        self._forget_loaded()
        self.stats["host_syncs"] = self.syncs
        if not self.instrument or not self._marks:
            return
        from numba import cuda

        self.mark("end")
        cuda.synchronize()
        ms: dict = {}
        for (stage, a), (_, b) in zip(self._marks[:-1], self._marks[1:]):
            dt = (b - a) * 1e3 if self.sim else cuda.event_elapsed_time(a, b)
            ms[stage] = ms.get(stage, 0.0) + dt
        self.stage_ms = ms
        self._marks = []

    def _forget_loaded(self):
        """Drop the views of the call's loaded edges (`u32`): they may be the caller's arrays,
        which the plan must not keep alive after the call."""
        for k in [k for k, (a, _, _) in self._u32s.items() if id(a) in self._loaded]:
            del self._u32s[k]
        self._loaded = set()

    def _begin(self):
        self._forget_loaded()  # (a call that raised did not get to `_close_marks`)
        self.walked = None
        self._marks = []
        self.syncs = 0
        self.stats = {}

    # --------------------------------------------------------------- step 0: load the edges

    def load(self, src, dst, n: int, extra: int = 0):
        """Check every id on the device (non-negative, at most 2^31 - 2) and return int32 edge
        arrays: the inputs themselves when they are int32 and need no room for ``extra`` edges
        (the pipeline only reads them), else copies in the plan (int64 narrowed to int32).
        Both arrays are checked by one reduction each and read back together; the largest id
        is kept as the sorts' key bound."""
        self._begin()
        self.mark("validate")
        out = []
        big = 2**63 - 1
        if n:
            self.K("preset_i64", (1,), (32,), self.stats64, *(np.int64(v) for v in (big, -big, big, -big)))
        for k, (name, a) in enumerate((("src", src), ("dst", dst))):
            in_place = extra == 0 and np.dtype(a.dtype) == np.int32
            b = a if in_place else self.buf(name, size=n + extra)
            if n:
                kname = "to_i32_i64" if np.dtype(a.dtype) == np.int64 else "to_i32_i32"
                g, blk = self.ew(n)
                if not self.sim:
                    g = (min(g[0], 1024),)  # a reduction: few blocks, long grid-stride loops
                self.K(kname, g, blk, a, _i(n), b, self.stats64, _i(0 if in_place else 1), _i(k))
            out.append(b)
        self.vmax = None
        if n:
            for b in out:  # the sorts' keys, made while the GPU checks the ids
                self._loaded.add(id(b))
                self.u32(b, n)
            st = [int(x) for x in self.read_stats64()]
            for k, name in enumerate(("src", "dst")):
                lo, hi = st[2 * k], st[2 * k + 1]
                if lo < 0:
                    raise ShapeError(f"{name} contains the negative vertex id {lo}; vertex ids must be >= 0")
                if hi > MAX_VERTEX:
                    raise LimitError(f"{name} contains the vertex id {hi}; vertex ids are int32 on the GPU "
                                     f"(at most {MAX_VERTEX})")
            self.vmax = max(st[1], st[3])
        return out

    def put(self, arr, index: int, value: int):
        """One int into a device buffer (the extra edge of an Euler path)."""
        self.syncs += 1
        arr[index:index + 1].copy_to_device(np.array([value], np.int32))

    # --------------------------------------------------------------- step 1: pairing

    def sort_plan(self, n: int):
        """Chapter 4's key-value sort plan for n keys (one per size, kept): the variant the
        parameters name (`SORT`, `SORT_PARAMS`), or the size's default past that variant's limit."""
        sp = self._sorts.get(n)
        if sp is None:
            from gpulab import radix

            variant, params = self.params["SORT"], self.params.get("SORT_PARAMS")
            limit = radix.key_limit(variant, self.backend)
            if limit is not None and n > limit:  # (onesweep: 2^30 keys) the sort radix picks for n keys
                variant, params = radix.default_variant(n, self.backend), None
            sp = self._sorts[n] = radix.plan(n, pairs=True, variant=variant, backend=self.backend, params=params)
        return sp

    def sort(self, keys, n: int, out_keys, out_perm):
        """Stable argsort of the first n int32 keys of ``keys`` into (out_keys, out_perm)."""
        if n <= self.params.get("SMALL_SORT", 0):
            self.launch("small_sort", n, keys, _i(n), out_keys, out_perm)
            return
        sp = self.sort_plan(n)
        if self.vmax is None:
            self.syncs += 1  # the sort finds the largest key itself
        # the ids were checked >= 0 (an unsigned view sorts them right), the last pass writes
        # straight into the plan's buffers
        sp.sort(self.u32(keys, n), iota=True, max_key=self.vmax, out=(self.u32(out_keys), self.u32(out_perm)))

    # --8<-- [start:pairing]
    def pairing(self, src, dst, n: int, check: bool = True):
        """Sort by source and by destination, pair: succ = the successor permutation. With
        ``check``, wait for and return (positions where in != out, the first one); otherwise
        the count stays on the device, read later with the spanning forest's counters."""
        self.mark("pairing")
        ssrc, out_order = self.buf("ssrc"), self.buf("out_order")
        sdst, in_order = self.buf("sdst"), self.buf("in_order")
        self.sort(src, n, ssrc, out_order)
        self.sort(dst, n, sdst, in_order)
        self.preset(C_BAD, 0, INT32_MAX)
        succ = self.buf("succ")
        if self.scatter_by_sort(n):  # the check alone (an empty slice), then succ by a sort
            self.launch("pair", n, in_order, out_order, ssrc, sdst, _i(n), succ, self.ctr, _i(C_BAD), _i(0), _i(0))
            self.permute_by_sort(in_order, out_order, n, succ)
        else:
            self.launch_sliced("pair", n, n, in_order, out_order, ssrc, sdst, _i(n), succ, self.ctr, _i(C_BAD))
        if not check:
            return None
        h = self.read()
        return int(h[C_BAD]), int(h[C_FIRST])
    # --8<-- [end:pairing]

    def scatter_slices(self, n: int) -> list[int]:
        """Bounds of the slices in which a scatter into an int32 array of ``n`` writes, one launch
        each (the pairing's successors, and an undirected graph's dart successors and
        orientation): slices of at most SCATTER_BYTES (0: half the L2), whose lines stay in L2
        while the scattered writes fill them (rather than, likely, leaving for memory partly
        written). Each launch reads the inputs again, so beyond SCATTER_SLICES slices it is one
        launch: measured on an H100 for the 2·42M dart successors, 6.1 ms in one launch, 3.0 in
        14 slices, 3.6 in 21, 4.4 in 28, so 16 is a cautious cap, not a measured break-even (the
        break-even, somewhere past 28 slices, and graphs that need more than 16 slices were not
        measured). At most ``n`` slices, none empty (a check in the slice at 0 sees every
        element)."""
        r = self._slices_needed(n)
        if r > self.params.get("SCATTER_SLICES", 16):
            r = 1
        r = min(r, max(n, 1))  # no empty slice: a check runs in the one that starts at 0
        return [n * k // r for k in range(r + 1)]

    def _slices_needed(self, n: int) -> int:
        size = self.params.get("SCATTER_BYTES") or device.l2_bytes() // 2
        return max(1, -(-4 * n // size))

    def scatter_by_sort(self, n: int) -> bool:
        """Whether the permutation scatter of n elements (`succ[in_order[p]] = out_order[p]`)
        is a sort rather than a scatter: where it would need more than SCATTER_SLICES slices,
        so that `scatter_slices` falls back to one launch whose writes land anywhere in the
        array. At 2^30 edges on an H200 that one launch took 71.7 ms, the argsort of the same
        2^30 ids 37.7 (`scripts/euler_pairing_probe.py --edges 1073741824`)."""
        return n > max(self.params.get("SMALL_SORT", 0), 1) and \
            self._slices_needed(n) > self.params.get("SCATTER_SLICES", 16)

    def permute_by_sort(self, in_order, out_order, n: int, succ):
        """succ[in_order[p]] = out_order[p] for p < n, by chapter 4's key-value sort: the pairs
        (in_order[p], out_order[p]) sorted by their first, a permutation of 0..n-1, leave at
        place j the value whose key is j. Every pass reads and writes whole tiles, where the
        scatter's writes are single words anywhere in 4·n bytes. The sorted keys go to a scratch
        slot ("pkeys", dead after the pairing). The directed pairing reuses its argsorts' plan;
        the undirected pipeline's read-off pairing makes a plan for n keys beside its 2n half-edges'
        one (16·n bytes more), only at sizes that take this path."""
        sp = self.sort_plan(n)
        sp.sort(in_order[:n].view(np.uint32), out_order[:n].view(np.uint32), max_key=n - 1,
                out=(self.buf("pkeys")[:n].view(np.uint32), succ[:n].view(np.uint32)))

    def launch_sliced(self, name: str, n: int, size: int, *args):
        """Launch kernel ``name`` over ``n`` items once per slice of the int32 array of ``size``
        elements it scatters into (`scatter_slices`), in order, with the slice's bounds
        ``lo, hi`` after ``args``."""
        b = self.scatter_slices(size)
        for lo, hi in zip(b[:-1], b[1:]):
            self.launch(name, n, *args, _i(lo), _i(hi))

    def imbalance(self, n: int) -> dict:
        """Which vertices are unbalanced (after `pairing`)."""
        self.set_ctr(0, 0, INT32_MAX, 0, INT32_MAX, INT32_MAX)
        ssrc, sdst = self.buf("ssrc"), self.buf("sdst")
        self.launch("imbalance", 2 * n, ssrc, sdst, _i(n), self.ctr)
        c = self.get_ctr(6)
        info = dict(unbalanced=int(c[0]), plus=int(c[1]), start=int(c[2]), minus=int(c[3]), end=int(c[4]),
                    first=int(c[5]))
        self.K("degrees_of", (1,), (1,), ssrc, sdst, _i(n), _i(info["first"]), self.ctr)
        d = self.get_ctr(2)
        info["first_in"], info["first_out"] = int(d[0]), int(d[1])
        return info

    def first_out_edge(self, vertex: int, n: int) -> int:
        """The smallest-id out-edge of ``vertex`` (NONE if it has none)."""
        if vertex < 0 or vertex > MAX_VERTEX:
            return -1
        self.K("find_first", (1,), (1,), self.buf("ssrc"), self.buf("out_order"), _i(n), _i(vertex), self.ctr)
        return int(self.get_ctr(1)[0])

    # --------------------------------------------------------------- step 2: labelling

    def label_cycles(self, succ, n: int):
        """Step 2 with this plan's labelling (its policy's, `gpulab.euler.labelling`):
        label[e] = smallest edge id of e's cycle."""
        self.mark("labelling")
        label = self.buf("label")
        self.policy.labelling(self, succ, n, label)
        return label

    # --------------------------------------------------------------- steps 3 and 4: circuit graph and spanning forest

    # --8<-- [start:forest]
    def spanning_forest(self, label, n: int):
        """Links between cycles, then Borůvka: every component takes its lightest link (an
        atomicMin on its root), hooks along it, and pointer jumping flattens the hooks; links
        inside a component are dropped each round. Marks the tree links in ``tree``; returns
        the number of trees (1 = the edges are weakly connected) and two roots.
        The first round's minima are taken while the links are found (every cycle is its own
        component then); one wait for the graph's size, then one per round, and it stops as
        soon as one tree is left."""
        from gpulab.euler.kernels_numba import LINK_ITEMS  # (kernels.cu's macro of the same name)

        self.mark("circuit_graph")
        nodes, comp, best = self.buf("nodes"), self.buf("comp"), self.buf("best")
        self.preset(C_TREES, 0, INT32_MAX, -1, 0)  # also C_NODES = 0
        self.preset(C_LINKS, 0)
        self.launch("list_nodes", n, label, _i(n), nodes, comp, best, self.ctr, _i(C_NODES))
        links = [self.buf(x) for x in ("lu", "lv", "lp")]
        # one thread per LINK_ITEMS out-slots here, and links in min_links
        self.launch("find_links", ceil_div(n, LINK_ITEMS), self.buf("ssrc"), self.buf("out_order"), label, _i(n),
                    *links, best, self.ctr, _i(C_LINKS))
        h = self.read()
        c, m = int(h[C_NODES]), int(h[C_LINKS])
        self.stats.update(cycles=c, links=m)
        self.mark("spanning_forest")
        tree = self.buf("tree", np.uint8)
        self.launch("fill_u8", n, tree, _i(n), _i(0))
        other = [self.buf(x) for x in ("lu2", "lv2", "lp2")]
        rounds, h = 0, None
        while m:
            if rounds == 0:  # the minima are in best already, the links are root pairs
                self.launch("hook", m, *links, self.ctr, _i(C_LINKS), best, comp, tree)
                survivors = m
            else:
                self.launch("reset_best", c, nodes, _i(c), best)
                self.preset(ROUND + rounds, 0)
                self.launch("min_links", ceil_div(m, LINK_ITEMS), *links, _i(m), comp, best, *other, self.ctr,
                            _i(ROUND + rounds))
                self.launch("hook", m, *other, self.ctr, _i(ROUND + rounds), best, comp, tree)
                links, other = other, links
            h = self._flatten(nodes, c, comp)
            if rounds:
                survivors = int(h[ROUND + rounds])
            if survivors == 0:
                break
            rounds += 1
            m = survivors
            if h[C_TREES] == 1:
                break
        if h is None:  # no links at all: every cycle is a tree
            self.preset(C_TREES, 0, INT32_MAX, -1, c)
            self.launch("count_roots", c, nodes, _i(c), comp, self.ctr, _i(C_TREES))
            h = self.read()
        self.stats["forest_rounds"] = rounds
        return int(h[C_TREES]), int(h[C_TREES + 1]), int(h[C_TREES + 2])

    def _flatten(self, nodes, c, comp):
        """Pointer jumping on the hooks, SHORTCUTS rounds per check, then count the roots."""
        self.zero_flags()
        k = 0
        while True:
            if k + SHORTCUTS > MAX_FLAGS:
                self.zero_flags()
                k = 0
            for j in range(k, k + SHORTCUTS):
                self.launch("shortcut", c, nodes, _i(c), comp, self.ctr, _i(FLAGS + j))
            k += SHORTCUTS
            self.preset(C_TREES, 0, INT32_MAX, -1, c)
            self.launch("count_roots", c, nodes, _i(c), comp, self.ctr, _i(C_TREES))
            h = self.read()
            if h[FLAGS + k - 1] == 0:  # the last round moved nothing: every node points at its root
                return h
    # --8<-- [end:forest]

    # --------------------------------------------------------------- step 5: splice

    def splice(self, succ, n: int):
        self.mark("splice")
        self.launch("splice", n, self.buf("tree", np.uint8), self.buf("in_order"), self.buf("out_order"), _i(n), succ)

    # --------------------------------------------------------------- step 6: ranking

    # --8<-- [start:ranking]
    def rank(self, succ, n: int, head: int, out):
        """Write the single cycle of ``succ`` into ``out``, starting with edge ``head`` (the
        policy's ranking: `rank_wyllie`, `rank_ruling_set` or `rank_sublists`)."""
        self.mark("ranking")
        self.policy.ranking(self, succ, n, head, out)

    def wyllie(self, m: int):
        """Wyllie's rounds on the list in W0[:m]: exactly ceil(log2 m) of them, with no check
        (a list of m elements needs no more, and the rounds after the end change nothing)."""
        cur, other = self.buf("W0"), self.buf("W1")
        rounds = ceil_log2(m)
        for _ in range(rounds):
            self.launch("wyllie_round", m, cur, other, _i(m))
            cur, other = other, cur
        return cur, rounds

    def rank_wyllie(self, succ, n: int, head: int, out):
        """Step 6 by Wyllie's pointer jumping over all n edges: ceil(log2 n) rounds."""
        self.launch("wyllie_init", n, succ, _i(n), _i(head), self.buf("W0"))
        res, rounds = self.wyllie(n)
        self.launch("scatter_rank", n, res, _i(n), out)
        self.stats["rank_rounds"] = rounds

    def rank_ruling_set(self, succ, n: int, head: int, out):
        """Step 6 by splitters (one per RANK_SPACING edges, and the head): each walks its sublist in
        registers, Wyllie ranks the short list of splitters, one pass writes every edge's place."""
        sid, spl = self.buf("sid"), self.buf("spl")
        spacing = self.params["RANK_SPACING"]
        thresh = u32(0xFFFFFFFF if spacing <= 1 else (1 << 32) // spacing - 1)
        rseed = u32(int(self.params.get("SEED", 0x5EED)) ^ 0xA5A5)
        self.preset(0, 1)
        self.launch("pick_rank_splitters", n, _i(n), thresh, rseed, _i(head), sid, spl, self.ctr)
        s = int(self.read()[0])
        self.launch("walk_rank", s, succ, sid, spl, _i(s), thresh, rseed, _i(head), self.buf("W0"))
        res, rounds = self.wyllie(s)
        self.launch("write_ranked", s, succ, spl, _i(s), thresh, rseed, _i(head), res, _i(n), out)
        self.stats.update(rank_splitters=s, rank_rounds=rounds)
    # --8<-- [end:ranking]

    # --8<-- [start:rank_sublists]
    def sublists_room(self, n: int) -> int:
        """The most labelling splitters the ranking reuses (`rank_sublists`), 2·E / RANK_SPACING
        and one: the labelling keeps its sublists only while it has no more than this many."""
        return 2 * n // max(int(self.params.get("RANK_SPACING", 64)), 1) + 1

    def rank_sublists(self, succ, n: int, head: int, out):
        """Step 6 with one walk instead of two: the labelling's splitters (``SUBLISTS``) are the
        ranking's, and their sublists' lengths and successors are known already — except where
        the splice changed a successor. Each such in-edge ends a piece (its sublist is measured
        again) and its old successor starts one; the head starts one too. The ends are marked in
        ``succ`` itself (its top bit), so the walks read nothing more than before; Wyllie ranks
        the pieces, and one walk writes them. Falls back to `rank_ruling_set` when the labels came
        from another permutation (an undirected graph's darts), or when the labelling needed so
        many splitters (short cycles) that ranking them would cost more than splitters of its own
        (more than [`sublists_room`][gpulab.euler.host.EulerPlan.sublists_room]: 2·E / RANK_SPACING
        and one; the labelling then kept no sublists, and `walked` is None)."""
        walked = self.walked
        if walked is None or walked[0] is not succ or walked[1] != n:
            return self.rank_ruling_set(succ, n, head, out)
        s = walked[2]
        own, spl, sublist = self.buf("owner"), self.buf("lspl", size=s), self.buf("sublist", np.uint64, size=s)
        dirty, bidx = self.buf("dirty", np.uint8, size=s), self.buf("bidx")
        cap = min(n, 2 * int(self.stats.get("cycles", n)) + 32) + 1  # a splice changes < 2 in-edges per cycle; the head
        cut_y = self.buf("cut_y", size=cap)
        self.launch("fill_u8", s, dirty, _i(s), _i(0))
        self.launch("mark_ends", s, self.buf("last_edge", size=s), _i(s), succ)
        self.preset(C_CUTS, 0, -1)
        self.launch("list_cuts", n, self.buf("tree", np.uint8), self.buf("in_order"), self.buf("out_order"), succ,
                    own, spl, _i(n), _i(s), _i(head), dirty, cut_y, bidx, self.ctr, _i(C_CUTS))
        self.K("head_boundary", (1,), (1,), _i(head), own, spl, _i(s), dirty, cut_y, self.ctr, _i(C_CUTS))
        h = self.read()
        c = int(h[C_CUTS])
        total = s + c + int(h[C_CUTS + 1] == s + c)  # the head's own piece, where it needed one: at most n pieces
        self.launch("measure", total, succ, own, spl, sublist, dirty, cut_y, bidx, _i(s), _i(total), _i(head),
                    self.ctr, _i(C_CUTS), self.buf("W0"))
        res, rounds = self.wyllie(total)
        self.launch("write_pieces", total, succ, spl, cut_y, _i(s), _i(total), _i(head), res, _i(n), out)
        self.stats.update(rank_pieces=total, rank_cuts=c, rank_rounds=rounds)
    # --8<-- [end:rank_sublists]

    # --------------------------------------------------------------- the whole directed pipeline

    # --8<-- [start:directed]
    def directed(self, src, dst, n: int, *, source=None, path: bool = False):
        """Euler circuit (or path) of the n edges (src, dst) already in plan buffers. Returns
        ``(out, m)``: the edge ids in ``out[:m]``; raises `NotEulerian` with the reason."""
        out = self.buf("out")
        if n == 0:
            if source is not None:
                raise NotEulerian(f"source vertex {source} has no edges (the graph is empty)")
            return out, 0
        virtual = None
        if not path:  # in != out is read later, with the forest's counters: no wait here
            self.pairing(src, dst, n, check=False)
        else:
            bad, _ = self.pairing(src, dst, n)
            if bad:
                info = self.imbalance(n)
                if not (info["unbalanced"] == 2 and info["plus"] == 1 and info["minus"] == 1):
                    raise NotEulerian(_imbalance_message(info, path=True))
                s, t = info["start"], info["end"]
                if source is not None and source != s:
                    raise NotEulerian(f"an Euler path of this graph must start at vertex {s} (out = in + 1), "
                                      f"not at source {source}")
                virtual = n  # the extra edge t -> s closes the path into a circuit
                self.put(src, n, t)
                self.put(dst, n, s)
                n += 1
                self.pairing(src, dst, n, check=False)
        head = self.source_head(source if virtual is None else None, n)
        label = self.label_cycles(self.buf("succ"), n)

        def balanced():  # in != out was counted by the pairing and read with the forest's counters
            if self.counters[C_BAD]:
                self.pairing(src, dst, n, check=False)  # the forest reused sdst's memory: sort again
                raise NotEulerian(_imbalance_message(self.imbalance(n), path=False))

        return self.join_and_rank(src, n, label, head=head, virtual=virtual, check=balanced)

    def source_head(self, source, n: int) -> int:
        """The edge a circuit starts with: ``source``'s smallest out-edge (edge 0 without one)."""
        if source is None:
            return 0
        head = self.first_out_edge(int(source), n)
        if head < 0:
            raise NotEulerian(f"source vertex {source} has no edges")
        return head

    def join_and_rank(self, src, n: int, label, *, head: int = 0, virtual=None, check=None):
        """Steps 3 to 6 on the pairing in the plan (``succ``, ``ssrc``, ``out_order``,
        ``in_order``) and its cycles' ``label``: the circuit from edge ``head``, or, with
        ``virtual``, the one begun right after that edge, without it. ``check()`` runs once the
        forest's counters are read (the directed pipeline's balance check)."""
        trees, r1, r2 = self.spanning_forest(label, n)
        if check is not None:
            check()
        if trees > 1:
            raise NotEulerian(self._components_message(src, trees, r1, r2))
        succ = self.buf("succ")
        self.splice(succ, n)
        if virtual is not None:
            self.syncs += 1
            head = int(succ[virtual:virtual + 1].copy_to_host()[0])  # the path starts after the extra edge
        out = self.buf("out")
        self.rank(succ, n, head, out)
        self._close_marks()
        return out, n - (virtual is not None)
    # --8<-- [end:directed]

    def _components_message(self, src, trees, r1, r2):
        a = int(src[r1:r1 + 1].copy_to_host()[0])
        b = int(src[r2:r2 + 1].copy_to_host()[0])
        return (f"the edges form {trees} weakly connected components (vertices {a} and {b} are not connected); "
                "an Euler circuit needs one")

    # --------------------------------------------------------------- undirected graphs

    # --8<-- [start:undirected]
    def orient(self, src, dst, n: int, *, path: bool = False):
        """Pair the half-edges at every vertex, label the closed trails, keep one direction of
        each, and write the orientation's pairing: returns (osrc, odst, fwd, label, n, virtual)
        for `join_and_rank`."""
        self.mark("pairing")
        keys, skeys, order = self.buf("hkeys"), self.buf("hskeys"), self.buf("horder")
        m, darts = 2 * n, self.buf("dsucc")

        def pair_half_edges(count):  # -> 1 if some slot's two half-edges are at different vertices
            self.launch("half_keys", count, src, dst, _i(count), keys)
            self.sort(keys, 2 * count, skeys, order)
            self.set_ctr(0)
            self.launch_sliced("dart_succ", count, 2 * count, order, skeys, _i(count), darts, self.ctr, _i(0))
            return int(self.get_ctr(1)[0])

        virtual = None
        if pair_half_edges(n):  # none exactly when every degree is even: then no search
            self.set_ctr(0, INT32_MAX, -1)
            self.launch("odd_vertices", m, skeys, _i(m), self.ctr)
            odd, lo, hi = (int(x) for x in self.get_ctr(3))
            if not path or odd != 2:
                self.K("degrees_of", (1,), (1,), skeys, skeys, _i(m), _i(lo), self.ctr)
                deg = int(self.get_ctr(1)[0])
                if path:
                    raise NotEulerian(f"an undirected Euler path needs exactly two vertices of odd degree; there "
                                      f"are {odd} (e.g. vertex {lo}, degree {deg})")
                raise NotEulerian(f"vertex {lo} has odd degree {deg} ({odd} vertices have odd degree): "
                                  "no Euler circuit")
            virtual = n
            self.put(src, n, lo)
            self.put(dst, n, hi)
            n += 1
            m = 2 * n
            pair_half_edges(n)
        # the orientation, its cycles' labels, and its pairing straight from the darts': the kept
        # trails are the cycles of the oriented graph, so it needs no sort and no labelling of its own
        osrc, odst, fwd, elabel = self.buf("osrc"), self.buf("odst"), self.buf("fwd"), self.buf("elabel", size=n)
        if self.policy.trails is not None and self.params.get("TRAILS"):  # each trail walked once
            self.mark("labelling")
            town, clab = self.policy.trails(self, darts, n)
            self.launch("orient_trails", n, town, clab, src, dst, _i(n), osrc, odst, fwd, elabel)
        else:  # the variant's labelling on the 2n darts: every trail twice, once per direction
            label = self.label_cycles(darts, m)
            self.stats["dart_labelling"] = {k: self.stats[k] for k in ("label_rounds", "splitters",
                                                                       "label_jump_rounds") if k in self.stats}
            self.launch("orient", n, label, src, dst, _i(n), osrc, odst, fwd, elabel)
        out_order, in_order, succ = self.buf("out_order"), self.buf("in_order"), self.buf("succ")
        self.launch("dart_pairs", n, order, skeys, fwd, _i(n), self.buf("ssrc"), out_order, in_order)
        if self.scatter_by_sort(n):
            self.permute_by_sort(in_order, out_order, n, succ)
        else:
            self.launch_sliced("scatter_slice", n, n, in_order, out_order, _i(n), succ)
        return osrc, odst, fwd, elabel, n, virtual
    # --8<-- [end:undirected]

    def undirected(self, src, dst, n: int, *, source=None, path: bool = False):
        """Returns (out, fwd, m, tail, head): edge ids in out[:m], fwd = 1 where an edge was
        walked src -> dst, and the arrays of where each edge starts / ends as walked."""
        out = self.buf("out")
        fw = self.buf("fwd_out")
        if n == 0:
            if source is not None:
                raise NotEulerian(f"source vertex {source} has no edges (the graph is empty)")
            return out, fw, 0, src, dst
        osrc, odst, fwd, elabel, n2, virtual = self.orient(src, dst, n, path=path)
        if virtual is None:
            res, m = self.join_and_rank(osrc, n2, elabel, head=self.source_head(source, n2))
            self.launch("gather_i32", m, fwd, res, _i(m), fw)
            return res, fw, m, osrc, odst
        # a path: the circuit of the oriented graph, begun right after the extra edge
        vt = int(osrc[virtual:virtual + 1].copy_to_host()[0])
        vh = int(odst[virtual:virtual + 1].copy_to_host()[0])
        if source is not None and source not in (vt, vh):
            raise NotEulerian(f"an Euler path of this graph starts at vertex {min(vt, vh)} or {max(vt, vh)} "
                              f"(the odd-degree vertices), not at source {source}")
        res, m = self.join_and_rank(osrc, n2, elabel, virtual=virtual)
        self.launch("gather_i32", m, fwd, res, _i(m), fw)
        if source is not None and source != vh:  # walk it the other way round
            out2, fw2 = self.buf("out2"), self.buf("fwd2")
            self.launch("reverse_walk", m, res, fw, _i(m), out2, fw2)
            return out2, fw2, m, odst, osrc
        return res, fw, m, osrc, odst

    # --------------------------------------------------------------- checks and statistics

    def verify(self, out, tail, head, n: int, closed: bool = True) -> tuple[bool, str]:
        """Check a walk of n edges on the device (benchmarks at sizes where a host check would
        dominate): every edge once, chained, closed. Returns (ok, reason)."""
        if n == 0:
            return True, "empty"
        pos = self.buf("vpos")
        self.launch("fill_i32", n, pos, _i(n), _i(-1))
        self.set_ctr(0, 0, 0, INT32_MAX)
        self.launch("mark_positions", n, out, _i(n), pos, self.ctr)
        self.launch("check_chain", n, out, tail, head, pos, _i(n), _i(int(closed)), self.ctr)
        bad_id, dup, broken, first = (int(x) for x in self.get_ctr(4))
        if bad_id or dup or broken:
            return False, (f"{bad_id} ids out of range, {dup} positions repeat an edge, {broken} breaks in the "
                           f"chain (first at position {first})")
        return True, "every edge once, chained" + (", closed" if closed else "") + " (checked on the device)"

    def differences(self, a, b, n: int) -> tuple[int, int]:
        """How many of the first n entries of the device arrays a and b differ, and the first
        position that does (INT32_MAX when none): the benchmark and the tuner compare a circuit
        with the first one found this way, on the device (the `mismatch` kernel)."""
        self.set_ctr(0, INT32_MAX)
        self.launch("mismatch", n, a, b, _i(n), self.ctr)
        diff, first = (int(x) for x in self.get_ctr(2))
        return diff, first

    def cycle_stats(self, n: int) -> tuple[int, int]:
        """(cycles, longest cycle) of the pairing, from the labels of the last run."""
        size = self.buf("vpos")
        self.launch("fill_i32", n, size, _i(n), _i(0))
        self.launch("cycle_sizes", n, self.buf("label"), _i(n), size)
        big = 2**63 - 1
        self.K("preset_i64", (1,), (32,), self.stats64, *(np.int64(v) for v in (big, -big, big, -big)))
        g, blk = self.ew(n)
        self.K("to_i32_i32", (min(g[0], 1024),) if not self.sim else g, blk, size, _i(n), size, self.stats64,
               _i(0), _i(0))
        longest = int(self.read_stats64()[1])
        return int(self.stats.get("cycles", 0)), longest

    # --------------------------------------------------------------- de Bruijn sequences

    def de_bruijn(self, k: int, n: int):
        """The Euler circuit of B(k, n) from edge 0, with the graph generated in place."""
        N = k ** n
        kn1 = k ** (n - 1)
        self._begin()
        self.mark("pairing")
        ssrc, oo, io, succ = (self.buf(x) for x in ("ssrc", "out_order", "in_order", "succ"))
        self.launch("debruijn_graph", N, _i(N), _i(k), _i(kn1), ssrc, oo, io, succ)
        self.preset(C_BAD, 0, INT32_MAX)
        label = self.label_cycles(succ, N)
        trees, _, _ = self.spanning_forest(label, N)
        assert trees == 1, "de Bruijn graphs are connected"
        self.splice(succ, N)
        out = self.buf("out")
        self.rank(succ, N, 0, out)
        self._close_marks()
        return out


@contextlib.contextmanager
def progress(plan, desc: str, stages: int, disable: bool | None = None):
    """A progress bar over the pipeline's stages while the block runs (``plan.on_stage``).

    Drawn on stderr only when the work takes more than 2 s and stderr is a terminal (see
    `gpulab.progress`), so a GPU run shows nothing; on the simulator B(10, 4) takes about a
    minute and the bar names the stage it is in. On the simulator the interpreter's thread
    switch interval is also 1 ms while the block runs (restored after): every simulated warp
    intrinsic is a rendezvous of Python threads, which the default 5 ms interval makes wait for
    the GIL far longer than it works (B(10, 4): about 22 s instead of 22-54 s; see tests/euler/conftest.py).
    """
    import sys

    from gpulab.progress import bar

    interval = sys.getswitchinterval()
    delay = 2.0
    with bar(total=stages, desc=desc, unit="stage", disable=disable, delay=delay) as b:
        started = []
        shown = [time.monotonic() + delay]

        def on_stage(stage):
            if stage is None:  # a kernel launched: redraw (elapsed time) at most twice a second
                now = time.monotonic()
                if now >= shown[0]:
                    shown[0] = now + 0.5
                    b.refresh()
                return
            b.set_postfix_str(stage, refresh=False)
            if started and b.n < b.total - 1:
                b.update()  # the stage before it is done
            started.append(stage)

        plan.on_stage = on_stage
        if plan.sim:
            sys.setswitchinterval(min(interval, 0.001))
        try:
            yield b
            b.update(b.total - b.n)
        finally:
            plan.on_stage = None
            sys.setswitchinterval(interval)


def ceil_log2(m: int) -> int:
    """Rounds of pointer jumping that a list (or cycle) of m elements needs: ceil(log2 m)."""
    return max(int(m) - 1, 0).bit_length()


def _imbalance_message(info: dict, path: bool) -> str:
    v, a, b = info["first"], info["first_in"], info["first_out"]
    if not path:
        return (f"vertex {v} has {a} in-edges and {b} out-edges (in != out; {info['unbalanced']} "
                "vertices are unbalanced): no Euler circuit")
    return (f"an Euler path needs exactly one vertex with out = in + 1 and one with in = out + 1; here "
            f"{info['unbalanced']} vertices are unbalanced (e.g. vertex {v}: {a} in-edges, {b} out-edges)")


# ----------------------------------------------------------------------------- registry glue


def plan_factory(policy, backend: str):
    """The ``run`` callable of a GPU registry entry: ``(capacity, params) -> EulerPlan`` running
    ``policy`` (an [`EulerPolicy`][gpulab.euler.policy.EulerPolicy]) on ``backend``."""

    def make(capacity: int, params: dict) -> EulerPlan:
        return EulerPlan(policy, backend, capacity, params)

    make.policy, make.backend = policy, backend
    return make
