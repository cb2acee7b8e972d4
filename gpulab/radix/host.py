"""Host side of chapter 4: validation, key transforms, and the launch sequences of every variant.

The sequence of launches of a sort is written once, here, and runs on either backend through a
small *kernel provider*: ``K(name, grid, block, *args)`` launches the numba kernel or the CUDA C
kernel of that name with the variant's compile-time parameters. So what the numba and CUDA C
variants of a step do differs only inside the kernels.

A [`SortPlan`][gpulab.radix.host.SortPlan] owns every buffer a sort of `n` keys needs
(allocated once, outside any timed region) and [`SortPlan.sort`][gpulab.radix.host.SortPlan.sort]
enqueues the whole sort: find the largest key (the early exit), and run one pass per digit,
the first reading the input where it lies. Everything is enqueued on the plan's stream.

The public functions ([`gpulab.radix.sort`][gpulab.radix.sort] ...) take numpy or device keys:
uint32 keys are sorted where they lie; int32 and float32 keys are first mapped to ordered
uint32 on the device ([`order_on_device`][gpulab.radix.host.order_on_device]) and mapped back
in the result ([`unorder_on_device`][gpulab.radix.host.unorder_on_device]).
"""

from __future__ import annotations

import numpy as np

from gpulab import device
from gpulab.arrays import check_array, span
from gpulab.errors import DtypeError, LimitError, ShapeError
from gpulab.launch import KeptLaunches, KernelSource, ceil_div, grid_1d
from gpulab.launch import i32 as _i
from gpulab.radix.policy import Family, RadixPolicy
from gpulab.radix.reference import CpuPlan  # the CPU baseline (numpy), in the reference module

PACKAGE = "gpulab.radix"
SOURCE = "kernels.cu"
INT32_MAX = 2**31 - 1
# Blocks per SM of the one-sweep histogram kernel (tile-strided): 16 per SM (2,112 on an H200)
# took 0.468 ms for 2^28 keys against 0.471 at 1,056 and 0.484 at 1,024 (scripts/radix_hist_variants.py)
HIST_BLOCKS_PER_SM = 16
EW_BLOCK = 256  # threads per block of the element-wise kernels (flags, scatter, iota ...)
KEY_DTYPES = (np.dtype(np.uint32), np.dtype(np.int32), np.dtype(np.float32))
KEY_DTYPE_SET = frozenset(KEY_DTYPES)  # one hash look-up a call, not three dtype comparisons
_UINT32 = KEY_DTYPES[0]

# --8<-- [start:transforms]
SIGN = np.uint32(0x80000000)


def to_ordered(keys: np.ndarray) -> np.ndarray:
    """Map uint32 / int32 / float32 keys to uint32 keys whose unsigned order is the keys' order.

    (The numpy statement of the transform; the sorts apply its device twin, `order_keys`.)

    * int32: flip the sign bit (-2**31 -> 0, -1 -> 0x7FFFFFFF, 0 -> 0x80000000).
    * float32: negative floats (sign bit set) flip every bit, so larger magnitudes come first;
      non-negative floats set the sign bit, so they come after every negative one.
      -0.0 is treated as +0.0 (numpy compares them equal, so a stable sort keeps their input
      order), and every NaN, of either sign and any payload, becomes 0xFFFFFFFF: after +inf,
      in input order, as ``numpy.sort`` places them.
    """
    dt = keys.dtype
    if dt == np.uint32:
        return np.array(keys, dtype=np.uint32, copy=True)
    if dt == np.int32:
        return keys.view(np.uint32) ^ SIGN
    bits = keys.view(np.uint32).copy()
    bits[bits == SIGN] = 0  # -0.0 -> +0.0
    out = np.where(bits & SIGN, ~bits, bits | SIGN).astype(np.uint32)
    out[np.isnan(keys)] = np.uint32(0xFFFFFFFF)
    return out


def from_ordered(u: np.ndarray, dtype) -> np.ndarray:
    """The inverse of [`to_ordered`][gpulab.radix.host.to_ordered] (NaNs come back as the NaN with bits 0x7FFFFFFF)."""
    dtype = np.dtype(dtype)
    u = np.asarray(u, dtype=np.uint32)
    if dtype == np.uint32:
        return u
    if dtype == np.int32:
        return (u ^ SIGN).view(np.int32)
    return np.where(u & SIGN, u & np.uint32(0x7FFFFFFF), ~u).astype(np.uint32).view(np.float32)
# --8<-- [end:transforms]


# --8<-- [start:validate]
def validate_keys(keys, name: str = "keys") -> tuple[int, np.dtype]:
    """Check that `keys` is something these kernels sort, from its array interface (a device
    array's data is not touched); return `(n, dtype)`."""
    shape, dtype = check_array(keys, name, ndim=1)
    if dtype not in KEY_DTYPE_SET:
        raise DtypeError(f"{name} has dtype {dtype}; the kernels sort uint32, int32 and float32 keys "
                         f"(32-bit keys only)")
    if shape[0] > INT32_MAX:
        raise LimitError(f"{name} has {shape[0]} elements; the kernels index with int32 (limit {INT32_MAX})")
    return shape[0], dtype


