"""The shared machinery: device selection, launch arithmetic, registry, timing, benchmarks, CLI."""

import json
import os
import subprocess
import sys

import numpy as np
import pytest

from gpulab import benchmark, device
from gpulab.checking import poisoned, relative_error
from gpulab.errors import GpulabError, LimitError
from gpulab.launch import ceil_div, check_block, grid_1d, grid_2d
from gpulab.registry import Registry, Variant
from tests.conftest import ON_SIMULATOR

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _python(code, **env):
    e = {k: v for k, v in os.environ.items() if k not in ("GPULAB_DEVICE", "NUMBA_ENABLE_CUDASIM")}
    e.update(env)
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=e, cwd=ROOT)


def test_override_to_simulator_is_honoured():
    p = _python("import gpulab, os; print(gpulab.device.MODE, os.environ.get('NUMBA_ENABLE_CUDASIM'))", GPULAB_DEVICE="sim")
    assert p.stdout.split() == ["sim", "1"], p.stderr


def test_override_to_gpu_is_honoured():
    p = _python("import gpulab, os; print(gpulab.device.MODE, os.environ.get('NUMBA_ENABLE_CUDASIM'))", GPULAB_DEVICE="gpu")
    assert p.stdout.split() == ["gpu", "None"], p.stderr


def test_numba_switch_alone_selects_simulator():
    p = _python("import gpulab; print(gpulab.device.MODE)", NUMBA_ENABLE_CUDASIM="1")
    assert p.stdout.strip() == "sim", p.stderr


def test_bad_override_names_the_choices():
    p = _python("import gpulab", GPULAB_DEVICE="tpu")
    assert p.returncode != 0 and "expected one of auto, gpu, sim" in p.stderr


def test_importing_numba_first_with_the_other_setting_is_an_error():
    p = _python("import numba.cuda; import gpulab", GPULAB_DEVICE="sim")
    assert p.returncode != 0 and "Import gpulab before numba" in p.stderr


def test_auto_detection_matches_the_driver():
    assert device.MODE in ("gpu", "sim")
    if device._driver_device_count() == 0 and "GPULAB_DEVICE" not in os.environ:
        assert device.MODE == "sim"


def test_info_cli_prints_every_field():
    p = subprocess.run([sys.executable, "-m", "gpulab", "info"], capture_output=True, text=True, cwd=ROOT)
    assert p.returncode == 0, p.stderr
    for field in ("mode", "device", "compute capability", "SMs", "shared memory per block", "constant memory", "pycuda"):
        assert field in p.stdout


@pytest.mark.parametrize("a,b,expected", [(1, 1, 1), (0, 4, 0), (7, 8, 1), (8, 8, 1), (9, 8, 2), (1023, 256, 4)])
def test_ceil_div(a, b, expected):
    assert ceil_div(a, b) == expected


def test_grids_cover_everything_and_never_have_zero_blocks():
    assert grid_1d(0, 128) == (1,)
    assert grid_1d(129, 128) == (2,)
    assert grid_2d(rows=17, cols=33, block=(16, 8)) == (3, 3)


def test_block_limit():
    check_block(1024)
    with pytest.raises(LimitError, match="1025 threads exceeds the limit of 1024"):
        check_block(1025)


def test_registry_rejects_duplicates_and_names_known_variants():
    reg = Registry("demo", [Variant("a", "numba", ("global",), "lesson", run=lambda: None)])
    with pytest.raises(ValueError, match="registered twice"):
        reg.add(Variant("a", "numba", ("global",), "lesson", run=lambda: None))
    with pytest.raises(ValueError, match="unknown backend"):
        reg.add(Variant("b", "opencl", ("global",), "lesson", run=lambda: None))
    with pytest.raises(GpulabError, match=r"known: a\[numba\]"):
        reg.get("zzz")


def test_poison_and_relative_error():
    assert np.isnan(poisoned((2, 2), np.float32)).all()
    assert (poisoned(3, np.uint32) == 0xDEADBEEF).all()
    assert relative_error(np.array([1.0, np.nan]), np.array([1.0, 2.0])) == float("inf")
    assert relative_error(np.array([1.0, 2.0]), np.array([1.0, 2.0])) == 0.0
    with pytest.raises(ValueError, match="shape mismatch"):
        relative_error(np.ones(2), np.ones(3))


