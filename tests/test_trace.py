"""gpulab.trace: warp-level counts of kernels with known answers, a chapter's ladder, `gpulab trace`."""

from __future__ import annotations

import inspect
import json

import numpy as np
import pytest

from gpulab import device, trace  # (gpulab first: it chooses the simulator before numba loads)
from numba import cuda, float32, float64, complex128  # noqa: E402

pytestmark = pytest.mark.skipif(not device.on_simulator(), reason="the tracer runs on numba's simulator")


def line_of(kernel, text: str) -> int:
    """The source line of `kernel` that contains `text`."""
    lines, first = inspect.getsourcelines(kernel.py_func)
    [n] = [first + i for i, ln in enumerate(lines) if text in ln]
    return n


# ----------------------------------------------------------------------------- global memory


@cuda.jit
def gather(src, dst, stride):
    i = cuda.grid(1)
    if i < dst.size:
        dst[i] = src[i * stride]


@pytest.mark.parametrize("dtype,stride,n,sectors", [
    (np.float32, 1, 64, 4),    # 32 lanes × 4 B = 128 B: 4 sectors
    (np.float64, 1, 64, 8),    # 32 × 8 B: 8 sectors
    (np.float32, 32, 64, 32),  # every lane its own sector
    (np.float32, 1, 20, 3),    # a partial warp of 20 lanes: 80 B
])
def test_global_sectors_per_request(dtype, stride, n, sectors):
    rng = np.random.default_rng()
    src = rng.random(n * stride).astype(dtype)
    dst = np.zeros(n, dtype)
    rep = trace.run(gather, (n + 31) // 32, 32, src, dst, stride)
    np.testing.assert_array_equal(dst, src[::stride][:n])  # the kernel's result, as without the tracer
    warps = (n + 31) // 32
    assert rep.totals["global_load_requests"] == warps
    assert rep.per_request("load") == sectors
    assert rep.outputs == n
    load = rep.by_line[(gather.py_func.__code__.co_filename, line_of(gather, "dst[i] = src"), "src")]
    assert load["global_load_requests"] == warps and load["global_load_sectors"] == warps * sectors


def test_views_and_lane_dependent_loops():
    @cuda.jit
    def k(A, out):
        lane = cuda.threadIdx.x
        row = A[1, :]               # a view: traced through, offsets of row 1
        acc = row[lane]             # 32 consecutive floats of row 1: 4 sectors
        for j in range(lane):       # lane-dependent trip count: iteration j has lanes j+1..31
            acc += A[0, j]          # all active lanes read one address: 1 sector
        out[lane] = acc

    rng = np.random.default_rng()
    A = rng.random((2, 40)).astype(np.float32)
    out = np.zeros(32, np.float32)
    rep = trace.run(k, 1, 32, A, out)
    expect = A[1, :32] + np.array([A[0, :j].sum() for j in range(32)], np.float32)
    np.testing.assert_allclose(out, expect, rtol=1e-5)
    f = k.py_func.__code__.co_filename
    assert rep.by_line[(f, line_of(k, "acc = row[lane]"), "A")]["global_load_sectors"] == 4
    loop = rep.by_line[(f, line_of(k, "acc += A[0, j]"), "A")]
    assert loop["global_load_requests"] == 31 and loop["global_load_sectors"] == 31
    assert rep.totals["global_store_requests"] == 1 and rep.totals["global_store_sectors"] == 4


# ----------------------------------------------------------------------------- shared memory


@cuda.jit
def shared_stride(out, stride):
    s = cuda.shared.array(2048, float32)
    t = cuda.threadIdx.x
    s[t * stride] = t
    cuda.syncthreads()
    out[t] = s[t * stride]


@pytest.mark.parametrize("stride,wavefronts", [(1, 1), (2, 2), (32, 32), (33, 1), (0, 1)])
def test_shared_wavefronts(stride, wavefronts):
    out = np.zeros(32, np.float32)
    rep = trace.run(shared_stride, 1, 32, out, stride)
    expect = np.arange(32, dtype=np.float32) if stride else np.full(32, out[0])
    np.testing.assert_array_equal(out, expect)
    assert rep.totals["shared_requests"] == 2  # one store, one load
    assert rep.per_request("shared") == wavefronts


@pytest.mark.parametrize("width,wavefronts", [(32, 32), (33, 1)])
def test_shared_transpose_padding(width, wavefronts):
    @cuda.jit
    def column(src, out):
        tile = cuda.shared.array((32, width), float32)  # (32, 33): the padded tile
        t = cuda.threadIdx.x
        for j in range(32):
            tile[j, t] = src[j, t]    # rows: conflict-free
        cuda.syncthreads()
        out[t] = tile[t, 0]           # a column: stride `width` words

    src = np.random.default_rng().random((32, 32)).astype(np.float32)
    out = np.zeros(32, np.float32)
    rep = trace.run(column, 1, 32, src, out)
    np.testing.assert_array_equal(out, src[:, 0])
    f = column.py_func.__code__.co_filename
    read = rep.by_line[(f, line_of(column, "out[t] = tile"), "tile")]
    assert read["shared_requests"] == 1 and read["shared_wavefronts"] == wavefronts
    assert rep.by_line[(f, line_of(column, "tile[j, t] ="), "tile")]["shared_wavefronts"] == 32  # 32 requests × 1


@pytest.mark.parametrize("dtype,wavefronts", [(float64, 2), (complex128, 4)])
def test_wide_shared_accesses(dtype, wavefronts):
    @cuda.jit
    def k(out):
        s = cuda.shared.array(32, dtype)
        t = cuda.threadIdx.x
        s[t] = t
        cuda.syncthreads()
        out[t] = s[t].real

    out = np.zeros(32, np.float64)
    rep = trace.run(k, 1, 32, out)
    np.testing.assert_array_equal(out, np.arange(32))
    assert rep.per_request("shared") == wavefronts  # 8 B: 2 words a lane; 16 B: 4


def test_dynamic_shared_memory():
    @cuda.jit
    def k(out):
        s = cuda.shared.array(0, float32)
        t = cuda.threadIdx.x
        s[2 * t] = t
        cuda.syncthreads()
        out[t] = s[2 * t]

    out = np.zeros(32, np.float32)
    rep = trace.run(k, 1, 32, out, shared_bytes=64 * 4)
    np.testing.assert_array_equal(out, np.arange(32))
    assert rep.totals["shared_requests"] == 2 and rep.per_request("shared") == 2


# ----------------------------------------------------------------------------- constant memory


def constant_kernel(table):
    @cuda.jit
    def k(idx, out):
        c = cuda.const.array_like(table)
        t = cuda.threadIdx.x
        out[t] = c[idx[t]]

    return k


@pytest.mark.parametrize("same,wavefronts", [(True, 1), (False, 32)])
def test_constant_wavefronts(same, wavefronts):
    rng = np.random.default_rng()
    table = rng.random(64).astype(np.float32)
    idx = np.full(32, rng.integers(64), np.int32) if same else rng.permutation(64)[:32].astype(np.int32)
    out = np.zeros(32, np.float32)
    rep = trace.run(constant_kernel(table), 1, 32, idx, out)
    np.testing.assert_array_equal(out, table[idx])
    assert rep.totals["constant_requests"] == 1 and rep.totals["constant_wavefronts"] == wavefronts


# ----------------------------------------------------------------------------- what still works


def test_warp_intrinsics_atomics_and_device_arrays():
    @cuda.jit
    def k(x, total):
        v = x[cuda.grid(1)]
        for d in (16, 8, 4, 2, 1):
            v += cuda.shfl_down_sync(0xFFFFFFFF, v, d)
        if cuda.threadIdx.x == 0:
            cuda.atomic.add(total, 0, v)  # runs; atomics are not counted

    rng = np.random.default_rng()
    x = rng.integers(0, 100, 64).astype(np.int64)
    d_total = cuda.to_device(np.zeros(1, np.int64))
    rep = trace.run(k, 2, 32, cuda.to_device(x), d_total)
    assert d_total.copy_to_host()[0] == x.sum()
    assert rep.totals["global_load_requests"] == 2 and rep.per_request("load") == 8
    assert rep.totals["global_store_requests"] == 0 and rep.outputs == 0


def test_not_traced_outside_recording():
    src, dst = np.arange(32, dtype=np.float32), np.zeros(32, np.float32)
    with trace.recording() as rec:
        gather[1, 32](src, dst, 1)
        gather[1, 32](src, dst, 1)
    gather[1, 32](src, dst, 1)  # the simulator is itself again
    assert len(rec.reports) == 2
    [merged] = trace.merge(rec.reports)
    assert merged.launches == 2 and merged.totals["global_load_sectors"] == 8


# ----------------------------------------------------------------------------- a chapter, the command


def test_matmul_coalesced_needs_fewer_sectors_than_naive():
    import gpulab.matmul as mm

    rng = np.random.default_rng()
    A, B = rng.random((17, 20), dtype=np.float32), rng.random((20, 18), dtype=np.float32)
    per = {}
    for v in ("naive", "coalesced", "shared"):
        with trace.recording() as rec:
            C = mm.matmul(A, B, variant=v)
        np.testing.assert_allclose(C, A @ B, rtol=1e-4)
        [rep] = trace.merge(rec.reports)
        per[v] = rep
    # naive: lanes walk down a column of A (80 bytes apart, a sector each); coalesced: along a row of B
    assert per["coalesced"].per_request("load") < per["naive"].per_request("load")
    # shared tiles: every global value is read once per tile instead of once per output
    assert per["shared"].totals["global_load_sectors"] < per["coalesced"].totals["global_load_sectors"]
    assert per["shared"].totals["shared_requests"] > 0 and per["naive"].totals["shared_requests"] == 0


def test_cli_trace_json(tmp_path):
    from tests.test_cli import gpulab

    p = gpulab("trace", "matmul", "coalesced", "--json", cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    out = json.loads(p.stdout)
    [row] = out["rows"]
    assert row["variant"] == "coalesced" and row["kernel"] == "matmul_coalesced"
    assert row["totals"]["global_load_requests"] > 0 and row["sectors_per_request"]["load"] >= 1
    assert any(n["backend"] == "cuda-c" and "simulator" in n["reason"] for n in out["not_traced"])
    # per line: the inner product's line of the kernel's source, both of its arrays
    from gpulab.matmul.kernels_numba import matmul_coalesced

    line = line_of(matmul_coalesced, "acc += A[row, k]")
    here = {(c["file"], c["line"], c["array"]) for c in row["by_line"]}
    assert {("gpulab/matmul/kernels_numba.py", line, "A"), ("gpulab/matmul/kernels_numba.py", line, "B")} <= here
    assert f"kernels_numba.py:{line} B" in trace.format_table(out, lines=True)


@pytest.mark.parametrize("args,fragments", [
    (["trace", "nope"], ["gpulab trace: unknown chapter 'nope'"]),
    (["trace", "matmul", "vec4"], ["gpulab trace: matmul: no numba variant 'vec4'", "known: naive"]),
])
def test_cli_trace_bad_input(args, fragments, tmp_path):
    from tests.test_cli import assert_one_line_error, gpulab

    assert_one_line_error(gpulab(*args, cwd=tmp_path), *fragments)


def test_docstring_example_runs():
    """The example on the API page is what the code returns."""
    import doctest

    result = doctest.testmod(trace, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE, report=True)
    assert result.attempted >= 5 and result.failed == 0, result


def test_a_failing_kernel_leaves_the_simulator_as_it_was():
    @cuda.jit
    def bad(x):
        x[cuda.threadIdx.x + 100] = 1  # out of bounds: the simulator raises

    x = np.zeros(4, np.float32)
    with pytest.raises(IndexError):
        trace.run(bad, 1, 4, x)
    src, dst = np.arange(32, dtype=np.float32), np.zeros(32, np.float32)
    gather[1, 32](src, dst, 1)  # untraced again, and still a working simulator
    np.testing.assert_array_equal(dst, src)
    assert trace.run(gather, 1, 32, src, dst, 1).totals["global_load_sectors"] == 4


TABLE = np.random.default_rng().random(64).astype(np.float32)  # numba compiles a captured array into constant memory


def test_captured_arrays_are_constant_memory():
    @cuda.jit
    def k(idx, out):
        t = cuda.threadIdx.x
        out[t] = TABLE[idx[t]]

    idx = np.arange(32, dtype=np.int32) * 2
    out = np.zeros(32, np.float32)
    rep = trace.run(k, 1, 32, idx, out)
    np.testing.assert_array_equal(out, TABLE[idx])
    assert rep.totals["constant_requests"] == 1 and rep.totals["constant_wavefronts"] == 32
    assert type(TABLE) is np.ndarray  # given back after the launch
