"""``gpulab bench matmul``: every variant against cuBLAS (through CuPy) at sizes that fill the GPU."""

from __future__ import annotations

import numpy as np

from gpulab import device
from gpulab.benchmark import BenchSpec, Case, caller_cupy, public_inputs_text
from gpulab.checking import float32_tolerance, poisoned, relative_error

# FP32 (non-tensor-core) peak of the H200 SXM by NVIDIA's datasheet: the hardware ceiling the
# table reports against. cuBLAS, measured in the same run, is the practical one.
FP32_PEAK_TFLOPS = 67.0


def _case(M, K, N, label=None):
    return Case(label=label or (f"N={M}" if M == K == N else f"{M}x{K}x{N}"), size={"M": M, "K": K, "N": N},
                work=2.0 * M * N * K, unit="TFLOP/s", unit_scale=1e12,
                ceiling=None if device.on_simulator() else FP32_PEAK_TFLOPS,
                ceiling_name="" if device.on_simulator() else "FP32 peak")


def cases(quick: bool) -> list[Case]:
    if device.on_simulator():
        return [_case(32, 32, 32), _case(33, 17, 45)]
    if quick:
        return [_case(1024, 1024, 1024), _case(8192, 128, 128, "8192x128x128 (thin B)")]
    return [_case(n, n, n) for n in (1024, 2048, 4096, 8192)] + [
        _case(4099, 4099, 4099), _case(8192, 128, 128, "8192x128x128 (thin B)")]


def setup(case: Case, rng: np.random.Generator):
    from numba import cuda

    M, K, N = case.size["M"], case.size["K"], case.size["N"]
    A = rng.standard_normal((M, K), dtype=np.float32)
    B = rng.standard_normal((K, N), dtype=np.float32)
    state = {"A": A, "B": B, "dA": cuda.to_device(A), "dB": cuda.to_device(B),
             "dC": cuda.device_array((M, N), np.float32), "ref": None, "K": K}
    return state


def _reference(state):
    if state["ref"] is None:
        try:
            import cupy as cp  # float64 on the GPU: the CPU would take minutes at N = 8192

            state["ref"] = cp.asnumpy(cp.asarray(state["A"], cp.float64) @ cp.asarray(state["B"], cp.float64))
        except ImportError:
            from gpulab.matmul.reference import matmul_reference

            state["ref"] = matmul_reference(state["A"], state["B"])
    return state["ref"]


def runner(variant, state):
    return variant.run(state["dA"], state["dB"], state["dC"], state["B"], variant.launch_params())


def check(variant, state):
    from numba import cuda

    state["dC"].copy_to_device(poisoned(state["dC"].shape, np.float32))
    runner(variant, state)()
    cuda.synchronize()
    err = relative_error(state["dC"].copy_to_host(), _reference(state))
    tol = float32_tolerance(state["K"])
    return err <= tol, f"relative error {err:.3g} (tolerance {tol:.3g})"


def public(variant, state):
    """The public call on the case's inputs already on the device, as a CuPy user calls it: A
    and B as CuPy arrays (`gpulab.benchmark.caller_cupy`: views of the case's numba arrays, no
    copy), so C comes from CuPy's memory pool, as cuBLAS's does in the peer; numba arrays where
    CuPy cannot run (C then a new numba allocation at every call)."""
    import gpulab.matmul as mm

    cp = caller_cupy()
    A, B = (state["dA"], state["dB"]) if cp is None else (cp.asarray(state["dA"]), cp.asarray(state["dB"]))
    return lambda: mm.matmul(A, B, variant.name, variant.backend)


def peer(state):
    try:
        import cupy as cp
    except ImportError:
        return None
    cA, cB = cp.asarray(state["A"]), cp.asarray(state["B"])
    cC = cp.empty((cA.shape[0], cB.shape[1]), cp.float32)
    return lambda: cp.matmul(cA, cB, out=cC)


SPEC = BenchSpec(chapter="matmul", cases=cases, setup=setup, runner=runner, check=check,
                 peer_name="cuBLAS (CuPy, FP32)", peer=peer, public=public,
                 extra={"public_call_inputs": lambda: public_inputs_text("A and B")})
