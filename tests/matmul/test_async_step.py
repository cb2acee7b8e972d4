"""Chapter 1's `cpasync` step (CUDA C): warptile fed by a cp.async shared-memory ring, blocks
rasterized for L2 reuse.

Without a GPU: the source compiles with NVRTC for sm_90 in the registered configuration and in
the tune sweep's (no spills), it leaves the kernel out for a pre-sm_80 GPU (so the rest of the
chapter's module still builds there), the launch on such a GPU is refused with one clear error,
and the sweep's configurations are well formed.

On a GPU: every configuration below against a float64 product at adversarial shapes, C poisoned
with NaN first, through the chapter's one launch path and through the public call.
"""

import numpy as np
import pytest

from gpulab.checking import float32_tolerance, poisoned, relative_error
from gpulab.cudac import ptr
from gpulab.errors import BackendUnavailable
from gpulab.matmul import host, tune
from gpulab.matmul.variants import REGISTRY
from tests.conftest import require_ptxas_report

VARIANT = REGISTRY.get("cpasync", "cuda-c")
PARAMS = VARIANT.params


def _nvrtc(defines, arch="sm_90"):
    pytest.importorskip("cuda.bindings.nvrtc")
    from gpulab.cudac import nvrtc_compile, source_text

    return nvrtc_compile(source_text(host.PACKAGE, host.SOURCE), host.SOURCE, defines, arch=arch)


# ----------------------------------------------------------------------------- no GPU needed


def test_registered_configuration_compiles_without_spills():
    rep = _nvrtc(PARAMS)
    assert rep.ok, rep.log[-3000:]
    require_ptxas_report(rep)
    assert "matmul_cpasync" in rep.resources, (sorted(rep.resources), len(rep.log), rep.log[-3000:])
    res = rep.resources["matmul_cpasync"]
    assert res["spill_bytes"] == 0 and res["stack"] == 0, res
    stage_floats = PARAMS["CA_BK"] * (PARAMS["CA_BM"] + PARAMS["CA_APAD"] + PARAMS["CA_BN"])
    assert res["shared"] == PARAMS["CA_STAGES"] * stage_floats * 4, res
    # two 128-thread blocks per SM need at most 256 registers a thread
    assert res["registers"] * PARAMS["CA_THREADS"] * 2 <= 65536, res


@pytest.mark.parametrize("label", ["ca_st2_g0", "ca_bk16_st2"])
def test_sweep_configurations_compile(label):
    """A sweep setting must compile; whether it spills depends on the NVRTC release (ca_bk16_st2
    spilled 244 bytes with the GPU machine's CUDA 13.0 NVRTC, none with the development one's),
    and the tuner records spills beside the time, so only the registered setting must be spill-free."""
    (defines,) = [d for name, v, d, _ in tune.configs("cuda-c") if name == label]
    rep = _nvrtc(defines)
    assert rep.ok, rep.log[-3000:]
    assert rep.resources["matmul_cpasync"]["registers"] <= 255, rep.resources["matmul_cpasync"]


def test_too_much_static_shared_memory_fails_with_a_message():
    rep = _nvrtc({**PARAMS, "CA_BK": 16, "CA_STAGES": 3})  # 49,920 bytes > 48 KiB
    assert not rep.ok and "48 KiB" in rep.log


def test_pre_ampere_build_leaves_only_this_kernel_out():
    rep = _nvrtc(PARAMS, arch="sm_75")
    assert rep.ok, rep.log[-3000:]
    assert "matmul_cpasync" not in rep.resources and "matmul_warptile" in rep.resources


def test_pre_ampere_gpu_is_refused_clearly(monkeypatch):
    from types import SimpleNamespace

    monkeypatch.setattr(host.device, "info", lambda: SimpleNamespace(compute_capability=(7, 5)))
    with pytest.raises(BackendUnavailable, match=r"matmul_cpasync needs compute capability 8\.0 or newer.*7\.5"):
        host.check_cc(VARIANT.policy)
    monkeypatch.setattr(host.device, "info", lambda: SimpleNamespace(compute_capability=(8, 0)))
    host.check_cc(VARIANT.policy)  # sm_80 itself is fine


