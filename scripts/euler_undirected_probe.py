"""Probe (issue 30): where chapter 5's undirected pipeline spends its time at 42M edges. On a GPU:

    python3 scripts/euler_undirected_probe.py [--json FILE]

For the deep 42M-edge graph of the benchmark (`deep_graph(E, 4, seed 1)`, device arrays), taken as
directed and as undirected, each backend's `ruling_set` plan: the whole directed pipeline and the
whole undirected one (`plan.load` + `plan.directed` / `plan.undirected`) with the defaults, with
TRAILS=0 (the darts' labelling, whose time is also given alone) and with SCATTER_SLICES=12 (the
dart successors in one launch); then the undirected one's steps as `EulerPlan.orient` makes them:
the half-edge keys, their sort, `dart_succ` in its slices, `odd_vertices` (run only where some
degree is odd), `label_trails`, `orient_trails`, `dart_pairs`, `scatter_slice`, and steps 3-6
(`join_and_rank`) after them. In CUDA C also a stand-alone copy of `dart_succ`'s scatter in R
slices (R = 1, 14), checked against the pipeline's. CUDA events, median of --repeat after a
warm-up. docs/benchmarks/ab-runs/euler-undirected-probe-trails-h100.json is this probe on an
H100; euler-undirected-probe-h100.json beside it is its first version, run before these changes:
the darts' labelling, `orient`, `dart_pairs` with its own scatter, `odd_vertices` always,
`dart_succ` in one launch, and the slice sweep at R = 1, 7, 10, 14, 21, 28.
"""
from __future__ import annotations

import argparse
import json

import numpy as np

import gpulab  # noqa: F401  (device selection first)
from gpulab import benchmark, device
from gpulab.euler import generators as gen
from gpulab.euler.variants import M42, REGISTRY
from gpulab.launch import i32
from gpulab.timing import measure

