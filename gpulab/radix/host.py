"""Host side of chapter 4: validation, key transforms, and the launch sequences of every variant.

The sequence of launches of a sort is written once, here, and runs on either backend through a
small *kernel provider*: ``K(name, grid, block, *args)`` launches the numba kernel or the CUDA C
kernel of that name with the variant's compile-time parameters. So what the numba and CUDA C
variants of a step do differs only inside the kernels.

A :class:`SortPlan` owns every buffer a sort of ``n`` keys needs (allocated once, outside any
timed region) and :meth:`SortPlan.sort` enqueues the whole sort: copy the input into the
work buffer, find the largest key (the early exit), and run one pass per digit.
"""

from __future__ import annotations

import numpy as np

from gpulab import cudac
from gpulab.errors import DtypeError, LimitError, ShapeError
from gpulab.launch import ceil_div, grid_1d

PACKAGE = "gpulab.radix"
SOURCE = "kernels.cu"
INT32_MAX = 2**31 - 1
EW_BLOCK = 256  # threads per block of the element-wise kernels (flags, scatter, iota ...)
KEY_DTYPES = (np.dtype(np.uint32), np.dtype(np.int32), np.dtype(np.float32))

# --8<-- [start:transforms]
SIGN = np.uint32(0x80000000)


def to_ordered(keys: np.ndarray) -> np.ndarray:
    """Map uint32 / int32 / float32 keys to uint32 keys whose unsigned order is the keys' order.

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
    """The inverse of :func:`to_ordered` (NaNs come back as the NaN with bits 0x7FFFFFFF)."""
    dtype = np.dtype(dtype)
    u = np.asarray(u, dtype=np.uint32)
    if dtype == np.uint32:
        return u
    if dtype == np.int32:
        return (u ^ SIGN).view(np.int32)
    return np.where(u & SIGN, u & np.uint32(0x7FFFFFFF), ~u).astype(np.uint32).view(np.float32)
# --8<-- [end:transforms]


# --8<-- [start:validate]
def validate_keys(keys, name: str = "keys") -> np.ndarray:
    """Check that ``keys`` is something these kernels sort; return it as a contiguous array."""
    if not hasattr(keys, "dtype") or not hasattr(keys, "shape"):
        raise ShapeError(f"{name} must be a 1-D numpy array, got {type(keys).__name__}")
    if keys.ndim != 1:
        raise ShapeError(f"{name} must be 1-D, got {keys.ndim}-D with shape {keys.shape}")
    if keys.dtype not in KEY_DTYPES:
        raise DtypeError(f"{name} has dtype {keys.dtype}; the kernels sort uint32, int32 and float32 keys "
                         f"(32-bit keys only)")
    if keys.size > INT32_MAX:
        raise LimitError(f"{name} has {keys.size} elements; the kernels index with int32 (limit {INT32_MAX})")
    return np.ascontiguousarray(keys)


def validate_values(keys: np.ndarray, values) -> np.ndarray:
    if not hasattr(values, "dtype") or getattr(values, "ndim", None) != 1:
        raise ShapeError("values must be a 1-D numpy array")
    if values.shape != keys.shape:
        raise ShapeError(f"values has shape {values.shape} but keys has shape {keys.shape}: one value per key")
    if values.dtype.itemsize != 4:
        raise DtypeError(f"values has dtype {values.dtype}; the kernels move 4-byte values "
                         "(uint32, int32 or float32)")
    return np.ascontiguousarray(values)
# --8<-- [end:validate]


def check_params(params: dict) -> None:
    """Clear errors for compile-time parameters the kernels cannot use."""
    from gpulab.launch import check_block

    for key in ("SCAN_BLOCK", "BLOCK"):
        if key in params:
            b = params[key]
            check_block(b)
            if b & (b - 1) or b < 2:
                raise LimitError(f"{key}={b}: the block scans need a power-of-two block of at least 2 threads")
    if "BITS" in params and not 1 <= params["BITS"] <= 8:
        raise LimitError(f"BITS={params['BITS']}: digits of 1 to 8 bits are supported")
    if "ITEMS" in params:
        if params["BLOCK"] % 32:
            raise LimitError(f"BLOCK={params['BLOCK']}: the warp-ranking kernels need whole warps (a multiple of 32)")
        if params["BLOCK"] < (1 << params["BITS"]):
            raise LimitError(f"BLOCK={params['BLOCK']} < 2**BITS={1 << params['BITS']}: one thread per digit is needed")
        smem = 2 * 4 * params["BLOCK"] * params["ITEMS"] + 4 * (params["BLOCK"] // 32) * (1 << params["BITS"])
        if smem > 48 * 1024:
            raise LimitError(f"a tile of {params['BLOCK']}x{params['ITEMS']} keys needs {smem} bytes of static "
                             "shared memory, over the 48 KiB (49152 bytes) limit")


# ----------------------------------------------------------------------------- kernel providers


class NumbaKernels:
    """``K(name, grid, block, *args)`` for the numba kernels."""

    backend = "numba"

    def __init__(self, params: dict):
        from gpulab.radix import kernels_numba as kn

        p = params
        self._factories = {
            "iota": lambda: kn.iota, "add_offsets": lambda: kn.add_offsets, "zero_i32": lambda: kn.zero_i32,
            "split_flags": lambda: kn.split_flags, "split_scatter": lambda: kn.split_scatter,
            "head_flags": lambda: kn.head_flags, "compact": lambda: kn.compact,
            "max_reduce": lambda: kn.max_kernel(p["SCAN_BLOCK"]),
            "scan_hs": lambda: kn.scan_hs_kernel(p["SCAN_BLOCK"]),
            "scan_blelloch": lambda: kn.scan_blelloch_kernel(p["SCAN_BLOCK"]),
            "tile_sort": lambda: kn.tile_sort_kernel(p["BLOCK"], p["BITS"]),
            "tile_scatter": lambda: kn.tile_scatter_kernel(p["BLOCK"], p["BITS"]),
            "upsweep": lambda: kn.upsweep_kernel(p["BLOCK"], p["ITEMS"], p["BITS"]),
            "downsweep": lambda: kn.downsweep_kernel(p["BLOCK"], p["ITEMS"], p["BITS"], p.get("BALLOT", 0)),
        }
        self._cache: dict = {}

    def __call__(self, name, grid, block, *args):
        k = self._cache.get(name)
        if k is None:
            k = self._cache[name] = self._factories[name]()
        k[grid, block](*args)


class CudaCKernels:
    """``K(name, grid, block, *args)`` for the CUDA C kernels (pycuda), compiled with the
    variant's parameters as ``-D`` macros."""

    backend = "cuda-c"

    def __init__(self, params: dict):
        self.defines = cuda_defines(params)
        self._cache: dict = {}

    def __call__(self, name, grid, block, *args):
        fn = self._cache.get(name)
        if fn is None:
            fn = self._cache[name] = cudac.kernel(PACKAGE, SOURCE, name, self.defines)
        cudac.launch(fn, grid, block, *args)


