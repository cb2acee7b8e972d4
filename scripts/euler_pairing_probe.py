"""Probe (issue 30): where chapter 5's pairing spends its time at 42M edges. On a GPU:

    python3 scripts/euler_pairing_probe.py [--json FILE]

For the deep 42M-edge graph of the benchmark (`deep_graph(E, 4, seed 1)`, device arrays) and each
backend's `ruling_set` plan: the whole pairing (`EulerPlan.pairing`, two sorts and the pair
kernel), each sort alone (the plan's argsort of src, of dst), the pair kernel alone in one launch,
and, for comparison, chapter 4's sort plan on uniformly random keys below the same bound (same n,
same passes, positions as values). In CUDA C, the scatter of the pair kernel written three ways
(plain loads, ld.global.cs loads, 4-wide ld.global.cs loads) in R launches that each write one
slice of succ, checked against the pair kernel's succ. (The committed
docs/benchmarks/ab-runs/euler-pairing-probe-h100.json was measured before the library's pair
kernel took its slice: its pairing and "pair kernel alone" rows are the one-launch kernel with
plain loads.) CUDA events, median of --repeat after a warm-up; every timed call is the one the
pipeline makes (its result is not checked here: the Euler tests do that).
"""
from __future__ import annotations

import argparse
import json

import numpy as np

