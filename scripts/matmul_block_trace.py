"""Issue 31: where a CUDA C matmul launch spends its time, block by block (why does stream-K not
close the gap to cuBLAS at N = 4096?).

Chapter 1's CUDA C source is compiled with each traced kernel turned into a device function and
called from a traced copy: thread 0 of every block writes the GPU's clock (`%globaltimer`, ns)
and its SM (`%smid`) to a trace buffer as the block starts, and the clock again after the block's
last barrier. The package's source is not changed. Each kernel is launched as the package
launches it (grid, block, stream-K schedule and workspace from `gpulab.matmul.host`), its C
checked against a float64 product, and timed with CUDA events with and without the trace (the
trace's own cost). Per launch it prints:

  ms, traced ms   median of --repeat launches, untraced and traced (CUDA events)
  span us         first block's start to last block's end, in the traced launch whose time is the median
  busy %          sum over SMs of the time each had at least one block, over SMs x span
  tail us         span minus the median SM's last block end (the time most SMs idle at the end)
  whole us        median duration of a block computing one whole tile
  sk us           median duration of a stream-K block (streamk); sk start us: when the first
                  and the last stream-K block started

    python scripts/matmul_block_trace.py --shapes 4096x4096x4096 8192x8192x8192 --json trace.json --npz traces.npz
    python scripts/matmul_block_trace.py --variants streamk inl=streamk+inline   # stream-K's work inlined

Two experiments, each a textual change of the source compiled here (the package is not changed):
a variant spec ending in `+inline` compiles the stream-K blocks' function (`sk_blocks_work`,
`__noinline__` in the package) inlined into the kernel; `+reverse` has each stream-K block take
its segments last to first, so that a run that ends in a tile's head starts at k = 0 as the
other blocks do (session 28 tried it in the package; it made the stream-K blocks slower at
N = 4096 and was taken out).
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import sys

import numpy as np

import gpulab.matmul  # noqa: F401  (selects the GPU)
from gpulab import cudac
from gpulab.benchmark import utc_now, versions
from gpulab.checking import float32_tolerance, poisoned, relative_error
from gpulab.device import info
from gpulab.launch import ceil_div
from gpulab.matmul import host
from gpulab.matmul.variants import REGISTRY
from gpulab.timing import measure

EXPERIMENTS = {  # name -> [(text in the package's source, its replacement)]
    "inline": [("__device__ __noinline__ void sk_blocks_work", "__device__ __forceinline__ void sk_blocks_work")],
    "reverse": [("""    for (long long u = first; u < end;) {
        const int t = (int)(u / kt);  // the stream-K tile (tile dp_tiles + t of C)
        const int lo = (int)(u - (long long)t * kt);
        const int hi = (int)min((long long)kt, end - (long long)t * kt);""",
                 """    for (long long e = end; e > first;) {
        const int t = (int)((e - 1) / kt);
        const long long u = max(first, (long long)t * kt);
        const int lo = (int)(u - (long long)t * kt);
        const int hi = (int)(e - (long long)t * kt);"""),
                ("""        u = (long long)t * kt + hi;
    }
}""", """        e = u;
    }
}""")],
}
TRACE_HELPERS = r"""
__device__ __forceinline__ unsigned long long trace_clock() {
    unsigned long long t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    return t;
}
__device__ __forceinline__ unsigned trace_sm() {
    unsigned s;
    asm volatile("mov.u32 %0, %%smid;" : "=r"(s));
    return s;
}
"""


def traced_source(source: str, kernel: str) -> str:
    """`source` with `kernel` made a device function `<kernel>_body` and a kernel `<kernel>_traced`
    that calls it between two stamps (one more argument: the trace, 3 uint64 per block)."""
    m = re.search(r'extern "C" __global__ void __launch_bounds__\(([^)]*)\)\s*\n' + kernel + r"\(([^)]*)\)\s*\{",
                  source)
    if m is None:
        raise SystemExit(f"{kernel}: its definition was not found in the source")
    bounds, params = m.group(1), m.group(2)
    names = [re.findall(r"\w+", p)[-1] for p in params.split(",")]
    body = source[:m.start()] + f"__device__ __forceinline__ void {kernel}_body({params}) {{" + source[m.end():]
    ids = "const unsigned id = blockIdx.y * gridDim.x + blockIdx.x;"
    return body + TRACE_HELPERS + f"""