def test_timing_returns_positive_samples():
    from numba import cuda

    from gpulab.timing import measure

    d = cuda.to_device(np.zeros(4, np.float32))
    t = measure(lambda: d.copy_to_device(np.ones(4, np.float32)), warmup=1, repeat=3)
    assert len(t.samples_ms) == 3 and t.median_ms > 0
    assert t.clock == ("wall (simulator)" if ON_SIMULATOR else "cuda-event")


def test_measure_rounds_times_each_call_in_turns():
    from gpulab.timing import measure_rounds

    log = []
    runs = [lambda: log.append("a"), lambda: log.append("b")]
    ta, tb = measure_rounds(runs, warmups=[2, 1], repeat=7, rounds=3)
    assert len(ta.samples_ms) == 7 and len(tb.samples_ms) == 7 and ta.median_ms >= 0
    # warm-ups first, then rounds of 3, 2 and 2 samples of each call in turn
    assert "".join(log) == "aab" + "aaabbb" + "aabb" + "aabb"
    assert ta.clock == tb.clock == ("wall (simulator)" if ON_SIMULATOR else "cuda-event")
    with pytest.raises(ValueError, match="one warm-up count per call"):
        measure_rounds(runs, warmups=[1], repeat=2)


def test_benchmark_harness_writes_documented_json(tmp_path):
    from gpulab.matmul.bench import SPEC
    from gpulab.matmul.variants import REGISTRY

    variants = [REGISTRY.get("coalesced", "numba"), REGISTRY.get("shared", "cuda-c")]
    case = SPEC.cases(True)[:1]
    result = benchmark.run(SPEC, variants, quick=True, warmup=1, repeat=2, cases=case, progress=None)
    paths = benchmark.write(result, tmp_path)
    data = json.loads(paths[0].read_text())
    assert data["schema"] == benchmark.SCHEMA and data["chapter"] == "matmul"
    assert {"device", "versions", "date", "settings", "records"} <= set(data)
    rec = {(r["variant"], r["backend"]): r for r in data["records"]}
    ok = rec[("coalesced", "numba")]
    assert ok["check"] is True and ok["median_ms"] > 0 and ok["unit"] == "TFLOP/s" and len(ok["samples_ms"]) == 2
    for key in ("variant", "backend", "size", "median_ms", "throughput", "peer", "peer_median_ms", "ratio_to_peer",
                "public_median_ms", "public_over_kernel"):
        assert key in ok
    assert ok["public_median_ms"] > 0 and len(ok["public_samples_ms"]) == 2  # the public call on device inputs
    assert ok["public_over_kernel"] == ok["public_median_ms"] / ok["median_ms"]
    if ON_SIMULATOR:
        assert "real GPU" in rec[("shared", "cuda-c")]["skipped"]
    md = benchmark.format_markdown(data)
    assert md.startswith(f"| variant · backend | {case[0].label} |") and "| coalesced\u00a0·\u00a0numba |" in md
    assert '??? note "All 2 records"' in md and "    | size | variant | backend | median ms | public call ms |" in md


def test_compact_table_has_one_row_per_variant_and_one_column_per_size():
    def rec(variant, backend, label, tp, ratio, check=True):
        return {"label": label, "variant": variant, "backend": backend, "median_ms": 1.0 if tp else None,
                "throughput": tp, "unit": "X/s", "peer": "P", "peer_median_ms": 1.0, "ratio_to_peer": ratio,
                "ceiling": None, "ceiling_name": None, "ratio_to_ceiling": None, "check": check,
                "skipped": None if tp else "too big"}

    result = {"records": [rec("a", "numba", "n=1", 2.0, 0.5), rec("a", "numba", "n=2", 3.0, 0.75),
                          rec("b", "cuda-c", "n=1", 4.0, 40.0), rec("b", "cuda-c", "n=2", None, None),
                          rec("c", "numba", "n=1", None, None, check=False)]}
    head, rows = benchmark.compact_rows(result)
    assert head == ["variant · backend", "n=1", "n=2"]
    nb = "\u00a0"
    assert rows == [[f"a{nb}·{nb}numba", f"2{nb}(50.0%)", f"**3{nb}(75.0%)**"], [f"b{nb}·{nb}cuda-c", f"**4{nb}(40×)**", "—"],
                    [f"c{nb}·{nb}numba", "✗", "—"]]