import gpulab  # noqa: F401  (device selection first)
from gpulab import benchmark, device
from gpulab.euler import generators as gen
from gpulab.euler.variants import M42, REGISTRY
from gpulab.radix import plan as radix_plan
from gpulab.timing import measure


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=10)
    ap.add_argument("--edges", type=int, default=M42, help="(default: 42M; small sizes for a dry run on the simulator)")
    ap.add_argument("--backends", nargs="+", default=["cuda-c", "numba"])
    ap.add_argument("--json")
    a = ap.parse_args()
    from numba import cuda

    E = a.edges
    ds, dd = gen.deep_graph(E, 4, 1, device=True)
    rows = []
    for backend in a.backends:
        v = REGISTRY.get("ruling_set", backend)
        plan = v.run(E + 1, v.launch_params())
        src, dst = plan.load(ds, dd, E)
        vmax = plan.vmax
        t = {}
        t["pairing (2 sorts + pair)"] = measure(lambda: plan.pairing(src, dst, E, check=False), repeat=a.repeat).median_ms
        ssrc, oo, sdst, io = plan.buf("ssrc"), plan.buf("out_order"), plan.buf("sdst"), plan.buf("in_order")
        t["sort src (argsort)"] = measure(lambda: plan.sort(src[:E], E, ssrc, oo), repeat=a.repeat).median_ms
        t["sort dst (argsort)"] = measure(lambda: plan.sort(dst[:E], E, sdst, io), repeat=a.repeat).median_ms
        from gpulab.euler.host import C_BAD
        from gpulab.launch import i32

        succ = plan.buf("succ")
        t["pair kernel alone (one launch)"] = measure(lambda: plan.launch("pair", E, io, oo, ssrc, sdst, i32(E), succ,
                                                                         plan.ctr, i32(C_BAD), i32(0), i32(E)),
                                                      repeat=a.repeat).median_ms
        t["preset alone"] = measure(lambda: plan.preset(C_BAD, 0, 2**31 - 1), repeat=a.repeat).median_ms
        t["sort src, sort dst, pair (no preset)"] = measure(
            lambda: (plan.sort(src[:E], E, ssrc, oo), plan.sort(dst[:E], E, sdst, io),
                     plan.launch("pair", E, io, oo, ssrc, sdst, i32(E), succ, plan.ctr, i32(C_BAD), i32(0), i32(E))),
            repeat=a.repeat).median_ms
        if backend == "cuda-c":  # the scatter in R rounds, each writing one R-th of succ (its range L2-resident)
            import pycuda.driver as drv

            from gpulab import cudac

            part = r'''
extern "C" __global__ void pair_part(const int *in_order, const int *out_order, int n, int *succ, int lo, int hi) {
    GRID_LOOP(i, n) {
        int t = in_order[i];
        if (t >= lo && t < hi) succ[t] = out_order[i];
    }
}
extern "C" __global__ void pair_part_cs(const int *in_order, const int *out_order, int n, int *succ, int lo, int hi) {
    GRID_LOOP(i, n) {
        int t = __ldcs(in_order + i);
        if (t >= lo && t < hi) succ[t] = __ldcs(out_order + i);
    }
}
extern "C" __global__ void pair_part_v4(const int *in_order, const int *out_order, int n, int *succ, int lo, int hi) {
    GRID_LOOP(q, n / 4) {
        int4 t = __ldcs((const int4 *)in_order + q);
        int4 o = __ldcs((const int4 *)out_order + q);
        if (t.x >= lo && t.x < hi) succ[t.x] = o.x;
        if (t.y >= lo && t.y < hi) succ[t.y] = o.y;
        if (t.z >= lo && t.z < hi) succ[t.z] = o.z;
        if (t.w >= lo && t.w < hi) succ[t.w] = o.w;
    }
    for (int i = (n / 4) * 4 + blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
        int t = in_order[i];
        if (t >= lo && t < hi) succ[t] = out_order[i];
    }
}'''
            src_text = cudac.source_text("gpulab.euler", "kernels.cu") + part
            rep = cudac.nvrtc_compile(src_text, "kernels.cu", {"BLOCK": plan.params["BLOCK"], "TILE": 1024}, arch="sm_90",
                                      lineinfo=False)
            mod = drv.module_from_buffer(rep.cubin)
            plan.launch("pair", E, io, oo, ssrc, sdst, i32(E), succ, plan.ctr, i32(C_BAD), i32(0), i32(E))
            want = succ.copy_to_host()
            g, b = plan.ew(E)
            for kname in ("pair_part", "pair_part_cs", "pair_part_v4"):
                fn = mod.get_function(kname)
                for R in (1, 4, 6, 8, 12) if kname != "pair_part" else (1, 8):
                    bounds = [E * k // R for k in range(R + 1)]

                    def rounds(bounds=bounds, fn=fn):
                        for lo, hi in zip(bounds[:-1], bounds[1:]):
                            cudac.launch(fn, g, b, io, oo, i32(E), succ, i32(lo), i32(hi))

                    cuda.to_device(np.full(succ.size, -7, np.int32), to=succ)
                    rounds()
                    ok = np.array_equal(succ.copy_to_host()[:E], want[:E])
                    t[f"{kname} in {R} rounds{'' if ok else ' (WRONG)'}"] = measure(rounds, repeat=a.repeat).median_ms
        keys = cuda.to_device(np.random.default_rng(1).integers(0, vmax + 1, E, dtype=np.int64).astype(np.uint32))
        sp = radix_plan(E, pairs=True, variant=plan.params["SORT"], backend=backend, params=plan.params.get("SORT_PARAMS"))
        t["radix argsort, random keys <= vmax"] = measure(lambda: sp.sort(keys, iota=True, max_key=vmax),
                                                          repeat=a.repeat).median_ms
        t["radix argsort, random keys, no bound"] = measure(lambda: sp.sort(keys, iota=True), repeat=a.repeat).median_ms
        sk = radix_plan(E, pairs=False, variant=plan.params["SORT"], backend=backend, params=plan.params.get("SORT_PARAMS"))
        t["radix keys only, random keys <= vmax"] = measure(lambda: sk.sort(keys, max_key=vmax), repeat=a.repeat).median_ms
        for k, ms in t.items():
            rows.append({"backend": backend, "what": k, "ms": round(ms, 4)})
            print(f"{backend:7s} {k:38s} {ms:8.3f} ms", flush=True)
        print(f"{backend:7s} vmax {vmax}, plan params {plan.params}", flush=True)
        del plan, sp, sk, keys
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"about": f"scripts/euler_pairing_probe.py: deep_graph(E = {E}, 4, seed 1), ruling_set plans; "
                       "CUDA events, median of --repeat", "edges": E, "repeat": a.repeat, "device": device.info().name,
                       "versions": benchmark.versions(), "date": benchmark.utc_now(), "rows": rows}, f, indent=1)
            f.write("\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