extern "C" __global__ void __launch_bounds__({bounds})
{kernel}_traced({params}, unsigned long long* __restrict__ trace) {{
    if (threadIdx.x == 0) {{ {ids} trace[3 * id] = trace_clock(); trace[3 * id + 2] = trace_sm(); }}
    {kernel}_body({", ".join(names)});
    __syncthreads();
    if (threadIdx.x == 0) {{ {ids} trace[3 * id + 1] = trace_clock(); }}
}}
"""


def summary(trace: np.ndarray, sk_ids: np.ndarray | None, sm_count: int, whole_ids: np.ndarray | None = None) -> dict:
    """The numbers of the docstring from one launch's trace (rows: start ns, end ns, SM). `sk_ids`
    and `whole_ids`: which blocks are stream-K blocks and which compute a whole tile (None: no
    stream-K launch, every block a whole tile). A block that is neither (one that returned at
    once, past the last tile of its part of the grid) counts in the span and the busy time only."""
    start, end, sm = trace[:, 0].astype(np.int64), trace[:, 1].astype(np.int64), trace[:, 2]
    used = end > 0
    t0 = start[used].min()
    s, e = (start - t0) / 1e3, (end - t0) / 1e3
    span = float(e[used].max())
    busy, last = 0.0, []
    for k in range(sm_count):
        on = used & (sm == k)
        if not on.any():
            last.append(0.0)
            continue
        iv = sorted(zip(s[on], e[on]))
        cur_s, cur_e, tot = iv[0][0], iv[0][1], 0.0
        for a, b in iv[1:]:
            if a > cur_e:
                tot, cur_s, cur_e = tot + cur_e - cur_s, a, b
            else:
                cur_e = max(cur_e, b)
        busy += tot + cur_e - cur_s
        last.append(float(e[on].max()))
    sk = np.zeros(trace.shape[0], bool) if sk_ids is None else sk_ids & used
    whole = used & ~sk if whole_ids is None else used & whole_ids
    dur = e - s
    out = {"span us": span, "busy %": float(100 * busy / (sm_count * span)), "tail us": span - statistics.median(last),
           "last end min us": min(last), "whole us": float(np.median(dur[whole])) if whole.any() else None}
    if sk.any():
        out.update({"sk us": float(np.median(dur[sk])), "sk start first us": float(s[sk].min()),
                        "sk start last us": float(s[sk].max()), "sk blocks": int(sk.sum())})
    return out


def main() -> None:
    from numba import cuda

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--shapes", nargs="+", default=["4096x4096x4096", "8192x8192x8192", "4224x4096x4096"])
    ap.add_argument("--variants", nargs="+", default=["warptile", "streamk"],
                    help="variants, or LABEL=VARIANT:K=V,K=V (parameters replaced)")
    ap.add_argument("--repeat", type=int, default=10)
    ap.add_argument("--json")
    ap.add_argument("--npz", help="every traced launch's trace of the median launch, per shape and variant")
    a = ap.parse_args()
    import pycuda.driver as drv

    sm_count = info().sm_count
    rng = np.random.default_rng()
    rows, traces, built = [], {}, {}
    src = cudac.source_text(host.KERNELS.package, host.KERNELS.source)
    for shape in a.shapes:
        M, K, N = (int(x) for x in shape.split("x"))
        A = rng.standard_normal((M, K), dtype=np.float32)
        B = rng.standard_normal((K, N), dtype=np.float32)
        dA, dB = cuda.to_device(A), cuda.to_device(B)
        ref = A.astype(np.float64) @ B.astype(np.float64)
        cublas_ms = None
        try:  # cuBLAS FP32 (no TF32) on the same arrays, for scale
            import os

            import cupy as cp

            os.environ.pop("CUPY_TF32", None)
            cA, cB, cC = cp.asarray(dA), cp.asarray(dB), cp.empty((M, N), cp.float32)
            cublas_ms = measure(lambda: cp.matmul(cA, cB, out=cC), warmup=3, repeat=a.repeat).median_ms
        except ImportError:
            pass
        for spec in a.variants:
            label, _, rest = spec.partition("=")
            rest, _, experiment = (rest or label).partition("+")
            if experiment and experiment not in EXPERIMENTS:
                raise SystemExit(f"{spec}: no experiment {experiment!r} (known: {', '.join(EXPERIMENTS)})")
            vname, _, kv = rest.partition(":")
            v = REGISTRY.get(vname, "cuda-c")
            over = {k: int(x) for k, x in (p.split("=") for p in kv.split(","))} if kv else {}
            p = v.launch_params(over)
            policy = v.policy
            grid, block = host.geometry(policy, p, M, N)
            extra, dp, sk_ids, whole_ids = (), None, None, None
            if policy.stream_k:
                grid, extra = host.stream_k_launch(policy, p, M, N, K)
                dp, nsk, ids = int(extra[2]), int(extra[3]), np.arange(int(np.prod(grid)))
                # the block ids of the stream-K blocks and of the whole tiles: the whole tiles
                # first, or (WT_SK_FIRST) after the stream-K blocks' rows of the grid
                if p.get("WT_SK_FIRST"):
                    first_whole = ceil_div(nsk, grid[0]) * grid[0]
                    sk_ids, whole_ids = ids < nsk, (ids >= first_whole) & (ids < first_whole + dp)
                else:
                    sk_ids, whole_ids = (ids >= dp) & (ids < dp + nsk), ids < dp
            plain = host.plan(policy, "cuda-c", M, K, N, p)  # (its build also makes the context pycuda uses)
            if experiment:  # no untraced build of an experiment
                plain = None
            if label not in built:  # compiled once per variant (the source does not depend on the shape)
                text = src
                for was, now in EXPERIMENTS.get(experiment, []):
                    if was not in text:
                        raise SystemExit(f"{spec}: the source has changed; no {was.splitlines()[0]!r} to replace")
                    text = text.replace(was, now)
                report = cudac.nvrtc_compile(traced_source(text, policy.kernel), f"{policy.kernel}_traced.cu",
                                             host.KERNELS.cuda_defines(p), lineinfo=False)
                if not report.ok:
                    raise SystemExit(report.log)
                built[label] = drv.module_from_buffer(report.cubin).get_function(f"{policy.kernel}_traced")
            fn = built[label]
            blocks = int(np.prod(grid))
            trace = cuda.device_array((blocks, 3), np.uint64)
            dC = cuda.to_device(poisoned((M, N), np.float32))
            dims = (np.int32(M), np.int32(N), np.int32(K))
            traced = lambda: cudac.launch(fn, grid, block, dA, dB, dC, *dims, *extra, trace)  # noqa: E731
            traced()
            cuda.synchronize()
            err = relative_error(dC.copy_to_host(), ref)
            err2 = 0.0
            if plain is not None:
                dC2 = cuda.to_device(poisoned((M, N), np.float32))
                plain(dA, dB, dC2)
                cuda.synchronize()
                err2 = relative_error(dC2.copy_to_host(), ref)
                t_plain = measure(lambda: plain(dA, dB, dC2), warmup=3, repeat=a.repeat).median_ms
            runs = []
            for _ in range(a.repeat):
                trace.copy_to_device(np.zeros((blocks, 3), np.uint64))
                start, stop = cuda.event(), cuda.event()
                start.record()
                traced()
                stop.record()
                stop.synchronize()
                runs.append((cuda.event_elapsed_time(start, stop), trace.copy_to_host()))
            runs.sort(key=lambda r: r[0])
            ms, tr = runs[len(runs) // 2]
            if plain is None:  # no untraced build of an experiment: its traced time
                t_plain = ms
            row = {"shape": shape, "variant": label, "ms": t_plain, "traced ms": ms, "cublas ms": cublas_ms,
                   "tflops": 2.0 * M * N * K / t_plain / 1e9, "blocks": blocks,
                   "dp tiles": dp, "ok": bool(err <= float32_tolerance(K) and err2 <= float32_tolerance(K)),
                   **summary(tr, sk_ids, sm_count, whole_ids)}
            rows.append(row)
            traces[f"{shape} {label}"] = tr
            print(json.dumps({k: (round(x, 3) if isinstance(x, float) else x) for k, x in row.items()}), flush=True)
    print(f"\n{'shape':16} {'variant':10} {'cuBLAS':>7} {'ms':>7} {'traced':>7} {'span us':>8} {'busy %':>6} {'tail us':>7} "
          f"{'whole us':>8} {'sk us':>6} {'sk start us':>13} ok")
    for r in rows:
        sk = f"{r['sk us']:6.0f} {r['sk start first us']:6.0f}-{r['sk start last us']:<6.0f}" if "sk us" in r \
            else f"{'':6} {'':13}"
        print(f"{r['shape']:16} {r['variant']:10} {r['cublas ms'] or 0:7.3f} {r['ms']:7.3f} {r['traced ms']:7.3f} {r['span us']:8.0f} "
              f"{r['busy %']:6.1f} {r['tail us']:7.0f} {r['whole us'] or 0:8.0f} {sk} {'ok' if r['ok'] else 'WRONG'}")
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"device": info().name, "versions": versions(), "date": utc_now(),
                       "script": "python scripts/matmul_block_trace.py " + " ".join(sys.argv[1:]), "rows": rows},
                      f, indent=1)
    if a.npz:
        np.savez_compressed(a.npz, **{k.replace(" ", "_"): v for k, v in traces.items()})


if __name__ == "__main__":
    main()