def test_docs_hook_renders_committed_json_and_admits_missing(tmp_path):
    sys.path.insert(0, os.path.join(ROOT, "docs", "hooks"))
    try:
        import bench_tables
    finally:
        sys.path.pop(0)
    (tmp_path / "benchmarks").mkdir()

    class Page:
        class file:
            src_uri = "chapters/x.md"

    missing = bench_tables.on_page_markdown("<!-- gpulab:bench nothing h200 -->", Page, {"docs_dir": str(tmp_path)}, None)
    assert "No H200 results committed yet" in missing
    data = {"schema": benchmark.SCHEMA, "chapter": "demo", "date": "2026-01-01T00:00:00Z",
            "device": {"name": "Dev", "mode": "gpu", "compute_capability": [9, 0], "sm_count": 1},
            "versions": {}, "settings": {"repeat": 3, "warmup": 1},
            "records": [{"label": "n=1", "variant": "v", "backend": "numba", "median_ms": 2.0, "throughput": 1.5,
                         "unit": "X/s", "peer": "P", "peer_median_ms": 1.0, "ratio_to_peer": 0.5, "ceiling": None,
                         "ceiling_name": None, "ratio_to_ceiling": None, "check": True, "skipped": None}]}
    (tmp_path / "benchmarks" / "demo-h200.json").write_text(json.dumps(data))
    out = bench_tables.on_page_markdown("<!-- gpulab:bench demo h200 -->", Page, {"docs_dir": str(tmp_path)}, None)
    assert "| n=1 | v | numba | 2.00 | 1.50 X/s | 50.0% |" in out


def test_tour_runs_and_checks_every_variant():
    p = subprocess.run([sys.executable, "-m", "gpulab", "tour", "matmul"], capture_output=True, text=True, cwd=ROOT)
    assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-3000:]
    assert "failed" in p.stdout and " 0 failed" in p.stdout
    from gpulab.matmul.variants import REGISTRY

    for v in REGISTRY.select(runnable=True):
        assert f"{v.name}" in p.stdout


@pytest.mark.skipif(not ON_SIMULATOR, reason="a GPU's device arrays have no host mirror to guard")
def test_device_only_inputs_refuse_the_way_back_to_the_host():
    """The guard the chapters' device-input tests rely on: every way back to the host fails,
    while a device-to-device copy and a kernel still read the data."""
    from numba import cuda

    from tests.conftest import device_only

    d = device_only(np.arange(4.0))
    for attempt in (d.copy_to_host, lambda: np.asarray(d), d.tolist, lambda: d[1:].copy_to_host(),
                    lambda: d.view(np.int64).copy_to_host(), lambda: d.reshape(2, 2).copy_to_host(),
                    lambda: list(d), lambda: d.copy()):
        with pytest.raises(AssertionError, match="copied to the host"):
            attempt()
    out = cuda.device_array(4)
    out.copy_to_device(d)
    assert out.copy_to_host().tolist() == [0.0, 1.0, 2.0, 3.0]


def test_benchmark_records_out_of_memory_and_raises_other_errors():
    """A size that does not fit the device is a skipped record naming it; any other exception
    inside a case still stops the run (a bug must not turn into a quiet skip)."""
    import dataclasses

    from gpulab.matmul.bench import SPEC
    from gpulab.matmul.variants import REGISTRY

    variants = [REGISTRY.get("coalesced", "numba")]
    case = SPEC.cases(True)[:1]

    def failing(exc):
        def check(v, state):
            raise exc
        return dataclasses.replace(SPEC, check=check)

    oom = RuntimeError("[CUresult.CUDA_ERROR_OUT_OF_MEMORY: 2] Call to cuMemAlloc results in CUDA_ERROR_OUT_OF_MEMORY")
    result = benchmark.run(failing(oom), variants, quick=True, warmup=1, repeat=2, cases=case, progress=None)
    (rec,) = result["records"]
    assert rec["median_ms"] is None and rec["skipped"].startswith("out of device memory (RuntimeError")
    with pytest.raises(ZeroDivisionError):
        benchmark.run(failing(ZeroDivisionError("a bug")), variants, quick=True, warmup=1, repeat=2, cases=case,
                      progress=None)