def cuda_defines(params: dict) -> dict:
    return {k: v for k, v in params.items() if k in ("SCAN_BLOCK", "BLOCK", "BITS", "ITEMS", "BALLOT")}


def provider(backend: str, params: dict):
    return CudaCKernels(params) if backend == "cuda-c" else NumbaKernels(params)


def _i(x) -> np.int32:
    return np.int32(x)


# ----------------------------------------------------------------------------- scan


# --8<-- [start:scan_plan]
class ScanPlan:
    """Exclusive / inclusive scan of ``n`` int32 values of any length: scan blocks, scan the
    block totals (recursively: a scan of scans), add the scanned totals back."""

    def __init__(self, K, n: int, block: int, method: str = "blelloch"):
        from numba import cuda

        if method not in ("blelloch", "hillis_steele"):
            raise ValueError(f"unknown scan method {method!r}; expected 'blelloch' or 'hillis_steele'")
        self.K, self.block, self.method = K, block, method
        self.per_block = 2 * block if method == "blelloch" else block
        self.levels = []  # (length, block-sums buffer) per level
        m = n
        while m > 0:
            nb = ceil_div(m, self.per_block)
            self.levels.append((m, cuda.device_array(nb, np.int32)))
            if nb == 1:
                break
            m = nb

    def run(self, d_in, d_out, inclusive: bool = False, level: int = 0) -> None:
        if not self.levels:
            return
        n, sums = self.levels[level]
        name = "scan_blelloch" if self.method == "blelloch" else "scan_hs"
        self.K(name, (sums.size,), (self.block,), d_in, d_out, sums, _i(n), _i(inclusive))
        if sums.size > 1:
            self.run(sums, sums, False, level + 1)  # exclusive scan of the block totals, in place
            self.K("add_offsets", grid_1d(n, EW_BLOCK), (EW_BLOCK,), d_out, sums, _i(n), _i(self.per_block))
# --8<-- [end:scan_plan]


# ----------------------------------------------------------------------------- sort


