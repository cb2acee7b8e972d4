"""numba's `warptile` (issue 31): the twin of CUDA C's warp-tiled kernel, checked on the simulator
at the smallest sizes that reach every edge path, and compiled for sm_90 with no GPU."""

import json
import subprocess
import sys

import numpy as np
import pytest
from numba import cuda

import gpulab.matmul as mm
from gpulab.checking import float32_tolerance, poisoned, relative_error
from gpulab.errors import GpulabError
from gpulab.matmul import host
from gpulab.matmul.variants import REGISTRY, WARP_TILE
from tests.conftest import ROOT, child_env

NUMBA = REGISTRY.get("warptile", "numba")

# A small shape of the same kernel (64 threads: 2 warps of 32×32, WMITER = 2, WNITER = 1), so
# that many blocks, and every edge of a block tile, cost little on the simulator.
SMALL = dict(WARP_TILE, WT_BM=32, WT_BN=64, WT_WM=32, WT_WN=32, WT_WNITER=1, WT_THREADS=64)


def run(params, M, K, N, rng):
    """A @ B through the variant's own launch path, into a NaN-poisoned C."""
    A = rng.standard_normal((M, K), dtype=np.float32)
    B = rng.standard_normal((K, N), dtype=np.float32)
    dC = cuda.to_device(poisoned((M, N), np.float32))
    NUMBA.run(cuda.to_device(A), cuda.to_device(B), dC, B, params)()
    return relative_error(dC.copy_to_host(), mm.matmul_reference(A, B))


def test_both_backends_share_one_step():
    """One variant name, one launch policy and one parameter set for numba and CUDA C."""
    c = REGISTRY.get("warptile", "cuda-c")
    assert NUMBA.policy == c.policy and NUMBA.params == c.params
    assert host.geometry(NUMBA.policy, NUMBA.params, 300, 260) == ((3, 3), (128,))


# (M, K, N) for SMALL (a 32×64 tile of C per block, BK = 8): 1; tile-1 / tile+1 in each of M, N
# and BK-1 / BK+1 in K; primes; thin B (one column); uniform sizes take the unguarded path,
# with K = 3 tiles so that both shared stages are filled and reused.
SMALL_SHAPES = [(1, 1, 1), (31, 7, 63), (33, 9, 65), (13, 17, 5), (67, 3, 1), (64, 24, 128), (32, 8, 64)]


@pytest.mark.parametrize("shape", SMALL_SHAPES, ids=lambda s: "x".join(map(str, s)))
def test_small_tiles_match_the_float64_reference(shape, rng):
    M, K, N = shape
    err = run(SMALL, M, K, N, rng)
    assert err <= float32_tolerance(K), f"{shape}: relative error {err:.3g}"


@pytest.mark.parametrize("shape", [(128, 16, 128), (129, 9, 1)], ids=["uniform", "ragged-thin-B"])
def test_registered_shape_matches_the_float64_reference(shape, rng):
    """The registered 128×128 tile: once on the unguarded path (two K tiles), once guarded."""
    M, K, N = shape
    err = run(NUMBA.params, M, K, N, rng)
    assert err <= float32_tolerance(K), f"{shape}: relative error {err:.3g}"


def test_a_wrong_kernel_fails_the_check(rng):
    """The check can fail: one block of SMALL on a C two tiles tall leaves rows unwritten (NaN)."""
    A = rng.standard_normal((64, 8), dtype=np.float32)
    B = rng.standard_normal((8, 64), dtype=np.float32)
    dC = cuda.to_device(poisoned((64, 64), np.float32))
    k = host.numba_kernel("matmul_warptile", SMALL)
    k[(1, 1), (64,)](cuda.to_device(A), cuda.to_device(B), dC, np.int32(64), np.int32(64), np.int32(8))
    assert relative_error(dC.copy_to_host(), mm.matmul_reference(A, B)) == float("inf")


def test_shapes_that_break_the_tiling_rules_are_refused():
    with pytest.raises(GpulabError, match="one warp per warp tile"):
        host.numba_kernel("matmul_warptile", dict(SMALL, WT_THREADS=128))
    with pytest.raises(GpulabError, match="multiples of 4"):
        host.numba_kernel("matmul_warptile", dict(SMALL, WT_BK=6))


# ----------------------------------------------------------------------------- sm_90, no GPU

PTX_SCRIPT = r"""
import json, re
from gpulab import compilecheck as cc
from gpulab.matmul import host, kernels_numba as kn
from gpulab.matmul.variants import REGISTRY
from numba import cuda

v = REGISTRY.get("warptile", "numba")
k = host.numba_kernel(v.policy.kernel, v.params)
with cc._pretend_device():
    ptx, _ = cuda.compile_ptx(k.py_func, kn.SIG, cc=cc.ARCH, launch_bounds=k.targetoptions.get("launch_bounds"))
count = lambda p: len(re.findall(p, ptx))
print("@@" + json.dumps({"local": count(r"\b(ld|st)\.local\b"), "shared_v4": count(r"ld\.shared\.v4\.f32"),
                         "global_v4": count(r"ld\.global(\.nc)?\.v4\.f32"), "maxntid": count(r"\.maxntid 128, 1, 1"),
                         "fma": count(r"fma\.rn\.f32"),
                         "resources": list(cc.link_report(ptx).values())[0]}))
"""


# The most bytes of spills (stores + loads) and of stack frame that ptxas may report. numba's PTX
# keeps every tile in registers (no ld/st.local: asserted exactly below); what ptxas does at the
# 255-register limit depends on the CUDA release: no spills and no stack with the development
# machine's CUDA 13.5 (nvJitLink 13.5.37); 72 bytes of spills with the H100 machine's CUDA 13.0
# (session 4). A ptxas that spilled a real share of the tile still fails (the 16×8 accumulators
# alone are 512 bytes).
MAX_PTXAS_SPILL = 128


def test_compiles_for_sm90_with_its_tiles_in_registers():
    """The real compiler (a child process: not the simulator): no local memory in numba's PTX,
    at most a small spill by ptxas (`MAX_PTXAS_SPILL`), the launch bound of 128 threads, 128-bit
    shared loads of the fragments, and the k-steps written out (numba has no #pragma unroll).
    Global loads stay scalar: numba cannot tell the compiler that a global array is 16-byte aligned."""
    env = child_env(drop=("NUMBA_ENABLE_CUDASIM",), GPULAB_DEVICE="gpu")
    p = subprocess.run([sys.executable, "-c", PTX_SCRIPT], capture_output=True, text=True, cwd=ROOT, env=env,
                       timeout=600)
    line = next((l for l in p.stdout.splitlines() if l.startswith("@@")), None)
    assert p.returncode == 0 and line, p.stderr[-3000:]
    r = json.loads(line[2:])
    assert r["local"] == 0 and r["maxntid"] == 1, r
    assert r["resources"]["spill_bytes"] <= MAX_PTXAS_SPILL and r["resources"]["stack"] <= MAX_PTXAS_SPILL, r
    assert r["shared_v4"] > 0, r
    # 4 k-steps written out, 16×8 accumulators, in each of the two bodies (unguarded, guarded)
    assert r["fma"] >= 2 * 4 * 16 * 8, r
    assert r["global_v4"] == 0, r  # if this fails, numba learned to vectorize global loads: update the docs