def test_a_failing_public_call_keeps_the_kernels_timing():
    """The kernels and the public call are timed in turns; where the public call fails (out of
    memory, a refusal), the record keeps the kernels' time and names the failure, as when the
    public call was timed after them; any other exception still stops the run."""
    import dataclasses

    from gpulab.matmul.bench import SPEC
    from gpulab.matmul.variants import REGISTRY

    variants = [REGISTRY.get("coalesced", "numba")]
    case = SPEC.cases(True)[:1]

    def public_raising(exc):
        def public(v, state):
            def call():
                raise exc
            return call
        return dataclasses.replace(SPEC, public=public)

    oom = MemoryError("out of memory (the public call's result)")
    for exc, skipped in ((oom, "out of device memory (MemoryError"), (GpulabError("refused"), "refused")):
        result = benchmark.run(public_raising(exc), variants, quick=True, warmup=1, repeat=3, cases=case,
                               progress=None)
        (rec,) = result["records"]
        assert rec["median_ms"] > 0 and len(rec["samples_ms"]) == 3 and rec["skipped"].startswith(skipped)
        assert rec["public_median_ms"] is None
    with pytest.raises(ZeroDivisionError):
        benchmark.run(public_raising(ZeroDivisionError("a bug")), variants, quick=True, warmup=1, repeat=2,
                      cases=case, progress=None)


class _HostOrDevice:
    """A stand-in for a PyTorch tensor: one type whose objects are on the host or the device
    (the interface raises for a host object, as a CPU tensor's does)."""

    def __init__(self, on_device: bool, n: int):
        self.on_device, self.shape, self.dtype = on_device, (n,), np.dtype(np.float32)

    @property
    def __cuda_array_interface__(self):
        if not self.on_device:
            raise AttributeError("a host object has no device interface")
        return {"shape": self.shape, "typestr": self.dtype.str, "data": (0, False), "version": 3}


class _CupyLike:
    """A stand-in for a CuPy array of `n` elements: shape and dtype as attributes, CuPy's module
    name, an interface naming `ptr` and `strides` (`None`: C-contiguous)."""

    __module__ = "cupy._core.core"

    def __init__(self, n: int, dtype=np.int32, ptr: int = 0, strides=None):
        self.shape, self.dtype, self.ptr, self.strides = (n,), np.dtype(dtype), ptr, strides

    @property
    def __cuda_array_interface__(self):
        return {"shape": self.shape, "typestr": self.dtype.str, "data": (self.ptr, False), "strides": self.strides,
                "version": 3}


@pytest.mark.parametrize("order", ["host first", "device first"])
def test_array_kinds_found_once_per_type_still_look_at_each_object(order, rng):
    """`gpulab.arrays` keeps what an input's type says (numpy, numba, CuPy) so that a public call
    tests each type once; a type whose objects differ (a PyTorch tensor on the host or the
    device) is still looked at object by object, in whichever order the objects come."""
    from numba import cuda

    from gpulab import arrays

    n = int(rng.integers(1, 100))
    objs = [_HostOrDevice(False, n), _HostOrDevice(True, n)]
    for x in (objs if order == "host first" else objs[::-1]):
        assert arrays.is_device_array(x) is x.on_device
    for _ in range(2):  # the second time from the kept kinds
        assert not arrays.is_device_array(np.zeros(n))
        assert arrays.library(np.zeros(n)) == "numpy"
        d = cuda.to_device(np.zeros(n, np.float32))
        assert arrays.is_device_array(d) and arrays.library(d) == "numba"
        assert arrays.shape_dtype(d) == ((n,), np.dtype(np.float32))
        c = _CupyLike(n)
        assert arrays.is_device_array(c) and arrays.library(c) == "cupy"
        assert arrays.shape_dtype(c) == ((n,), np.dtype(np.int32))
        assert arrays.describe(np.zeros(n), c).library == "cupy"
        # a numpy subclass with a device interface (numba's mapped and managed arrays) is a device array
        m = np.zeros(n, np.float32).view(_MappedLike)
        assert arrays.is_device_array(m) and not arrays.is_device_array(np.zeros(n).view(np.ma.MaskedArray))


