"""Time chapter 1's CUDA C kernels compiled three ways, in one process on the GPU:
pycuda's SourceModule (the machine's nvcc), NVRTC through cuda-bindings (loaded into pycuda),
and CuPy's RawModule (CuPy's NVRTC). Explains gaps between the library's benchmark and the
standalone tuning script. Prints a table; writes $OUT/compare-compilers.json.
"""

import json
import os
import subprocess

import numpy as np

import gpulab  # noqa: F401
from gpulab import cudac
from gpulab.matmul.variants import REGISTRY
from gpulab.timing import measure

N = 8192


def main():
    import cupy as cp
    import pycuda.autoprimaryctx  # noqa: F401
    import pycuda.driver as drv
    from numba import cuda

    rows = []
    src = cudac.source_text("gpulab.matmul", "kernels.cu")
    A = np.random.default_rng().standard_normal((N, N), dtype=np.float32)
    dA = cuda.to_device(A)
    dB = cuda.to_device(A.T.copy())
    dC = cuda.device_array((N, N), np.float32)
    ref = cp.asnumpy(cp.asarray(A, cp.float64) @ cp.asarray(A.T.copy(), cp.float64))
    versions = {"nvcc": subprocess.run(["nvcc", "--version"], capture_output=True, text=True).stdout.strip().splitlines()[-1]}
    try:
        from cuda.bindings import nvrtc
        versions["nvrtc (cuda-bindings)"] = str(nvrtc.nvrtcVersion()[1:])
    except Exception as exc:
        versions["nvrtc (cuda-bindings)"] = f"unavailable: {exc}"
    versions["cupy nvrtc"] = str(cp.cuda.nvrtc.getVersion())
    for name in ("register", "vec4", "warptile"):
        v = REGISTRY.get(name, "cuda-c")
        for how in ("pycuda-nvcc", "nvrtc-bindings", "cupy-nvrtc"):
            row = {"variant": name, "compiler": how}
            try:
                if how == "pycuda-nvcc":
                    launch = v.run(dA, dB, dC, None, v.params)
                elif how == "nvrtc-bindings":
                    rep = cudac.nvrtc_compile(src, "kernels.cu", v.params)
                    mod = drv.module_from_buffer(rep.cubin)
                    fn = mod.get_function(f"matmul_{name}")
                    row["registers"] = rep.resources.get(f"matmul_{name}", {}).get("registers")
                    from gpulab.matmul import host
                    grid, block = host.geometry(v.policy, v.params, N, N)
                    launch = lambda fn=fn, grid=grid, block=block: cudac.launch(fn, grid, block, dA, dB, dC, N, N, N)
                else:
                    opts = tuple(cudac.define_flags(v.params)) + ("-std=c++17", "--gpu-architecture=sm_90")
                    mod = cp.RawModule(code=src, options=opts)
                    fn = mod.get_function(f"matmul_{name}")
                    from gpulab.matmul import host
                    grid, block = host.geometry(v.policy, v.params, N, N)
                    cA, cB = cp.asarray(A), cp.asarray(A.T.copy())
                    cC = cp.empty((N, N), cp.float32)
                    args = (cA, cB, cC, np.int32(N), np.int32(N), np.int32(N))
                    launch = lambda fn=fn, grid=grid, block=block, args=args: fn(grid, block, args)
                    dC_check = cC
                ms = measure(launch, warmup=2, repeat=10).median_ms
                out = cp.asnumpy(dC_check) if how == "cupy-nvrtc" else dC.copy_to_host()
                row["rel_err"] = float(np.linalg.norm(out - ref) / np.linalg.norm(ref))
                row["ms"] = ms
                row["tflops"] = 2.0 * N**3 / (ms * 1e-3) / 1e12
            except Exception as exc:
                row["error"] = f"{type(exc).__name__}: {exc}"[:300]
            rows.append(row)
            print(json.dumps(row), flush=True)
    out = os.environ.get("OUT", "gpu-results")
    os.makedirs(out, exist_ok=True)
    json.dump({"N": N, "versions": versions, "rows": rows}, open(os.path.join(out, "compare-compilers.json"), "w"), indent=1)
    print(versions)
    for r in rows:
        print(f"{r['variant']:9s} {r['compiler']:15s} {r.get('tflops', float('nan')):7.2f} TFLOP/s  err {r.get('rel_err', float('nan')):.2g} {r.get('error', '')}")


if __name__ == "__main__":
    main()