def test_sweep_lists_cpasync_configurations():
    rows = [c for c in tune.configs("cuda-c", extra_cpasync=["mine:STAGES=2,GROUP=0,BM=256"]) if c[1] == "cpasync"]
    labels = [r[0] for r in rows]
    assert "ca_default" in labels and labels[-1] == "mine"
    for label, _, d, _ in rows:
        assert set(d) == set(PARAMS), label  # every define, CA_-prefixed, nothing else
        assert d["CA_THREADS"] == 32 * (d["CA_BM"] // d["CA_WM"]) * (d["CA_BN"] // d["CA_WN"]), label
    mine = rows[-1][2]
    assert (mine["CA_STAGES"], mine["CA_GROUP"], mine["CA_BM"], mine["CA_THREADS"]) == (2, 0, 256, 256)
    assert {r[1] for r in tune.configs("cuda-c", extra=["w:BK=16"]) if r[0] == "w"} == {"warptile"}


# ----------------------------------------------------------------------------- on a GPU

# (M, K, N): 1; tiny with N % 4 == 0 and != 0 (16-byte vs 4-byte copies of B); tile-1 / tile /
# tile+1 in each dimension; fewer tiles along K than the prologue fills (K = 8, 16); exactly the
# fast path; 9 block rows (rasterization's last group short); primes; long K on few blocks; thin B.
SHAPES = [(1, 1, 1), (1, 7, 3), (5, 1, 11), (3, 5, 4), (33, 9, 2),
          (127, 9, 129), (128, 8, 128), (129, 17, 128), (128, 16, 127), (127, 7, 131), (255, 24, 257),
          (256, 24, 256), (256, 8, 256), (384, 40, 640), (1152, 64, 640), (1153, 37, 641),
          (997, 1009, 1013), (64, 4099, 96), (2, 3000, 5), (8192, 128, 128), (8191, 127, 129)]

# The registered configuration and the levers the sweep moves (including an odd group height
# and shapes with 256 threads / other block tiles).
CONFIGS = {"registered": {}, "st2": dict(STAGES=2), "st4": dict(STAGES=4), "g0": dict(GROUP=0),
           "g3": dict(GROUP=3), "bk16_st2": dict(BK=16, STAGES=2), "w32x64": dict(WM=32, WN=64),
           "256x128": dict(BM=256), "128x256_st2": dict(BN=256, STAGES=2)}


def _gpu():
    from tests.conftest import skip_unless_runnable

    skip_unless_runnable(VARIANT)


def _check(C, A, B):
    """Relative (Frobenius) error within the float32 tolerance, and every element within the
    summation-order-free bound K·u·(|A||B|): NaN (unwritten) or a wrong term fails."""
    A64, B64 = A.astype(np.float64), B.astype(np.float64)
    ref = A64 @ B64
    K = A.shape[1]
    assert relative_error(C, ref) <= float32_tolerance(K)
    bound = 1.01 * K * 2.0**-24 * (np.abs(A64) @ np.abs(B64)) + 1e-30
    bad = ~(np.abs(C.astype(np.float64) - ref) <= bound)
    assert not bad.any(), f"{int(bad.sum())} elements off, first at {np.argwhere(bad)[0].tolist()}"


def _launch(params, A, B, dA=None, dB=None, dC=None):
    from numba import cuda

    M, N = A.shape[0], B.shape[1]
    dA = cuda.to_device(A) if dA is None else dA
    dB = cuda.to_device(B) if dB is None else dB
    dC = cuda.to_device(poisoned((M, N), np.float32)) if dC is None else dC
    host.prepare(VARIANT.policy, "cuda-c", dA, dB, dC, B, params)()
    cuda.synchronize()
    return dC.copy_to_host()


@pytest.mark.parametrize("config", list(CONFIGS))
@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: "x".join(map(str, s)))
def test_cpasync_matches_float64(config, shape, rng):
    _gpu()
    M, K, N = shape
    params = {**PARAMS, **tune.ca(**CONFIGS[config])}
    A = rng.standard_normal((M, K), dtype=np.float32)
    B = rng.standard_normal((K, N), dtype=np.float32)
    _check(_launch(params, A, B), A, B)


def _offset_view(host_array, offset: bool):
    """A device copy of `host_array` whose data starts one float past a 16-byte boundary (`offset`)."""
    from numba import cuda

    flat = np.concatenate([np.zeros(1, np.float32), host_array.ravel()]) if offset else host_array.ravel()
    d = cuda.to_device(flat)
    return (d[1:] if offset else d).reshape(host_array.shape)


@pytest.mark.parametrize("which", ["A", "B", "C", "ABC"])
@pytest.mark.parametrize("shape", [(256, 64, 256), (131, 20, 36)], ids=lambda s: "x".join(map(str, s)))
def test_misaligned_pointers(which, shape, rng):
    """A view one float past the 16-byte boundary: B or C so loses the 16-byte copies / float4
    stores (the guarded path); A alone keeps the fast path (A is copied 4 bytes at a time)."""
    _gpu()
    M, K, N = shape
    A = rng.standard_normal((M, K), dtype=np.float32)
    B = rng.standard_normal((K, N), dtype=np.float32)
    dA, dB = _offset_view(A, "A" in which), _offset_view(B, "B" in which)
    dC = _offset_view(poisoned((M, N), np.float32), "C" in which)
    assert (ptr(dA) % 16 != 0) == ("A" in which) and (ptr(dC) % 16 != 0) == ("C" in which)
    _check(_launch(PARAMS, A, B, dA, dB, dC), A, B)


@pytest.mark.parametrize("shape", [(1, 1, 1), (129, 17, 131), (512, 256, 384)], ids=lambda s: "x".join(map(str, s)))
def test_public_call(shape, rng):
    _gpu()
    import gpulab.matmul as mm

    M, K, N = shape
    A = rng.standard_normal((M, K), dtype=np.float32)
    B = rng.standard_normal((K, N), dtype=np.float32)
    C = mm.matmul(A, B, variant="cpasync", backend="cuda-c")
    assert isinstance(C, np.ndarray) and C.dtype == np.float32 and C.shape == (M, N)
    _check(C, A, B)