class _MappedLike(np.ndarray):
    """A stand-in for numba's mapped array: a numpy array that also has a device interface."""

    @property
    def __cuda_array_interface__(self):
        return {"shape": self.shape, "typestr": self.dtype.str, "data": (0, False), "version": 3}


def test_kept_views_of_another_librarys_arrays(monkeypatch, rng):
    """`gpulab.arrays` keeps the numba view of another library's array (CuPy here: `_CupyLike`)
    by pointer, shape, dtype and strides, and takes a kept one without checking it again. Here, on either machine, the views are numba arrays of their
    own (`_unbound_view` replaced): one view per memory, a strided array at the same pointer
    still refused, a caller's own dtype and dimension checks still made on a hit."""
    from numba import cuda

    from gpulab import arrays
    from gpulab.errors import DtypeError, ShapeError

    made = []

    def unbound_view(cai, owner):
        made.append((cai["data"][0], tuple(cai["shape"]), cai.get("strides")))
        return cuda.to_device(np.zeros(cai["shape"], np.dtype(cai["typestr"])))

    def Array(ptr, n, strides=None):
        return _CupyLike(n, np.uint32, ptr, strides)

    monkeypatch.setattr(arrays, "_unbound_view", unbound_view)
    arrays.clear_views()
    try:
        ptr, n = int(rng.integers(1, 2**40)) * 256, int(rng.integers(2, 1000))
        whole, strided = Array(ptr, n), Array(ptr, n, strides=(8,))
        first = arrays.device_input_on(whole, "keys")
        assert first.library == "cupy" and first.on_device and first.source is whole
        assert first.array.shape == (n,) and len(made) == 1
        again = arrays.device_input_on(Array(ptr, n), "keys")  # another object, the same memory
        assert again.array is first.array and len(made) == 1, "the kept view was not taken"
        with pytest.raises(ShapeError, match="non-contiguous"):
            arrays.device_input_on(strided, "keys")
        with pytest.raises(ShapeError, match="must be 2-D"):
            arrays.device_input_on(whole, "A", ndim=2)
        with pytest.raises(DtypeError, match="expected float32"):
            arrays.device_input_on(whole, "A", dtypes=(np.float32,))
        shorter = arrays.device_input_on(Array(ptr, n - 1), "keys")  # one pointer, another length
        assert shorter.array.shape == (n - 1,) and len(made) == 2
        for i in range(arrays._VIEWS_MAX):  # the first view made is the first dropped
            arrays.device_input_on(Array(ptr + 256 * (i + 1), n), "keys")
        assert arrays.device_input_on(whole, "keys").array is not first.array
    finally:
        arrays.clear_views()


def test_a_result_from_the_callers_pool_reuses_the_kept_view(monkeypatch, rng):
    """`device_result` (what matmul's public call writes C into): the caller gets its library's
    array (a CuPy stand-in here), the kernels a numba view of it, kept by pointer, shape and
    dtype, so that the next call's block at the same place takes the same view; at another place
    or size a new one; a host caller's result is numba's own allocation, no view."""
    from numba import cuda

    from gpulab import arrays

    made, pool = [], []

    def unbound_view(cai, owner):
        made.append((cai["data"][0], tuple(cai["shape"])))
        return cuda.to_device(np.zeros(cai["shape"], np.dtype(cai["typestr"])))

    monkeypatch.setattr(arrays, "_unbound_view", unbound_view)
    monkeypatch.setattr(arrays, "_caller_empty", lambda n, dtype, like, stream: pool.pop(0) if like.on_device else None)
    arrays.clear_views()
    try:
        ptr, n = int(rng.integers(1, 2**40)) * 256, int(rng.integers(2, 1000))
        like = arrays.DeviceInput(None, True, "cupy", _CupyLike(n, np.float32, ptr + 4096))
        pool.extend([_CupyLike(n, np.float32, ptr), _CupyLike(n, np.float32, ptr), _CupyLike(n, np.float32, ptr + 256),
                     _CupyLike(n + 1, np.float32, ptr)])
        results = [arrays.device_result(n, np.float32, like) for _ in range(4)]
        assert [r.ptr for _, r in results] == [ptr, ptr, ptr + 256, ptr]  # the library's own arrays, in order
        assert results[1][0] is results[0][0] and results[2][0] is not results[0][0], "kept by pointer"
        assert results[3][0] is not results[0][0] and results[3][0].shape == (n + 1,), "and by shape"
        assert made == [(ptr, (n,)), (ptr + 256, (n,)), (ptr, (n + 1,))]
        host = arrays.DeviceInput(None, False, "numpy", None)
        array, result = arrays.device_result(n, np.float32, host)
        assert result is None and array.shape == (n,) and len(made) == 3
        # results are kept apart from inputs: a caller who keeps many results alive (a new block
        # each call) does not push its inputs' views out
        keys = _CupyLike(n, np.float32, ptr + 2**30)
        first = arrays.device_input_on(keys, "keys").array
        pool.extend(_CupyLike(n, np.float32, ptr + 4096 * (i + 1)) for i in range(arrays._VIEWS_MAX + 1))
        for _ in range(arrays._VIEWS_MAX + 1):
            arrays.device_result(n, np.float32, like)
        assert arrays.device_input_on(keys, "keys").array is first, "results pushed an input's view out"
    finally:
        arrays.clear_views()


