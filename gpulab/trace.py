"""See the memory without a GPU: a warp-level access tracer on numba's CUDA simulator.

[`run`][gpulab.trace.run] launches a numba kernel on the simulator exactly as
`kernel[griddim, blockdim](*args)` would (the same results land in the same arrays) and records
every access each thread makes to global memory (the arrays passed in), shared memory
(`cuda.shared.array`, static and dynamic) and constant memory (`cuda.const.array_like`). It
then groups the accesses into warp-wide *requests* and counts them the way Nsight Compute does:

| count | what it is |
|---|---|
| `global_load_requests`, `global_store_requests` | one per warp-wide execution of one load / store instruction |
| `global_load_sectors`, `global_store_sectors` | per request, the distinct 32-byte sectors its lanes touch (every array starts on a 256-byte boundary, as `cudaMalloc` returns) |
| `shared_requests` | one per warp-wide shared load or store |
| `shared_wavefronts` | per request, the largest number of distinct 4-byte words one of the 32 banks must deliver (one word read by many lanes is a broadcast: it counts once) |
| `constant_requests` | one per warp-wide constant load |
| `constant_wavefronts` | per request, the distinct addresses it reads (the constant cache serves one address at a time) |

Examples:
    Stride-1 float32 loads: each warp touches 32 × 4 bytes = 4 sectors per request.

    >>> import numpy as np
    >>> from numba import cuda
    >>> from gpulab import trace
    >>> @cuda.jit
    ... def copy(src, dst):
    ...     i = cuda.grid(1)
    ...     if i < src.size:
    ...         dst[i] = src[i]
    >>> src, dst = np.arange(64, dtype=np.float32), np.zeros(64, dtype=np.float32)
    >>> report = trace.run(copy, 2, 32, src, dst)
    >>> bool((dst == src).all()), report.totals["global_load_requests"], report.totals["global_load_sectors"]
    (True, 2, 8)

How requests are formed. The lanes of a warp are the threads of a block with linear index
`x + bx·(y + by·z)` in `[32w, 32w + 32)`. Each thread counts its own executions of each
(source line, array, load/store); the *k*-th executions of that triple by the lanes of one warp
form one request. That is what the hardware does while the warp runs converged: for
straight-line code, branches, early returns and loops, including loops whose trip count differs
between lanes (the request of iteration *k* has the lanes still looping: the active lanes, as
on the hardware). It is an approximation where one line holds the same access to the same
array on two divergent paths (`x = A[i] if c else A[j]`: the hardware issues two
instructions, here they merge into one request), where a line's accesses run in a
lane-dependent order, and where the lanes of a warp drift apart (independent thread scheduling
may split what is counted here as one request into several).

Wider accesses. An 8- or 16-byte element (float64, int64, complex64 ...) is one access that
covers 2 or 4 consecutive 4-byte words: in global memory it counts every sector those bytes
touch (a warp of stride-1 float64 loads: 8 sectors); in shared memory each of its words counts
in its own bank, so a conflict-free warp of 8-byte loads needs 2 wavefronts and of 16-byte
loads 4, as on the hardware. The hardware serves them per half- and quarter-warp, and here
the whole warp's words are spread over the banks at once: where the lanes of one half-warp
collide the count here is a lower bound of the hardware's. In constant memory it is one address.

Constant memory is what `cuda.const.array_like` returns and every array a kernel captures (an
array global of its module, an array in its closure): numba compiles those into constant
memory too. Not traced: local arrays (`cuda.local.array`, registers or local memory), atomics
(they run, but are counted nowhere), and an array a kernel reaches other than through its
arguments, `cuda.shared.array` or its own module's globals and closure (an array global of
another module that a device function reads). Slices and views taken in a kernel
(`A[i, :]`, `A.T`) are traced: their elements keep their offsets in the array they view. A
thread's assignment of a whole slice (`row[:] = 0`) counts as one access covering all its
elements. Two arguments that are views of one host buffer count as two arrays.

Speed: a traced run takes about twice the plain simulator's CPU time (matmul's `naive`,
`coalesced`, `shared` and `register` at the tour size 37×29×41: 1.8 to 2.1 times), so a
chapter's whole ladder at its simulator tour size traces in seconds to a few minutes (`gpulab
trace radix`, the slowest, took 76 s on two shared CPU cores, `gpulab trace matmul` 16 s).
"""