def validate_values(n: int, values) -> np.dtype:
    """One 4-byte value per key; returns the values' dtype."""
    shape, dtype = check_array(values, "values", ndim=1)
    if shape[0] != n:
        raise ShapeError(f"values has shape {shape} but keys has shape ({n},): one value per key")
    if dtype.itemsize != 4:
        raise DtypeError(f"values has dtype {dtype}; the kernels move 4-byte values "
                         "(uint32, int32 or float32)")
    return dtype
# --8<-- [end:validate]


def tile_shape(params: dict, has_vals: bool) -> dict:
    """The parameters a sort builds with: a key-value tile holds more in registers (its values,
    their places and destinations), so the registry may give it its own shape (`PAIRS_BLOCK`,
    `PAIRS_ITEMS`, `PAIRS_<KERNEL>_MIN_BLOCKS`)."""
    if not has_vals:
        return dict(params)
    return {**params, **{k[len("PAIRS_"):]: v for k, v in params.items() if k.startswith("PAIRS_")}}


def check_params(params: dict) -> None:
    """Clear errors for compile-time parameters the kernels cannot use (the same for key-value
    sorts: their values pass through the keys' shared buffer)."""
    from gpulab.launch import check_block

    for key in ("SCAN_BLOCK", "BLOCK"):
        if key in params:
            b = params[key]
            check_block(b)
            # The register-resident kinds scan with Hillis-Steele steps, any whole-warp block works
            if key == "BLOCK" and "ITEMS" in params:
                continue
            if b & (b - 1) or b < 2:
                raise LimitError(f"{key}={b}: the block scans need a power-of-two block of at least 2 threads")
    if "BITS" in params and not 1 <= params["BITS"] <= 8:
        raise LimitError(f"BITS={params['BITS']}: digits of 1 to 8 bits are supported")
    if "ITEMS" in params:
        if params["BLOCK"] % 32:
            raise LimitError(f"BLOCK={params['BLOCK']}: the warp-ranking kernels need whole warps (a multiple of 32)")
        if params["BLOCK"] < (1 << params["BITS"]):
            raise LimitError(f"BLOCK={params['BLOCK']} < 2**BITS={1 << params['BITS']}: one thread per digit is needed")
        # the staged tile (keys, then values through the same buffer), the per-warp digit counters,
        # dbase, the digit scan's warp sums, the tile id
        R = 1 << params["BITS"]
        smem = 4 * params["BLOCK"] * params["ITEMS"] + 4 * (params["BLOCK"] // 32) * R + 4 * R + 4 * (-(-R // 32)) + 4
        if smem > 48 * 1024:
            raise LimitError(f"a tile of {params['BLOCK']}x{params['ITEMS']} keys needs {smem} bytes of static "
                             "shared memory, over the 48 KiB (49152 bytes) limit")


# ----------------------------------------------------------------------------- kernels


def numba_kernel(name: str, p: dict):
    from gpulab.radix import kernels_numba as kn

    def onesweep(**build):
        return kn.onesweep_kernel(p["BLOCK"], p["ITEMS"], p["BITS"], p.get("BALLOT", 0), p.get("PAIRS", 1),
                                  p.get("ONESWEEP_MIN_BLOCKS", 1), EARLY_COUNTS=p.get("EARLY_COUNTS", 0), **build)

    factories = {
        "iota": lambda: kn.iota, "add_offsets": lambda: kn.add_offsets, "zero_i32": lambda: kn.zero_i32,
        "split_flags": lambda: kn.split_flags, "split_scatter": lambda: kn.split_scatter,
        "head_flags": lambda: kn.head_flags, "compact": lambda: kn.compact,
        "max_reduce": lambda: kn.max_kernel(p["SCAN_BLOCK"]),
        "scan_hs": lambda: kn.scan_hs_kernel(p["SCAN_BLOCK"]),
        "scan_blelloch": lambda: kn.scan_blelloch_kernel(p["SCAN_BLOCK"]),
        "tile_sort": lambda: kn.tile_sort_kernel(p["BLOCK"], p["BITS"]),
        "tile_scatter": lambda: kn.tile_scatter_kernel(p["BLOCK"], p["BITS"]),
        "upsweep": lambda: kn.upsweep_kernel(p["BLOCK"], p["ITEMS"], p["BITS"]),
        "downsweep": lambda: kn.downsweep_kernel(p["BLOCK"], p["ITEMS"], p["BITS"], p.get("BALLOT", 0),
                                                 p.get("PAIRS", 1), p.get("DOWNSWEEP_MIN_BLOCKS", 1)),
        "onesweep_hist": lambda: kn.onesweep_hist_kernel(p["BLOCK"], p["ITEMS"], p["BITS"])[0],
        "onesweep_scan": lambda: kn.onesweep_hist_kernel(p["BLOCK"], p["ITEMS"], p["BITS"])[1],
        # onesweep's pass, and its builds for the queued first pass and an argsort's passes over the input
        "onesweep": lambda: onesweep(),
        "onesweep_first": lambda: onesweep(FIRST=1),
        "onesweep_iota": lambda: onesweep(IOTA=1),
        "onesweep_first_iota": lambda: onesweep(FIRST=1, IOTA=1),
    }
    return factories[name]()


KERNELS = KernelSource(PACKAGE, numba_kernel, source=SOURCE,
                       defines=("SCAN_BLOCK", "BLOCK", "BITS", "ITEMS", "BALLOT", "PAIRS", "DOWNSWEEP_MIN_BLOCKS",
                                "ONESWEEP_MIN_BLOCKS", "FULL_TILES", "LOOKBACK", "PREFETCH_VALUES", "VALUE_DIGITS",
                                "EARLY_COUNTS"))
cuda_defines = KERNELS.cuda_defines
provider = KERNELS.provider  # provider(backend, params, stream=0): K(name, grid, block, *args) on that stream


# ----------------------------------------------------------------------------- scan


# --8<-- [start:scan_plan]
class ScanPlan:
    """Exclusive / inclusive scan of ``n`` int32 values of any length: scan blocks, scan the
    block totals (recursively: a scan of scans), add the scanned totals back. SCAN_BLOCK: the
    threads of a scan block (the kernels' compile-time parameter of that name)."""

    def __init__(self, K, n: int, SCAN_BLOCK: int, method: str = "blelloch"):
        from numba import cuda

        if method not in ("blelloch", "hillis_steele"):
            raise ValueError(f"unknown scan method {method!r}; expected 'blelloch' or 'hillis_steele'")
        self.K, self.SCAN_BLOCK, self.method = K, SCAN_BLOCK, method
        self.per_block = 2 * SCAN_BLOCK if method == "blelloch" else SCAN_BLOCK
        self.levels = []  # (length, block-sums buffer) per level
        m = n
        while m > 0:
            nb = ceil_div(m, self.per_block)
            self.levels.append((m, cuda.device_array(nb, np.int32)))
            if nb == 1:
                break
            m = nb

    def run(self, d_in, d_out, inclusive: bool = False, level: int = 0, K=None) -> None:
        """Scan `d_in` into `d_out` (`K`: who launches, the plan's provider by default)."""
        if not self.levels:
            return
        K = K or self.K
        n, sums = self.levels[level]
        name = "scan_blelloch" if self.method == "blelloch" else "scan_hs"
        K(name, (sums.size,), (self.SCAN_BLOCK,), d_in, d_out, sums, _i(n), _i(inclusive))
        if sums.size > 1:
            self.run(sums, sums, False, level + 1, K=K)  # exclusive scan of the block totals, in place
            K("add_offsets", grid_1d(n, EW_BLOCK), (EW_BLOCK,), d_out, sums, _i(n), _i(self.per_block))
# --8<-- [end:scan_plan]

    def kept(self, d_in, d_out, inclusive: bool = False):
        """`go()`: `run(d_in, d_out, inclusive)` for these arrays, every launch kept
        ([`KernelProvider.kept`][gpulab.launch.KernelProvider.kept]); `None` where one cannot be."""
        launches: list = []
        self.run(d_in, d_out, inclusive, K=lambda name, grid, block, *args: launches.append(
            self.K.kept(name, grid, block, 0, *args)))
        if None in launches:
            return None

        def go():
            for launch in launches:
                launch()

        return go


# ----------------------------------------------------------------------------- sort


class SortPlan:
    """Every buffer and launch of one variant's sort of ``n`` keys (with or without values).

    `policy` (the registry entry's [`RadixPolicy`][gpulab.radix.policy.RadixPolicy]) names the
    algorithm: its `family` is the global split (one bit per pass, flags in global memory), the
    tile split (per-block split(s) in shared memory: `split1_shared` with BITS=1,
    `radix4_shared` with BITS=4), reduce-then-scan (keys in registers ranked by warp
    intrinsics) or one-sweep (the histograms of every pass in one read, then one kernel per
    pass with decoupled look-back). Launches and copies go to `stream`.

    The first pass writes `keys[0]`, so `keys[1][:n]` may hold the input itself: that is where
    the public functions put keys they had to transform ([`scratch`][gpulab.radix.host.SortPlan.scratch]).

    A onesweep plan's counters, digit counts and status tables (`ctl`, `status`) are left zero
    behind each whole sort ([`rezero`][gpulab.radix.host.SortPlan.rezero]), and the next sort
    counts on it while `zeroed` is True: code that writes them outside `sort` (a test, a
    profiler) sets `zeroed = False` first, or the next sort's tiles read stale counters.
    """

    def __init__(self, policy: RadixPolicy, backend: str, n: int, has_vals: bool, params: dict, stream=0):
        from numba import cuda

        params = tile_shape(params, has_vals)
        check_params(params)
        if policy.max_keys is not None and n > policy.max_keys:
            raise LimitError(f"a {policy.family.value} plan sorts up to {policy.max_keys} keys "
                             f"({policy.max_keys_why}); got {n}")
        self.policy, self.backend, self.n, self.has_vals, self.params = policy, backend, n, has_vals, dict(params)
        family = policy.family
        self.stream = stream
        # PAIRS: a keys-only sort compiles its tiles without the shared buffer for values
        self.K = K = provider(backend, {**params, "PAIRS": int(has_vals)}, stream)
        # the launches a sort repeats, kept by role and made at their first use (`KeptLaunches`):
        # on a GPU, on the default stream; the one-sweep family's kernels, copy and zeroing
        self.kept = KeptLaunches(enabled=not (device.on_simulator() or stream))
        self.bits = policy.bits(params)
        alloc = lambda m, dt=np.uint32: cuda.device_array(max(m, 1), dt)  # noqa: E731
        self.keys = [alloc(n), alloc(n)]
        self.vals = [alloc(n), alloc(n)] if has_vals else [alloc(1), alloc(1)]
        # views made once (a device array's slice is host work): the input's places in buffer 1
        self._scratch, self.values_scratch = self.keys[1][:n], (self.vals[1][:n] if has_vals else None)
        self.d_max = cuda.device_array(1, np.uint32)
        # the largest key's copy on the host (page-locked) and the event that says it arrived
        self.max_back = device.Readback(1, np.uint32)
        self.d_max_i32 = self.d_max.view(np.int32)  # zeroed by zero_i32
        self.passes_run = 0
        self.first_moved = True  # onesweep: whether the last sort's queued first pass moved keys
        R = 1 << self.bits
        self.nb = ceil_div(n, policy.tile_keys(params)) if policy.tile else 1  # tiles of a pass
        if family is Family.GLOBAL_SPLIT:
            self.flags, self.pos = alloc(n, np.int32), alloc(n, np.int32)
            self.scan = ScanPlan(K, n, params["SCAN_BLOCK"])
        elif family is Family.TILE_SPLIT:
            self.tkeys, self.tvals = alloc(n), (alloc(n) if has_vals else alloc(1))
            self.counts = alloc(R * self.nb, np.int32)
            self.starts = alloc(R * self.nb, np.int32)
            self.scan = ScanPlan(K, R * self.nb, params["SCAN_BLOCK"])
        elif family is Family.REDUCE_THEN_SCAN:
            self.counts = alloc(R * self.nb, np.int32)
            self.scan = ScanPlan(K, R * self.nb, params["SCAN_BLOCK"])
        elif family is Family.ONE_SWEEP:
            self.max_passes = ceil_div(32, self.bits)
            # status: two status tables of nb*R words (the run-th pass of a sort uses table
            # run % 2 and zeroes the other) with ctl between them: one tile counter per pass,
            # then the R digit counts (then offsets) of each pass, then a flag per pass: whether
            # it moves keys (onesweep_scan writes it). So ctl and either table are one range,
            # which one launch zeroes behind a sort (`rezero`).
            t, c = self.nb * R, self.max_passes * (2 + R)
            self.status = alloc(2 * t + c, np.uint32)
            self.ctl = self.status[t: t + c].view(np.int32)
            self.counters, self.hist = self.ctl[: self.max_passes], self.ctl[self.max_passes:]
            self.tables = (self.status[:t], self.status[t + c:])
            self._rezero = (self.status[: t + c], self.status[t:])  # ctl with table 0, ctl with table 1
            # the offsets' copy on the host (page-locked, so the copy is asynchronous) and the
            # event that says it has arrived; made once, reused by every sort
            self.hist_back = device.Readback(self.hist.size, np.int32)
            # whether ctl and both status tables are all zero, as a finished sort leaves them
            # (`rezero`): the next sort's preamble then skips its two zeroing launches
            self.zeroed = False
        else:
            raise ValueError(f"no sort plan for the {family.value} family")
        if R * max(self.nb, 1) > INT32_MAX:
            raise LimitError(f"{R} digits x {self.nb} tiles of counts exceed the int32 limit {INT32_MAX}")

    @property
    def scratch(self):
        """A buffer of `n` uint32 that may hold the input keys of [`sort`][gpulab.radix.host.SortPlan.sort]
        (`values_scratch`: the same for the values of a key-value plan)."""
        return self._scratch

    # --8<-- [start:passes]
    def max_key(self, d_keys) -> int:
        """The largest key: only its significant bits need sorting (the early exit)."""
        n, sb = self.n, self.params["SCAN_BLOCK"]
        self.zero(self.d_max_i32)  # queued: no host copy to wait for
        self.K("max_reduce", (min(ceil_div(n, sb), 4096),), (sb,), d_keys, _i(n), self.d_max)
        return int(self.max_back.start(self.d_max, self.stream)()[0])

    def passes(self, max_key: int) -> int:
        return ceil_div(int(max_key).bit_length(), self.bits)

    def sort(self, d_keys_in, d_vals_in=None, iota: bool = False, max_key: int | None = None, out=None):
        """Sort `d_keys_in` (left unchanged); values come from `d_vals_in` or, with `iota`,
        are the input positions (an argsort). Returns the device arrays holding the result: the
        plan's own buffers (overwritten by its next sort), or `out = (keys, values)` — arrays of
        `n` elements (values `None` for a keys-only sort) that receive the result (the last pass
        writes them, or a copy when no pass moved the keys there), so a plan can serve many sorts
        that each keep their result. `out` may hold the input keys (an in-place sort): a last
        pass that would read the input and write `out` at once writes the plan's buffer instead,
        copied into `out`. `out` must not overlap the input partly, nor one input's memory in
        the other's place (the public functions check this). `out` may also be a function of no
        arguments that returns that pair, or `None` for the plan's buffers: it is called once (n >= 1),
        just before the last pass is launched (or the result copied), when every earlier pass is
        already queued, so that host work such as allocating the result runs while the GPU sorts
        instead of before it or between two passes. A caller that
        already knows an upper bound of the keys passes it as `max_key` (no reduction, no wait
        for the device). A onesweep sort ends by queueing the zeroing of its counters and status
        table for the next sort (`rezero`)."""
        n, hv, K = self.n, self.has_vals, self.K
        if n == 0:
            return self.keys[0][:0], self.vals[0][:0] if hv else None
        # The first pass reads the keys where they are (no copy), and the values from the caller
        # or, for an argsort, as positions: onesweep's passes that read the input make them up
        # (`onesweep_iota`: nothing to read), the other variants read them from buffer 1,
        # written here, which only the first pass that moves keys reads.
        ks, vs = d_keys_in, (d_vals_in if hv and not iota else self.vals[1])
        made_up = hv and iota and self.policy.family is Family.ONE_SWEEP
        if hv and iota and not made_up:
            K("iota", grid_1d(n, EW_BLOCK), (EW_BLOCK,), self.vals[1], _i(n))
        queued = 0  # passes launched before the number of passes was known
        moved = False  # whether a pass has moved the keys out of the input (the next reads its output)
        self.first_moved = True
        first = self.policy.histograms_first
        if n > 1 and first and max_key is None:
            shifts = self.queue_first_pass(ks, vs, made_up)
            queued = 1
            if self.first_moved:
                ks, vs = self.keys[0], self.vals[0]
                moved = True
        elif n > 1:
            if max_key is None:
                max_key = self.max_key(d_keys_in)
            shifts = [p * self.bits for p in range(self.passes(max_key))]
            if first and shifts:
                self.histograms(d_keys_in, len(shifts))
        else:
            shifts = []
        passes = len(shifts)
        # the passes that write take turns between buffers 0 and 1 (the first writes buffer 0:
        # buffer 1 may hold argsort's positions, which it reads), the last writes `out` if given
        wrote = queued if self.first_moved else 0
        for run in range(queued, passes):
            b = (run - queued + wrote) % 2
            kd, vd = self.keys[b], self.vals[b]
            if run == passes - 1:
                out = out() if callable(out) else out  # asked for now: the earlier passes are queued
                # a last pass that reads the input (the first one; the second when the queued
                # pass moved nothing) may not write `out` where `out` is the input (an in-place
                # sort): it writes the plan's buffer, and the copy below moves the result
                if out is not None and not (ks is d_keys_in and any(overlap(o, i) for o, i in zip(out, (ks, vs)))):
                    kd, vd = out[0], (out[1] if hv else self.vals[0])
            self.one_pass(shifts[run], ks, vs, kd, vd, run, positions=made_up and not moved)
            ks, vs, moved = kd, vd, True
        self.passes_run = passes
        if callable(out):  # no pass after the queued one (or none at all): the result is copied
            out = out()
        # ks, vs hold the result. Copy it where the caller expects it when no pass wrote it there:
        # into `out` when the queued pass was the only one, or when no pass ran (n <= 1, or a
        # given max_key of 0: the input is the result), and in that last case into buffer 0
        # without `out` (the input stays the caller's). Keys and values each by itself:
        # `out` may hold the input keys and not the values.
        final = out if out is not None else ((self.keys[0], self.vals[0]) if ks is d_keys_in else None)
        if made_up and not moved:  # no pass moved a key: the positions were never made up
            K("iota", grid_1d(n, EW_BLOCK), (EW_BLOCK,), vs, _i(n))
        if final is not None:
            if ks is not final[0]:
                _copy(final[0], ks, n, self.stream)
            if hv and vs is not final[1]:
                _copy(final[1], vs, n, self.stream)
            ks, vs = final[0], (final[1] if hv else vs)
        if passes and first:  # (the preamble ran: onesweep)
            self.rezero(passes)
        return _head(ks, n), _head(vs, n) if hv else None

    def one_pass(self, shift, ks, vs, kd, vd, run: int = 0, skip_same: bool = False, positions: bool = False):
        """One digit pass, the `run`-th of this sort (onesweep: its status table's parity;
        `skip_same`: `onesweep_first`, which writes nothing when one digit holds every key;
        `positions`: onesweep, the values are the keys' positions in `ks`, made up by the pass's
        `_iota` build, not read from `vs`)."""
        K, n, hv, family = self.K, _i(self.n), _i(self.has_vals), self.policy.family
        if family is Family.GLOBAL_SPLIT:
            g = grid_1d(self.n, EW_BLOCK)
            K("split_flags", g, (EW_BLOCK,), ks, n, _i(shift), self.flags)
            self.scan.run(self.flags, self.pos)
            K("split_scatter", g, (EW_BLOCK,), ks, vs, kd, vd, self.pos, self.flags, n, _i(shift), hv)
        elif family is Family.TILE_SPLIT:
            nb, B = _i(self.nb), self.params["BLOCK"]
            K("tile_sort", (self.nb,), (B,), ks, vs, self.tkeys, self.tvals, self.counts, self.starts, n, _i(shift), nb, hv)
            self.scan.run(self.counts, self.counts)
            K("tile_scatter", (self.nb,), (B,), self.tkeys, self.tvals, kd, vd, self.counts, self.starts, n, _i(shift), nb, hv)
        elif family is Family.ONE_SWEEP:
            B, p = self.params["BLOCK"], shift // self.bits
            name = ("onesweep_first" if skip_same else "onesweep") + ("_iota" if positions else "")
            k, v = self.keys[0], self.vals[0]  # (stand-ins for the four arrays of a kept launch)
            self.kept.launch(K, name, (self.nb,), (B,), (ks, vs, kd, vd), (self.hist, self.counters, self.tables[run % 2],
                             self.tables[(run + 1) % 2], n, _i(shift), _i(p), hv), (k, v, k, v), (name, run % 2, p))
        else:
            nb, B = _i(self.nb), self.params["BLOCK"]
            K("upsweep", (self.nb,), (B,), ks, self.counts, n, _i(shift), nb)
            self.scan.run(self.counts, self.counts)
            K("downsweep", (self.nb,), (B,), ks, vs, kd, vd, self.counts, n, _i(shift), nb, hv)
    # --8<-- [end:passes]

    # --8<-- [start:onesweep_host]
    def histograms(self, d_keys, passes: int) -> None:
        """One-sweep's preamble: zero the counters and the digit counts; count every pass's
        digits in one read of the keys; zero the first pass's status table; scan the counts into
        offsets. The table is zeroed after the histogram kernel is launched, not before: the GPU
        then runs that launch while the host issues the next, instead of waiting for the host
        between two tiny kernels (a launch takes the host 20-30 us). Both zeroings are skipped
        where the plan's last sort left them zero behind it ([`rezero`][gpulab.radix.host.SortPlan.rezero])."""
        K, B = self.K, self.params["BLOCK"]
        zeroed, self.zeroed = self.zeroed, False  # from here on the sort writes them
        if not zeroed:
            self.zero(self.ctl)
        grid = min(self.nb, HIST_BLOCKS_PER_SM * device.info().sm_count)
        self.kept.launch(K, "onesweep_hist", (grid,), (B,), (d_keys,), (self.hist, _i(self.n), _i(passes)),
                         (self.keys[0],), ("onesweep_hist", passes))
        if not zeroed:
            self.zero(self.tables[0])
        self.kept.launch(K, "onesweep_scan", (passes,), (B,), (self.hist,), role=("onesweep_scan", passes))

    def rezero(self, passes: int) -> None:
        """Queue the zeroing of the counters and digit counts, and of the status table the last of
        `passes` passes used, behind a sort (onesweep; each pass zeroes the other table itself),
        so that the next sort's preamble need not: at the end of a sort the host is ahead of the
        GPU, which is still in its passes, while up to pass 0 every launch delays the GPU (the
        preamble is bound by the host). `ctl` lies between the two tables, so both are one
        launch. A sort that stops early (an error between two launches) leaves `zeroed` False,
        and the next sort zeroes them itself."""
        self.zero(self._rezero[(passes - 1) % 2])
        self.zeroed = True

    def zero(self, a) -> None:
        """Queue the zeroing of the 32-bit device array `a` (one `zero_i32` launch; a kept one
        for the plan's own buffers, which it zeroes at every sort)."""
        self.kept.launch(self.K, "zero_i32", grid_1d(a.size, EW_BLOCK), (EW_BLOCK,), (a,), (_i(a.size),),
                         role=("zero_i32", a.size))

    def queue_first_pass(self, d_keys, d_vals, positions: bool = False) -> list[int]:
        """Count every pass's digits and scan them into offsets, start copying the offsets and
        the flag of each pass after them (4 KB) to the host, queue the first pass behind that copy
        (into buffer 0), and only then wait for the copy. The copy still comes before pass 0 on the stream; what the queued pass
        hides is the host's part — waking up, deciding, launching the later passes — which would
        otherwise leave the GPU idle between the copy and pass 0.

        A pass whose digit all keys share would move nothing (its permutation is the identity):
        the host drops every such later pass — on small keys the high passes, as the max-key
        shortcut does for the other variants, without its extra read of the keys. The first pass
        is launched before that decision, as `onesweep_first`, which reads the flag `onesweep_scan`
        left for it: when all keys share its digit its blocks return at once, writing nothing
        (`first_moved` is then False, and the next pass reads the input); the host reads the same
        flags. Returns the shifts of the passes launched or to launch, the first always."""
        self.histograms(d_keys, self.max_passes)
        # the copy queued, not waited for
        offsets = self.kept.call("offsets back", lambda: self.hist_back.kept(self.hist), self.hist_back.start,
                                 self.hist, self.stream)
        self.one_pass(0, d_keys, d_vals, self.keys[0], self.vals[0], 0, skip_same=True, positions=positions)
        moves = self.passes_that_move(offsets())
        self.first_moved = bool(moves[0])
        return [0] + [p * self.bits for p in range(1, self.max_passes) if moves[p]]

    def passes_that_move(self, back) -> list[int]:
        """For each pass, from the host copy of `hist` (`back`): does the pass move keys? One
        whose digit all keys share would not (its permutation is the identity). `onesweep_scan`
        wrote the answer after the offsets, one flag per pass (more than one digit holds keys),
        for `onesweep_first`; the host reads the same flags (a list of 0 and 1)."""
        at = self.max_passes << self.bits
        return back[at: at + self.max_passes].tolist()
    # --8<-- [end:onesweep_host]


def _head(a, n: int):
    """`a[:n]`, or `a` itself when it holds exactly `n` elements (the usual case: a numba slice
    is a new array object, tens of microseconds of host time and allocations)."""
    return a if a.shape[0] == n else a[:n]


def _copy(dst, src, n: int, stream) -> None:
    """The first `n` elements of the device array `src` into `dst`, queued on `stream`, as bits
    (numba's copy; another library's array, which a sort may be given by address, through a
    numba view of it)."""
    from numba import cuda

    dst, src = (a if hasattr(a, "copy_to_device") else cuda.as_cuda_array(a, sync=False) for a in (dst, src))
    _head(dst, n).copy_to_device(_head(src if src.dtype == dst.dtype else src.view(dst.dtype), n), stream=stream)


def overlap(a, b) -> bool:
    """Whether two device arrays (either may be `None`) share memory."""
    if a is None or b is None:
        return False
    (a0, a1), (b0, b1) = span(a), span(b)
    return a0 < b1 and b0 < a1


def _fetch(d_small, stream):
    """A few values back to the host, once everything before them on `stream` is done."""
    out = d_small.copy_to_host(stream=stream)
    if stream:
        stream.synchronize()
    return out


def plan_factory(policy: RadixPolicy, backend: str):
    """The `run` callable of a registry entry: `(n, has_vals, params, stream=0) -> SortPlan`."""

    def make(n: int, has_vals: bool, params: dict, stream=0) -> SortPlan:
        return SortPlan(policy, backend, n, has_vals, params, stream)

    make.policy, make.backend = policy, backend
    return make


# ----------------------------------------------------------------------------- distinct


# --8<-- [start:distinct]
class DistinctPlan:
    """distinct = sort, flag the first key of each run, exclusive scan of the flags, compact.

    The flags have one element more than the keys, 0 for good (`head_flags` writes the first
    `n`), so the exclusive scan's element `n` is the count of distinct keys: one value read back,
    one driver call on the default stream."""

    def __init__(self, sort_plan: SortPlan):
        from numba import cuda

        n = sort_plan.n
        check_distinct_size(n)
        self.sp = sort_plan
        self.flags = cuda.device_array(n + 1, np.int32)
        sort_plan.zero(self.flags[n:])  # the extra flag (on the plan's stream), never written again
        self.pos = cuda.device_array(n + 1, np.int32)
        self.out = cuda.device_array(max(n, 1), np.uint32)
        self.scan = ScanPlan(sort_plan.K, n + 1, sort_plan.params["SCAN_BLOCK"])
        # the count (the scan's last element) read back into page-locked memory, from a
        # one-element view made once (a numba slice took 30-47 us of host time a call on the
        # H200 machines of 2026-11-29)
        self.count_back = device.Readback(1, np.int32)
        self.count_src = self.pos[n:]
        self.kept = KeptLaunches(enabled=sort_plan.kept.enabled)  # (as the sort plan's)

    def run(self, d_keys_in, out=None):
        """Returns (device array with the distinct keys first, their count): the plan's buffer,
        or `out` (n elements) when given. `out` may also be a function of no arguments that
        returns that array (or `None` for the plan's buffer): it is called once, when the sort,
        the flags and their scan are queued, so that host work such as allocating the caller's
        result runs while the GPU sorts, before the one wait of the call (the count)."""
        sp, K, n = self.sp, self.sp.K, self.sp.n
        if n == 0:
            return self._target(out), 0
        keys, _ = sp.sort(d_keys_in)
        g = grid_1d(n, EW_BLOCK)
        kept, t = self.kept, sp.keys[0]  # (t: the stand-in of the sorted keys and the result in kept launches)
        kept.launch(K, "head_flags", g, (EW_BLOCK,), (keys,), (_i(n), self.flags), (t,))
        kept.call("scan", lambda: self.scan.kept(self.flags, self.pos), self.scan.run, self.flags, self.pos)
        out = self._target(out)
        kept.launch(K, "compact", g, (EW_BLOCK,), (keys, self.flags, self.pos, out), (_i(n),), (t, self.flags, self.pos, t))
        back = kept.call("count", lambda: self.count_back.kept(self.count_src), self.count_back.start,
                         self.count_src, sp.stream)
        return out, int(back()[0])  # the call's one wait

    def _target(self, out):
        """`out` of `run`, called where it is a function; the plan's buffer for `None`."""
        out = out() if callable(out) else out
        return self.out if out is None else out
# --8<-- [end:distinct]


def check_distinct_size(n: int) -> None:
    """`distinct`'s own limit: its scan runs over one element more than the keys, with int32
    indices, so at most `INT32_MAX - 1` keys (one clear error, before any allocation)."""
    if n > INT32_MAX - 1:
        raise LimitError(f"distinct takes at most {INT32_MAX - 1} keys (its scan covers one more element "
                         f"than the keys, with int32 indices), got {n}")


def distinct_plan(plan):
    """The distinct pipeline for a sort plan (the CPU plan does it with numpy.unique)."""
    if isinstance(plan, CpuPlan):
        return type("CpuDistinct", (), {"run": staticmethod(plan.distinct)})()
    return DistinctPlan(plan)


# ----------------------------------------------------------------------------- keys of other types, on the device


def order_on_device(d_keys, dtype, out, stream=0):
    """Ordered uint32 keys for the sort: uint32 keys as they are (read in place, never
    written), int32 / float32 keys transformed into `out` (a plan's scratch buffer)."""
    if dtype == _UINT32:  # (before the import: a statement that costs host time on every call)
        return d_keys
    from gpulab.radix.kernels_numba import KIND_FLOAT32, KIND_INT32, order_keys

    dtype = np.dtype(dtype)
    n = d_keys.shape[0]
    kind = KIND_INT32 if dtype == np.int32 else KIND_FLOAT32
    order_keys[grid_1d(n, EW_BLOCK), EW_BLOCK, stream](d_keys.view(np.uint32), out, _i(n), _i(kind))
    return out


def unorder_on_device(d_ordered, dtype, stream=0):
    """The sorted keys in their own dtype: transformed back in place (a buffer the sort owns)."""
    from gpulab.radix.kernels_numba import KIND_FLOAT32, KIND_INT32, unorder_keys

    dtype = np.dtype(dtype)
    if dtype == np.uint32:
        return d_ordered
    n = d_ordered.shape[0]
    if n:
        kind = KIND_INT32 if dtype == np.int32 else KIND_FLOAT32
        unorder_keys[grid_1d(n, EW_BLOCK), EW_BLOCK, stream](d_ordered, _i(n), _i(kind))
    return d_ordered.view(dtype)


def widen_on_device(d_positions, stream=0, out=None):
    """argsort's uint32 positions as int64, written into `out` (a device array of `n` int64),
    or a new device array."""
    from numba import cuda

    from gpulab.radix.kernels_numba import widen_indices

    n = d_positions.shape[0]
    out = cuda.device_array(n, np.int64, stream=stream) if out is None else out
    if n:
        widen_indices[grid_1d(n, EW_BLOCK), EW_BLOCK, stream](d_positions, out, _i(n))
    return out