class SortPlan:
    """Every buffer and launch of one variant's sort of ``n`` keys (with or without values).

    ``kind`` is the algorithm: ``"split1_global"``, ``"tile"`` (per-block split(s) in shared
    memory: ``split1_shared`` with BITS=1, ``radix4_shared`` with BITS=4) or ``"warp"``
    (reduce-then-scan with keys in registers ranked by warp intrinsics).
    """

    def __init__(self, kind: str, backend: str, n: int, has_vals: bool, params: dict):
        from numba import cuda

        check_params(params)
        self.kind, self.backend, self.n, self.has_vals, self.params = kind, backend, n, has_vals, dict(params)
        self.K = K = provider(backend, params)
        self.bits = 1 if kind == "split1_global" else params["BITS"]
        alloc = lambda m, dt=np.uint32: cuda.device_array(max(m, 1), dt)  # noqa: E731
        self.keys = [alloc(n), alloc(n)]
        self.vals = [alloc(n), alloc(n)] if has_vals else [alloc(1), alloc(1)]
        self.d_max = cuda.device_array(1, np.uint32)
        self.passes_run = 0
        R = 1 << self.bits
        if kind == "split1_global":
            self.flags, self.pos = alloc(n, np.int32), alloc(n, np.int32)
            self.scan = ScanPlan(K, n, params["SCAN_BLOCK"])
        elif kind == "tile":
            self.nb = ceil_div(n, params["BLOCK"])
            self.tkeys, self.tvals = alloc(n), (alloc(n) if has_vals else alloc(1))
            self.counts = alloc(R * self.nb, np.int32)
            self.starts = alloc(R * self.nb, np.int32)
            self.scan = ScanPlan(K, R * self.nb, params["SCAN_BLOCK"])
        elif kind == "warp":
            self.nb = ceil_div(n, params["BLOCK"] * params["ITEMS"])
            self.counts = alloc(R * self.nb, np.int32)
            self.scan = ScanPlan(K, R * self.nb, params["SCAN_BLOCK"])
        else:
            raise ValueError(f"unknown sort kind {kind!r}")
        if R * max(self.nb if kind != "split1_global" else 1, 1) > INT32_MAX:
            raise LimitError(f"{R} digits x {self.nb} tiles of counts exceed the int32 limit {INT32_MAX}")

    # --8<-- [start:passes]
    def max_key(self, d_keys) -> int:
        """The largest key: only its significant bits need sorting (the early exit)."""
        n, sb = self.n, self.params["SCAN_BLOCK"]
        self.d_max.copy_to_device(np.zeros(1, np.uint32))
        self.K("max_reduce", (min(ceil_div(n, sb), 4096),), (sb,), d_keys, _i(n), self.d_max)
        return int(self.d_max.copy_to_host()[0])

    def passes(self, max_key: int) -> int:
        return ceil_div(int(max_key).bit_length(), self.bits)

    def sort(self, d_keys_in, d_vals_in=None, iota: bool = False, max_key: int | None = None, out=None):
        """Sort ``d_keys_in`` (left unchanged); values come from ``d_vals_in`` or, with ``iota``,
        are the input positions (an argsort). Returns the device arrays holding the result.

        A caller that already knows an upper bound of the keys passes it as ``max_key`` (no
        reduction, no host readback); ``out = (keys, values)`` makes the last pass write there
        instead of into the plan's buffers (no copy afterwards)."""
        n, hv, K = self.n, self.has_vals, self.K
        if n == 0:
            return self.keys[0][:0], self.vals[0][:0] if hv else None
        if n > 1 and max_key is None:
            max_key = self.max_key(d_keys_in)
        passes = self.passes(max_key) if n > 1 else 0
        # The first pass reads the input where it is (no copy); values start as positions
        # (written into the buffer the first pass does not write) or as the caller's.
        ks, vs = d_keys_in, self.vals[1]
        if hv and iota:
            K("iota", grid_1d(n, EW_BLOCK), (EW_BLOCK,), self.vals[1 if passes else 0], _i(n))
        elif hv:
            vs = d_vals_in
        if passes == 0:  # nothing to sort (n <= 1, or every key is 0): the result is the input
            ko, vo = out if out is not None else (self.keys[0], self.vals[0])
            ko[:n].copy_to_device(d_keys_in)
            if hv and (out is not None or not iota):
                vo[:n].copy_to_device(self.vals[0][:n] if iota else d_vals_in)
            self.passes_run = 0
            return ko[:n], vo[:n] if hv else None
        dst = 0
        for p in range(passes):
            kd, vd = (out if out is not None and p == passes - 1 else (self.keys[dst], self.vals[dst]))
            self.one_pass(p * self.bits, ks, vs, kd, vd)
            ks, vs = kd, vd
            dst = 1 - dst
        self.passes_run = passes
        return ks[:n], vs[:n] if hv else None

    def one_pass(self, shift, ks, vs, kd, vd):
        K, n, hv = self.K, _i(self.n), _i(self.has_vals)
        if self.kind == "split1_global":
            g = grid_1d(self.n, EW_BLOCK)
            K("split_flags", g, (EW_BLOCK,), ks, n, _i(shift), self.flags)
            self.scan.run(self.flags, self.pos)
            K("split_scatter", g, (EW_BLOCK,), ks, vs, kd, vd, self.pos, self.flags, n, _i(shift), hv)
        elif self.kind == "tile":
            nb, B = _i(self.nb), self.params["BLOCK"]
            K("tile_sort", (self.nb,), (B,), ks, vs, self.tkeys, self.tvals, self.counts, self.starts, n, _i(shift), nb, hv)
            self.scan.run(self.counts, self.counts)
            K("tile_scatter", (self.nb,), (B,), self.tkeys, self.tvals, kd, vd, self.counts, self.starts, n, _i(shift), nb, hv)
        else:
            nb, B = _i(self.nb), self.params["BLOCK"]
            K("upsweep", (self.nb,), (B,), ks, self.counts, n, _i(shift), nb)
            self.scan.run(self.counts, self.counts)
            K("downsweep", (self.nb,), (B,), ks, vs, kd, vd, self.counts, n, _i(shift), nb, hv)
    # --8<-- [end:passes]