@pytest.mark.skipif(ON_SIMULATOR, reason="the simulator has no CUDA context")
def test_current_context_is_numbas_and_each_threads_own():
    """`gpulab.launch.current_context` (a key of chapter 1's kept launches) names the context
    numba runs in, and a thread in which no context was made current gets 0, not another
    thread's handle."""
    import threading

    from numba import cuda

    from gpulab.launch import current_context

    cuda.device_array(1)  # numba's context made and current here
    handle = cuda.current_context().handle
    value = int(getattr(handle, "value", None) or int(handle))
    assert current_context() == value != 0
    seen = []
    worker = threading.Thread(target=lambda: seen.append(current_context()))
    worker.start()
    worker.join()
    assert seen == [0]
    assert current_context() == value


def _bench_result(date, repeat, labels, variants=("a", "b")):
    recs = [{"label": lab, "variant": v, "backend": "numba", "median_ms": 1.0} for lab in labels for v in variants]
    return {"date": date, "settings": {"repeat": repeat, "warmup": 2}, "records": recs}


def test_a_merged_benchmark_says_which_run_each_part_comes_from():
    """`gpulab bench --append` merges a run into a committed result: the records measured again
    are the new run's, and `parts` (which the book's caption prints) names each run with its
    date and repeats, oldest first, so a run of 30 repeats does not pass for the whole file's."""
    old = _bench_result("2026-01-01T00:00:00Z", 10, ["2^20", "2^24"])
    new = _bench_result("2026-02-02T00:00:00Z", 30, ["2^24"], variants=("a",))
    merged = benchmark.merge(old, new)
    got = {(r["label"], r["variant"]): r for r in merged["records"]}
    assert len(merged["records"]) == 4 and got[("2^24", "a")] is new["records"][0]
    assert got[("2^24", "b")] is old["records"][3]
    assert merged["parts"] == [
        {"what": "2^20, 2^24", "date": "2026-01-01T00:00:00Z", "repeat": 10, "warmup": 2},
        {"what": "2^24", "date": "2026-02-02T00:00:00Z", "repeat": 30, "warmup": 2}]
    text = benchmark.measured_text(merged)
    assert text.startswith("measured in 2 runs") and "median of 10" in text and "median of 30" in text
    again = benchmark.merge(merged, _bench_result("2026-03-03T00:00:00Z", 5, ["2^20"]))  # parts accumulate
    assert [p["repeat"] for p in again["parts"]] == [10, 30, 5]
    assert benchmark.measured_text(old) == ("measured 2026-01-01T00:00:00Z; median of 10 runs after 2 warm-up runs, "
                                            "CUDA events")
    legacy = {**old, "parts": {"keys": "2025-12-31T00:00:00Z"}}  # the earlier form: {what: date}
    assert benchmark.merge(legacy, new)["parts"][0] == {"what": "keys", "date": "2025-12-31T00:00:00Z",
                                                        "repeat": 10, "warmup": 2}