from __future__ import annotations

import inspect
import linecache
import re
import sys
import threading
from collections import defaultdict
from contextlib import contextmanager
from dataclasses import dataclass, field

import numpy as np

from gpulab.errors import BackendUnavailable

__all__ = ["COUNTS", "Report", "Recorder", "run", "recording", "merge", "trace_chapter", "format_table"]

COUNTS = ("global_load_requests", "global_load_sectors", "global_store_requests", "global_store_sectors",
          "shared_requests", "shared_wavefronts", "constant_requests", "constant_wavefronts")
SECTOR_BYTES = 32
BANKS = 32
WORD_BYTES = 4
LOAD, STORE = 0, 1

_current: "_Launch | None" = None  # the launch being traced (the simulator runs one at a time)
_alloc_lock = threading.Lock()
_SIM_FILES: tuple[str, ...] = ()  # the simulator's own files: accesses from there (atomics) are not counted


# --------------------------------------------------------------------------- the traced array


class _ArrayInfo:
    """One traced allocation: its name, memory space and element size (hashed by identity)."""

    __slots__ = ("name", "space", "itemsize")

    def __init__(self, name: str, space: str, itemsize: int):
        self.name, self.space, self.itemsize = name, space, itemsize


def _byte_offsets(a: np.ndarray) -> np.ndarray:
    """Each element's byte offset from the allocation's first byte."""
    o = np.zeros(a.shape, dtype=np.int64)
    for d, (n, s) in enumerate(zip(a.shape, a.strides)):
        o += (np.arange(n, dtype=np.int64) * s).reshape((n,) + (1,) * (a.ndim - d - 1))
    return o - o.min() if o.size else o


class _Traced:
    """An array seen by kernel code: indexing reads and writes the real array and records the
    element offsets touched, with the source line of the access."""

    __slots__ = ("_a", "_o", "_i")

    def __init__(self, a: np.ndarray, offsets: np.ndarray, info: _ArrayInfo):
        self._a, self._o, self._i = a, offsets, info

    def __getitem__(self, idx):
        if type(idx) is _Traced:
            idx = idx._a
        v = self._a[idx]
        o = self._o[idx]
        if type(o) is np.ndarray and np.may_share_memory(v, self._a):
            return _Traced(v, o, self._i)  # a view: no memory is read until it is indexed
        _record(self._i, o, LOAD, sys._getframe(1))
        return v

    def __setitem__(self, idx, value):
        frame = sys._getframe(1)
        if type(idx) is _Traced:
            idx = idx._a
        if type(value) is _Traced:  # row[:] = other_row: the source is read too
            _record(value._i, value._o, LOAD, frame)
            value = value._a
        self._a[idx] = value
        _record(self._i, self._o[idx], STORE, frame)

    def __getattr__(self, name):  # shape, size, dtype, ndim ...
        return getattr(self._a, name)

    @property
    def T(self):
        return _Traced(self._a.T, self._o.T, self._i)

    def transpose(self, *axes):
        return _Traced(self._a.transpose(*axes), self._o.transpose(*axes), self._i)

    def __len__(self):
        return len(self._a)

    def __array__(self, dtype=None, copy=None):  # (numpy calls on the whole array: not traced)
        return self._a if dtype is None else self._a.astype(dtype)