def plan_factory(kind: str, backend: str):
    """The ``run`` callable of a registry entry: ``(n, has_vals, params) -> SortPlan``."""

    def make(n: int, has_vals: bool, params: dict) -> SortPlan:
        return SortPlan(kind, backend, n, has_vals, params)

    make.kind, make.backend = kind, backend
    return make


# ----------------------------------------------------------------------------- distinct


# --8<-- [start:distinct]
class DistinctPlan:
    """distinct = sort, flag the first key of each run, exclusive scan of the flags, compact."""

    def __init__(self, sort_plan: SortPlan):
        from numba import cuda

        self.sp = sort_plan
        n = sort_plan.n
        self.flags = cuda.device_array(max(n, 1), np.int32)
        self.pos = cuda.device_array(max(n, 1), np.int32)
        self.out = cuda.device_array(max(n, 1), np.uint32)
        self.scan = ScanPlan(sort_plan.K, n, sort_plan.params["SCAN_BLOCK"])

    def run(self, d_keys_in):
        """Returns (device array with the distinct keys first, their count)."""
        sp, K, n = self.sp, self.sp.K, self.sp.n
        if n == 0:
            return self.out, 0
        keys, _ = sp.sort(d_keys_in)
        g = grid_1d(n, EW_BLOCK)
        K("head_flags", g, (EW_BLOCK,), keys, _i(n), self.flags)
        self.scan.run(self.flags, self.pos)
        K("compact", g, (EW_BLOCK,), keys, self.flags, self.pos, self.out, _i(n))
        last = np.empty(1, np.int32), np.empty(1, np.int32)
        self.pos[n - 1:n].copy_to_host(last[0])
        self.flags[n - 1:n].copy_to_host(last[1])
        return self.out, int(last[0][0] + last[1][0])
# --8<-- [end:distinct]


# ----------------------------------------------------------------------------- the CPU baseline


class CpuPlan:
    """numpy on the host, with the :class:`SortPlan` interface: the seed's CPU baseline."""

    kind, backend = "cpu", "cpu"

    def __init__(self, n: int, has_vals: bool, params: dict):
        self.n, self.has_vals, self.params, self.passes_run = n, has_vals, dict(params), 0

    @staticmethod
    def _host(a):
        return a.copy_to_host() if hasattr(a, "copy_to_host") else np.asarray(a)

    def sort(self, d_keys_in, d_vals_in=None, iota: bool = False):
        keys = self._host(d_keys_in)[: self.n]
        if not self.has_vals:
            return np.sort(keys, kind="stable"), None
        perm = np.argsort(keys, kind="stable")
        vals = perm.astype(np.uint32) if iota else self._host(d_vals_in)[perm]
        return keys[perm], vals

    def distinct(self, d_keys_in):
        out = np.unique(self._host(d_keys_in)[: self.n])
        return out, out.size


def cpu_factory(n: int, has_vals: bool, params: dict) -> CpuPlan:
    return CpuPlan(n, has_vals, params)


cpu_factory.kind, cpu_factory.backend = "cpu", "cpu"


def distinct_plan(plan):
    """The distinct pipeline for a sort plan (the CPU plan does it with numpy.unique)."""
    if isinstance(plan, CpuPlan):
        return type("CpuDistinct", (), {"run": staticmethod(plan.distinct)})()
    return DistinctPlan(plan)
