"""Where the GPU waits in one Euler circuit: the public call (`gpulab.euler.euler_circuit`,
ruling_set with the registry's parameters) on a deep graph already on the device, as the
benchmark's ``deep-<E>`` case builds it, with every launch stamped.

After two warm-up calls, one call runs with each launch of the Euler plan and of its sort plans
wrapped: the host's clock on entry and on return, and a CUDA event recorded behind the launch.
The host's reads of the device (`EulerPlan.read`, `read_stats64`) are stamped too (the
pairing's sorts are given the largest id: they read nothing back). On the GPU's clock (events from one recorded at the start), launch i ends at
``end_i``; it cannot start before the host returned from launching it (``ret_i``), so the GPU
waited about ``max(0, ret_i - end_{i-1})`` before it: that is counted as the host's gap, with
the launch and the stage it belongs to. The events add a few µs of host time per launch, so
the call is also timed without them (``--calls`` calls, each alone between two events).

    python scripts/euler_timeline.py 41943040 [--backends cuda-c numba] [--calls 5] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import statistics
import time


def timeline(E: int, backend: str, calls: int) -> dict:
    import numpy as np

    import gpulab.euler as eu  # (gpulab before numba: it picks the device)
    from gpulab.euler import api, bench, generators as gen
    from gpulab.euler.variants import REGISTRY
    from numba import cuda

    v = REGISTRY.get("ruling_set", backend)
    tuned = bench.tuned_params(v) or None
    how = dict(variant="ruling_set", backend=backend, params=tuned)
    ds, dd = gen.deep_graph(E, 4, int(np.random.default_rng().integers(1 << 30)), device=True)
    for _ in range(2):
        eu.euler_circuit(ds, dd, **how)
    cuda.synchronize()
    plain = []
    for _ in range(calls):
        a, b = cuda.event(), cuda.event()
        a.record()
        eu.euler_circuit(ds, dd, **how)
        b.record()
        b.synchronize()
        plain.append(a.elapsed_time(b))

    plan = api.plan_for(v, E + 1, tuned)
    rows, stage = [], ["?"]
    t0 = [0.0]

    def wrap_launch(K, who):
        def K2(name, *a, **k):
            h = time.perf_counter()
            r = K(name, *a, **k)
            ev = cuda.event()
            ev.record()
            rows.append(dict(kind="launch", name=name, who=who, stage=stage[0], enter=h - t0[0],
                             ret=time.perf_counter() - t0[0], ev=ev))
            return r
        return K2

    def wrap_read(f, what):
        def f2(*a, **k):
            h = time.perf_counter()
            r = f(*a, **k)
            rows.append(dict(kind="read", name=what, stage=stage[0], enter=h - t0[0], ret=time.perf_counter() - t0[0]))
            return r
        return f2

    saved = {"K": plan.K, "read": plan.read, "read_stats64": plan.read_stats64, "mark": plan.mark}
    sorts = list(plan._sorts.values())
    sort_saved = [(sp, sp.K) for sp in sorts]
    plan.K = wrap_launch(plan.K, "euler")
    plan.read = wrap_read(plan.read, "read")
    plan.read_stats64 = wrap_read(plan.read_stats64, "read_stats64")

    def mark(s):
        stage[0] = s
        return saved["mark"](s)

    plan.mark = mark
    from gpulab.launch import KeptLaunches

    kept_saved = [sp.kept for sp in sorts]
    for sp, K in sort_saved:
        sp.K = wrap_launch(K, "sort")
        sp.kept = KeptLaunches(enabled=False)  # (every launch through the wrapped provider, none kept)
    try:
        cuda.synchronize()
        e0 = cuda.event()
        e0.record()
        t0[0] = time.perf_counter()
        eu.euler_circuit(ds, dd, **how)
        e1 = cuda.event()
        e1.record()
        e1.synchronize()
    finally:
        plan.K, plan.read, plan.read_stats64, plan.mark = saved["K"], saved["read"], saved["read_stats64"], saved["mark"]
        for (sp, K), kept in zip(sort_saved, kept_saved):
            sp.K, sp.kept = K, kept
    span = e0.elapsed_time(e1)
    prev_end, gaps, by_stage, busy = 0.0, [], {}, {}
    for r in rows:
        if r["kind"] != "launch":
            continue
        end = e0.elapsed_time(r.pop("ev"))
        r["end"] = end
        gap = max(0.0, r["ret"] * 1e3 - prev_end)
        r["gap_ms"] = gap
        by_stage[r["stage"]] = by_stage.get(r["stage"], 0.0) + gap
        busy[r["stage"]] = busy.get(r["stage"], 0.0) + (end - max(prev_end, r["ret"] * 1e3))
        gaps.append(r)
        prev_end = end
    for r in rows:
        r.pop("ev", None)
    top = sorted(gaps, key=lambda r: -r["gap_ms"])[:15]
    return dict(backend=backend, E=E, plain_ms=plain, plain_median_ms=statistics.median(plain), stamped_span_ms=span,
                launches=sum(r["kind"] == "launch" for r in rows), reads=sum(r["kind"] == "read" for r in rows),
                gap_ms=sum(r["gap_ms"] for r in gaps), gap_by_stage=by_stage, busy_by_stage=busy,
                top_gaps=[{k: r[k] for k in ("name", "who", "stage", "gap_ms", "ret", "end")} for r in top], rows=rows)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("E", type=int)
    ap.add_argument("--backends", nargs="*", default=["cuda-c", "numba"])
    ap.add_argument("--calls", type=int, default=5)
    ap.add_argument("--json")
    a = ap.parse_args()
    out = []
    for backend in a.backends:
        t = timeline(a.E, backend, a.calls)
        out.append(t)
        print(f"== {backend} E={a.E}: plain call {t['plain_median_ms']:.3f} ms (median of {a.calls}: "
              f"{[round(x, 3) for x in t['plain_ms']]}); stamped span {t['stamped_span_ms']:.3f} ms, "
              f"{t['launches']} launches, {t['reads']} reads; GPU waited for the host {t['gap_ms']:.3f} ms", flush=True)
        for s in t["gap_by_stage"]:
            print(f"   {s:16s} waited {t['gap_by_stage'][s]:.3f} ms   busy {t['busy_by_stage'][s]:.3f} ms")
        for r in t["top_gaps"][:10]:
            print(f"   gap {r['gap_ms'] * 1e3:7.1f} us before {r['who']}:{r['name']} ({r['stage']})")
    if a.json:
        with open(a.json, "w") as f:
            json.dump(out, f, indent=1)


if __name__ == "__main__":
    main()