def _record(info: _ArrayInfo, offsets, kind: int, frame) -> None:
    launch = _current
    if launch is None:
        return
    code = frame.f_code
    filename = code.co_filename
    if filename in _SIM_FILES:
        return
    t = threading.current_thread()
    state = t.__dict__.get("_gpulab_trace")
    if state is None:
        tid = getattr(t, "thread_id", None)
        if tid is None:  # not a simulated CUDA thread
            return
        b = t.blockIdx
        state = t._gpulab_trace = ({}, (b.x, b.y, b.z, tid // 32))
    counts, warp = state
    key = (filename, frame.f_lineno, info, kind)
    k = counts.get(key, 0)
    counts[key] = k + 1
    launch.events.append((warp, key, k, offsets))


# --------------------------------------------------------------------------- one traced launch


@dataclass
class Report:
    """The counts of one kernel (one launch, or several merged with [`merge`][gpulab.trace.merge]).

    Attributes:
        kernel: the kernel's Python name.
        launches: how many launches the counts add up.
        totals: the eight counts (`COUNTS`) of the whole kernel.
        by_line: the same counts per `(source file, line, array name)`.
        outputs: distinct global elements the kernel stored (its useful output, the
            denominator of `bytes_per_output`).
    """

    kernel: str
    launches: int = 1
    totals: dict = field(default_factory=lambda: dict.fromkeys(COUNTS, 0))
    by_line: dict = field(default_factory=dict)
    outputs: int = 0

    def per_request(self, what: str) -> float | None:
        """`"load"`, `"store"` (sectors per global request), `"shared"` or `"constant"`
        (wavefronts per request); `None` where there was no request."""
        n, d = {"load": ("global_load_sectors", "global_load_requests"),
                "store": ("global_store_sectors", "global_store_requests"),
                "shared": ("shared_wavefronts", "shared_requests"),
                "constant": ("constant_wavefronts", "constant_requests")}[what]
        return self.totals[n] / self.totals[d] if self.totals[d] else None

    @property
    def bytes_moved(self) -> int:
        """Global memory traffic: every sector loaded or stored, 32 bytes each."""
        return SECTOR_BYTES * (self.totals["global_load_sectors"] + self.totals["global_store_sectors"])

    @property
    def bytes_per_output(self) -> float | None:
        return self.bytes_moved / self.outputs if self.outputs else None

    def as_dict(self) -> dict:
        """JSON-ready: the totals, the ratios, and `by_line` as a list of rows."""
        return {"kernel": self.kernel, "launches": self.launches, "totals": dict(self.totals),
                "sectors_per_request": {"load": self.per_request("load"), "store": self.per_request("store")},
                "shared_wavefronts_per_request": self.per_request("shared"),
                "constant_wavefronts_per_request": self.per_request("constant"),
                "outputs": self.outputs, "bytes_moved": self.bytes_moved, "bytes_per_output": self.bytes_per_output,
                "by_line": [{"file": _short(f), "line": ln, "array": a, **c}
                            for (f, ln, a), c in sorted(self.by_line.items())]}


def _short(filename: str) -> str:
    """A source file relative to the checkout gpulab runs from (`gpulab/matmul/kernels_numba.py`)."""
    import os

    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    path = os.path.abspath(filename)
    return os.path.relpath(path, root) if path.startswith(root + os.sep) else filename


class _Launch:
    def __init__(self, kernel: str):
        self.kernel = kernel
        self.events: list = []
        self.constants: dict[int, _Traced] = {}

    def report(self) -> Report:
        requests: dict = defaultdict(list)
        for warp, key, k, offsets in self.events:
            requests[(warp, key, k)].append(offsets)
        rep = Report(self.kernel)
        stored: dict[_ArrayInfo, set] = defaultdict(set)
        for (_, (filename, line, info, kind), _), offs in requests.items():
            offs = [int(x) for o in offs for x in (o.ravel().tolist() if type(o) is np.ndarray else (o,))]
            if not offs:  # (an empty slice: no memory touched)
                continue
            size = info.itemsize
            if info.space == "global":
                units = {s for o in offs for s in range(o // SECTOR_BYTES, (o + size - 1) // SECTOR_BYTES + 1)}
                names = ("global_store_requests", "global_store_sectors") if kind == STORE else \
                    ("global_load_requests", "global_load_sectors")
                cost = len(units)
                if kind == STORE:
                    stored[info].update(offs)
            elif info.space == "shared":
                words = {w for o in offs for w in range(o // WORD_BYTES, (o + size - 1) // WORD_BYTES + 1)}
                per_bank: dict[int, int] = defaultdict(int)
                for w in words:
                    per_bank[w % BANKS] += 1
                names, cost = ("shared_requests", "shared_wavefronts"), max(per_bank.values())
            else:
                names, cost = ("constant_requests", "constant_wavefronts"), len(set(offs))
            row = rep.by_line.setdefault((filename, line, info.name), dict.fromkeys(COUNTS, 0))
            for r in (row, rep.totals):
                r[names[0]] += 1
                r[names[1]] += cost
        rep.outputs = sum(len(s) for s in stored.values())
        return rep


def _name_on_line(frame, fallback: str) -> str:
    """The variable an allocation is assigned to (`As = cuda.shared.array(...)` → `As`)."""
    line = linecache.getline(frame.f_code.co_filename, frame.f_lineno)
    m = re.match(r"\s*([A-Za-z_]\w*)\s*=", line)
    return m.group(1) if m else f"{fallback}@{frame.f_lineno}"


def _shared_array(self, shape, dtype, alignment=None):
    """`cuda.shared.array` under the tracer: the simulator's allocation (one array per source
    line, shared by the block), returned as a traced array."""
    from numba.core import types
    from numba.np import numpy_support

    if alignment is not None:
        raise RuntimeError("Array alignment is not supported in cudasim")
    if isinstance(dtype, types.Type):
        dtype = numpy_support.as_dtype(dtype)
    frame = sys._getframe(1)
    caller = (frame.f_code.co_filename, frame.f_lineno)
    with _alloc_lock:
        res = self._allocations.get(caller)
        if res is None:
            if shape == 0:  # dynamic shared memory: every such array views the same buffer
                a = np.frombuffer(self._dynshared.data, dtype=dtype, count=self._dynshared_size // dtype.itemsize)
            else:
                a = np.empty(shape, dtype)
            info = _ArrayInfo(_name_on_line(frame, "shared"), "shared", a.dtype.itemsize)
            res = self._allocations[caller] = _Traced(a, _byte_offsets(a), info)
    return res


def _const_array_like(self, ary):
    launch = _current
    if launch is None:
        return ary
    with _alloc_lock:
        res = launch.constants.get(id(ary))
        if res is None:
            a = np.asarray(ary)
            info = _ArrayInfo(_name_on_line(sys._getframe(1), "const"), "constant", a.dtype.itemsize)
            res = launch.constants[id(ary)] = _Traced(a, _byte_offsets(a), info)
    return res


def _traced_arg(value, name: str):
    from numba.cuda.simulator.cudadrv.devicearray import FakeCUDAArray

    a = value._ary if isinstance(value, FakeCUDAArray) else value
    if isinstance(a, np.ndarray) and a.ndim > 0:
        return _Traced(a, _byte_offsets(a), _ArrayInfo(name, "global", a.dtype.itemsize))
    return value


def _captured_as_constant(fn):
    """Trace the arrays a kernel captures (its module's array globals, its closure's arrays) as
    constant memory, which is where numba places them; returns the function that undoes it."""
    swaps = []
    g = fn.__globals__
    for name, value in list(g.items()):
        if type(value) is np.ndarray and value.ndim > 0:
            swaps.append((g.__setitem__, name, value))
    for name, cell in zip(fn.__code__.co_freevars, fn.__closure__ or ()):
        try:
            value = cell.cell_contents
        except ValueError:  # (an empty cell)
            continue
        if type(value) is np.ndarray and value.ndim > 0:
            swaps.append((lambda _, v, cell=cell: setattr(cell, "cell_contents", v), name, value))
    for put, name, value in swaps:
        put(name, _Traced(value, _byte_offsets(value), _ArrayInfo(name, "constant", value.dtype.itemsize)))

    def restore():
        for put, name, value in swaps:
            put(name, value)

    return restore


class Recorder:
    """What [`recording`][gpulab.trace.recording] collects: one report per kernel launch."""

    def __init__(self):
        self.reports: list[Report] = []


@contextmanager
def recording():
    """Trace every kernel launched on the simulator inside the `with` block.

    Yields a [`Recorder`][gpulab.trace.Recorder] whose `.reports` holds one
    [`Report`][gpulab.trace.Report] per launch, in launch order ([`merge`][gpulab.trace.merge]
    adds up those of one kernel). This is how `gpulab trace` traces a chapter's variants
    through their ordinary host code.

    Raises:
        BackendUnavailable: not on numba's simulator (the tracer runs only there).
    """
    global _SIM_FILES
    from gpulab import device

    if not device.on_simulator():
        raise BackendUnavailable("the memory tracer runs kernels on numba's CUDA simulator; "
                                 "run with GPULAB_DEVICE=sim")
    from numba.cuda.simulator import kernel as simkernel, kernelapi

    _SIM_FILES = (kernelapi.__file__,)
    recorder = Recorder()
    original_call = simkernel.FakeCUDAKernel.__call__

    def traced_call(self, *args):
        global _current
        if self._device or simkernel._get_kernel_context():
            return original_call(self, *args)  # a device function: its accesses are the caller's
        try:
            names = list(inspect.signature(self.fn).parameters)
        except (TypeError, ValueError):
            names = []
        names += [f"arg{i}" for i in range(len(names), len(args))]
        launch = _Launch(getattr(self.fn, "__name__", "kernel"))
        traced = [_traced_arg(a, n) for a, n in zip(args, names)]
        restore = _captured_as_constant(self.fn)
        _current = launch
        try:
            result = original_call(self, *traced)
        finally:
            _current = None
            restore()
        recorder.reports.append(launch.report())  # (not for a launch that raised)
        return result

    patches = [(simkernel.FakeCUDAKernel, "__call__", traced_call),
               (kernelapi.FakeCUDAShared, "array", _shared_array),
               (kernelapi.FakeCUDAConst, "array_like", _const_array_like)]
    saved = [(cls, name, cls.__dict__[name]) for cls, name, _ in patches]
    for cls, name, fn in patches:
        setattr(cls, name, fn)
    try:
        yield recorder
    finally:
        for cls, name, fn in saved:
            setattr(cls, name, fn)


def run(kernel, griddim, blockdim, *args, shared_bytes: int = 0) -> Report:
    """Run `kernel[griddim, blockdim](*args)` on the simulator under the tracer.

    Args:
        kernel: a `@cuda.jit` kernel.
        griddim: the grid, as for `kernel[griddim, blockdim]`.
        blockdim: the block.
        *args: the kernel's arguments (numpy arrays and simulator device arrays are traced as
            global memory; results land in them as without the tracer).
        shared_bytes: dynamic shared memory per block (the 4th launch parameter).

    Returns:
        The launch's [`Report`][gpulab.trace.Report].

    Raises:
        BackendUnavailable: not on numba's simulator.
    """
    with recording() as rec:
        kernel[griddim, blockdim, 0, shared_bytes](*args)
    return rec.reports[-1]


def merge(reports: list[Report]) -> list[Report]:
    """Add up the reports of the same kernel (in order of first launch)."""
    out: dict[str, Report] = {}
    for r in reports:
        m = out.get(r.kernel)
        if m is None:
            out[r.kernel] = Report(r.kernel, r.launches, dict(r.totals), {k: dict(v) for k, v in r.by_line.items()},
                                   r.outputs)
            continue
        m.launches += r.launches
        m.outputs += r.outputs
        for c in COUNTS:
            m.totals[c] += r.totals[c]
        for k, v in r.by_line.items():
            row = m.by_line.setdefault(k, dict.fromkeys(COUNTS, 0))
            for c in COUNTS:
                row[c] += v[c]
    return list(out.values())


# --------------------------------------------------------------------------- a chapter's variants


def trace_chapter(name: str, variants: list[str] | None = None) -> dict:
    """Trace each numba variant of chapter `name` once at its simulator tour size.

    Returns a JSON-ready dict: `rows` (one per variant and kernel: the counts, ratios and
    per-line counts of [`Report.as_dict`][gpulab.trace.Report.as_dict], plus `variant`, `size`
    and `seconds`, the traced run's time), and `not_traced` (variants of other backends and
    why). "Bytes per output" is the kernel's global traffic (32 bytes a sector, loads and
    stores) over the distinct global elements it stored. `variants`: only these names; an unknown one raises a `GpulabError` naming the known.
    """
    from gpulab import chapters, progress
    from gpulab.errors import GpulabError

    try:
        chapter = chapters.get(name)
    except KeyError as exc:  # (its message names the chapters there are)
        raise GpulabError(exc.args[0]) from None
    numba_names = chapter.registry.names("numba")
    unknown = [v for v in variants or () if v not in numba_names]
    if unknown:
        raise GpulabError(f"{name}: no numba variant {unknown[0]!r} to trace; known: {', '.join(numba_names)}")

    rows, not_traced = [], []
    cases = [c for c in chapter.tour_cases(True) if not variants or c.variant.name in variants]
    with progress.bar(total=len(cases), desc=f"trace {name}", unit="variant") as bar:
        for case in cases:
            _trace_case(case, rows, not_traced)
            bar.update(1)
    return {"chapter": name, "rows": rows, "not_traced": not_traced}


def _trace_case(case, rows: list, not_traced: list) -> None:
    import time

    v = case.variant
    if v.backend != "numba":
        why = ("CUDA C cannot run on numba's simulator" if v.backend == "cuda-c" else "runs on the CPU, not in a kernel")
        not_traced.append({"variant": v.name, "backend": v.backend, "reason": why})
        return
    reason = v.unavailable_reason()
    if reason:
        not_traced.append({"variant": v.name, "backend": v.backend, "reason": reason})
        return
    state = case.setup()
    launch = case.runner(v, state)
    t0 = time.perf_counter()
    with recording() as rec:
        launch()
    seconds = time.perf_counter() - t0
    for rep in merge(rec.reports):
        d = rep.as_dict()
        rows.append({"variant": v.name, "size": case.label, "seconds": seconds, **d})


def format_table(result: dict, lines: bool = False) -> str:
    """`gpulab trace`'s table: one row per variant and kernel (`lines`: and under each, one
    per source line and array)."""
    def f(x, spec=".3g"):
        return "—" if x is None else format(x, spec)

    header = ["variant", "kernel", "launches", "ld req", "ld sect/req", "st req", "st sect/req",
              "shared wf/req", "const wf/req", "bytes/output"]
    def ratio(c, n, d):
        return f(c[n] / c[d] if c[d] else None)

    table = [header]
    for r in result["rows"]:
        table.append([r["variant"], r["kernel"], str(r["launches"]), str(r["totals"]["global_load_requests"]),
                      f(r["sectors_per_request"]["load"]), str(r["totals"]["global_store_requests"]),
                      f(r["sectors_per_request"]["store"]), f(r["shared_wavefronts_per_request"]),
                      f(r["constant_wavefronts_per_request"]), f(r["bytes_per_output"])])
        for c in r["by_line"] if lines else ():
            table.append(["", f"  {c['file'].rsplit('/', 1)[-1]}:{c['line']} {c['array']}", "",
                          str(c["global_load_requests"]), ratio(c, "global_load_sectors", "global_load_requests"),
                          str(c["global_store_requests"]), ratio(c, "global_store_sectors", "global_store_requests"),
                          ratio(c, "shared_wavefronts", "shared_requests"),
                          ratio(c, "constant_wavefronts", "constant_requests"), ""])
    widths = [max(len(t[i]) for t in table) for i in range(len(header))]
    lines = ["  ".join(c.ljust(w) for c, w in zip(t, widths)).rstrip() for t in table]
    lines.insert(1, "  ".join("-" * w for w in widths))
    sizes = sorted({r["size"] for r in result["rows"]})
    out = [f"gpulab trace {result['chapter']} (numba's simulator; size {', '.join(sizes) or '—'}; "
           "sectors are 32 B, wavefronts as Nsight Compute counts them)", ""] + lines
    if result["not_traced"]:
        by_reason: dict = {}
        for n in result["not_traced"]:
            by_reason.setdefault(n["reason"], []).append(f"{n['variant']} [{n['backend']}]")
        out += [""] + [f"not traced ({r}): {', '.join(vs)}" for r, vs in by_reason.items()]
    return "\n".join(out)