PART = r'''
extern "C" __global__ void dart_succ_part(const int *order, int m, int *succ, int lo, int hi) {
    GRID_LOOP(j, m) {
        int2 h = __ldcs((const int2 *)order + j);
        u32 a = (u32)(h.x ^ 1), b = (u32)(h.y ^ 1);
        if (a >= (u32)lo && a < (u32)hi) succ[a] = h.y;
        if (b >= (u32)lo && b < (u32)hi) succ[b] = h.x;
    }
}'''


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
        t = {}
        plan = None
        for what, over in (("TRAILS=0", {"TRAILS": 0}), ("SCATTER_SLICES=12", {"SCATTER_SLICES": 12}),
                           ("defaults", {})):
            del plan
            plan = v.run(2 * (E + 1), v.launch_params(over))
            if not over:
                t["directed, whole"] = measure(lambda: plan.directed(*plan.load(ds, dd, E), E),
                                               repeat=a.repeat).median_ms
            t[f"undirected, whole, {what}"] = measure(lambda: plan.undirected(*plan.load(ds, dd, E), E),
                                                      repeat=a.repeat).median_ms
            if over.get("TRAILS") == 0:
                plan.undirected(*plan.load(ds, dd, E), E)
                t["  labelling of the 2E darts (TRAILS=0)"] = measure(
                    lambda: plan.label_cycles(plan.buf("dsucc"), 2 * E), repeat=a.repeat).median_ms
                dstats = {k: plan.stats.get(k) for k in ("label_rounds", "splitters", "label_jump_rounds")}
        src, dst = plan.load(ds, dd, E)
        n, m = E, 2 * E
        keys, skeys, order = plan.buf("hkeys"), plan.buf("hskeys"), plan.buf("horder")
        darts = plan.buf("dsucc")
        t["  half_keys"] = measure(lambda: plan.launch("half_keys", n, src, dst, i32(n), keys), repeat=a.repeat).median_ms
        t["  sort of 2E half-edges"] = measure(lambda: plan.sort(keys[:m], m, skeys, order), repeat=a.repeat).median_ms
        b = plan.scatter_slices(m)

        def dart_succ(b=b):
            for lo, hi in zip(b[:-1], b[1:]):
                plan.launch("dart_succ", n, order, skeys, i32(n), darts, plan.ctr, i32(0), i32(lo), i32(hi))

        t[f"  dart_succ in {len(b) - 1} slices (with the even-degree count)"] = measure(dart_succ, repeat=a.repeat).median_ms
        t["  odd_vertices (only where a degree is odd)"] = measure(
            lambda: plan.launch("odd_vertices", m, skeys, i32(m), plan.ctr), repeat=a.repeat).median_ms
        want = darts.copy_to_host()[:m]
        from gpulab.euler.labelling import label_trails

        t["  label_trails (each trail walked once)"] = measure(lambda: label_trails(plan, darts, n),
                                                             repeat=a.repeat).median_ms
        stats = {k: plan.stats.get(k) for k in ("trail_rounds", "trail_splitters", "trail_jump_rounds")}
        town, clab = plan.buf("town", size=n), plan.buf("clab")
        osrc, odst, fwd, elabel = plan.buf("osrc"), plan.buf("odst"), plan.buf("fwd"), plan.buf("elabel", size=n)
        t["  orient_trails"] = measure(
            lambda: plan.launch("orient_trails", n, town, clab, src, dst, i32(n), osrc, odst, fwd, elabel),
            repeat=a.repeat).median_ms
        oo, io, succ = plan.buf("out_order"), plan.buf("in_order"), plan.buf("succ")
        t["  dart_pairs"] = measure(lambda: plan.launch("dart_pairs", n, order, skeys, fwd, i32(n), plan.buf("ssrc"),
                                                        oo, io), repeat=a.repeat).median_ms
        bs = plan.scatter_slices(n)

        def scatter(bs=bs):
            for lo, hi in zip(bs[:-1], bs[1:]):
                plan.launch("scatter_slice", n, io, oo, i32(n), succ, i32(lo), i32(hi))

        t[f"  scatter_slice in {len(bs) - 1} slices"] = measure(scatter, repeat=a.repeat).median_ms
        t["  scatter + steps 3-6 (join_and_rank)"] = measure(lambda: (scatter(), plan.join_and_rank(osrc, n, elabel)),
                                                             repeat=a.repeat).median_ms
        if backend == "cuda-c":
            import pycuda.driver as drv

            from gpulab import cudac

            src_text = cudac.source_text("gpulab.euler", "kernels.cu") + PART
            rep = cudac.nvrtc_compile(src_text, "kernels.cu", {"BLOCK": plan.params["BLOCK"], "TILE": 1024},
                                      arch="sm_90", lineinfo=False)
            fn = drv.module_from_buffer(rep.cubin).get_function("dart_succ_part")
            g, b = plan.ew(n)
            for R in (1, 14):
                bounds = [m * k // R for k in range(R + 1)]

                def rounds(bounds=bounds):
                    for lo, hi in zip(bounds[:-1], bounds[1:]):
                        cudac.launch(fn, g, b, order, i32(n), darts, i32(lo), i32(hi))

                cuda.to_device(np.full(darts.size, -7, np.int32), to=darts)
                rounds()
                ok = np.array_equal(darts.copy_to_host()[:m], want)
                t[f"dart_succ, {R} slices (cs loads){'' if ok else ' (WRONG)'}"] = measure(rounds, repeat=a.repeat).median_ms
        for k, ms in t.items():
            rows.append({"backend": backend, "what": k, "ms": round(ms, 4)})
            print(f"{backend:7s} {k:44s} {ms:8.3f} ms", flush=True)
        rows.append({"backend": backend, "trail_stats": stats, "dart_labelling_stats": dstats, "params": plan.params})
        print(f"{backend:7s} trails {stats}; darts {dstats}", flush=True)
        del plan
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"about": "scripts/euler_undirected_probe.py: deep_graph(E, 4, seed 1) as directed and undirected, "
                       "ruling_set plans; CUDA events, median of --repeat", "edges": E, "device": device.info().name,
                       "versions": benchmark.versions(), "date": benchmark.utc_now(), "rows": rows}, f, indent=1)
            f.write("\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
