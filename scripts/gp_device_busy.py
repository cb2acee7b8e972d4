"""Issue 29: how much of a paper-scale GP run (25,000 individuals, 32 stocks x 768 days, 50
generations, GPU breeding, reuse on) the device is busy. Per backend: a warm run, RUNS timed runs
(their `timing`), then one run with CUPTI's activity records on (through PyTorch's profiler, which
records every kernel and copy of the process, numba's and pycuda's included): the union of the
device's busy intervals in the run's timed part (the last ``total_s`` of activity: the profiled
call includes its warm-up), the sum per kernel name there, the idle gaps by the activities around
them, and the run's wall time. What the wall time has beyond the busy time is the device waiting for the
host: the most that queueing generations ahead could save.

    python scripts/gp_device_busy.py [--backends cuda-c numba] [--runs 3] [--out DIR]
"""

from __future__ import annotations

import argparse
import json
import statistics
from collections import defaultdict
from pathlib import Path

from gpulab.gp.cli import market_from
from gpulab.gp.loop import GPParams, evolve


def busy(intervals):
    """Union length of ``[(start, end)]`` (microseconds), and the span first start -> last end."""
    if not intervals:
        return 0.0, 0.0
    intervals = sorted(intervals)
    total, (s0, e0) = 0.0, intervals[0]
    first = s0
    last = e0
    for s, e in intervals[1:]:
        last = max(last, e)
        if s > e0:
            total += e0 - s0
            s0, e0 = s, e
        else:
            e0 = max(e0, e)
    total += e0 - s0
    return total, last - first


def short(name: str) -> str:
    """A kernel's name without numba's mangling (``gpulab::gp::x::kernel[abi...`` -> ``kernel``)."""
    name = name.split("[abi")[0]
    return name.split("::")[-1] if "::" in name else name


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--backends", nargs="+", default=["cuda-c", "numba"])
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--population", type=int, default=25_000)
    ap.add_argument("--generations", type=int, default=50)
    ap.add_argument("--out", type=Path)
    a = ap.parse_args()
    from torch.autograd import DeviceType
    from torch.profiler import ProfilerActivity, profile

    market = market_from("synthetic", 32, 768, 256, 0)
    params = GPParams(population=a.population, generations=a.generations)

    def run(backend):
        return evolve(market, train_days=768, params=params, backend=backend, breeding="gpu", seed=0, progress=None)

    report = {}
    for backend in a.backends:
        run(backend)
        totals = []
        for r in range(a.runs):
            t = run(backend).timing
            totals.append(t["total_s"] * 1e3)
            print(f"{backend:7} run {r}: total {totals[-1]:7.1f} ms  eval {t['evaluation_s'] * 1e3:6.1f}  "
                  f"breed {t['breeding_s'] * 1e3:6.1f}", flush=True)
        with profile(activities=[ProfilerActivity.CUDA]) as prof:
            res = run(backend)
        ivs, acts = [], []
        for e in prof.events():
            if e.device_type != DeviceType.CUDA:
                continue
            s, en = e.time_range.start, e.time_range.end
            ivs.append((s, en))
            acts.append((s, en, e.name))
        wall = res.timing["total_s"] * 1e3
        # the profiled call includes its warm-up: the timed part is the last `wall` ms of activity
        # (the clock stops just after the last validation comes back)
        end = max(e for _, e in ivs)
        timed = [(max(s, end - wall * 1e3), e) for s, e in ivs if e > end - wall * 1e3]
        b, span = busy(timed)
        b_all, span_all = busy(ivs)
        print(f"{backend:7} profiled run: wall {wall:7.1f} ms (total_s); in its last {wall:.1f} ms of device "
              f"activity the device was busy {b / 1e3:7.1f} ms ({len(timed)} activities); whole call incl. "
              f"warm-up busy {b_all / 1e3:.1f} ms over {span_all / 1e3:.1f} ms")
        # the device's idle gaps in the timed part, by the activities around them (what it waited for)
        named = sorted((max(st, end - wall * 1e3), en, nm) for st, en, nm in acts if en > end - wall * 1e3)
        gaps, reach = defaultdict(lambda: [0, 0.0]), None
        for (s0, e0, n0), (s1, e1, n1) in zip(named, named[1:]):
            reach = e0 if reach is None else max(reach, e0)
            if s1 - reach > 1.0:
                key = f"{short(n0)} -> {short(n1)}"
                gaps[key][0] += 1
                gaps[key][1] += s1 - reach
        idle = sorted(gaps.items(), key=lambda kv: -kv[1][1])[:12]
        total_gaps = sum(v[1] for v in gaps.values()) / 1e3
        print(f"   idle gaps over 1 us, by the activities before -> after (total {total_gaps:.1f} ms):")
        for k, (n, us) in idle:
            print(f"   {us / 1e3:8.2f} ms  {n:5d}x  {k}")
        per = defaultdict(lambda: [0, 0.0])  # (per kernel or copy: the timed part only)
        for st, en, nm in named:
            per[short(nm)][0] += 1
            per[short(nm)][1] += en - st
        top = sorted(per.items(), key=lambda kv: -kv[1][1])[:20]
        for name, (n, us) in top:
            print(f"   {us / 1e3:8.2f} ms  {n:6d}x  {name[:90]}")
        report[backend] = {"timed_total_ms": totals, "median_total_ms": statistics.median(totals),
                           "profiled_total_ms": wall, "busy_ms": b / 1e3, "span_ms": span / 1e3,
                           "activities": len(timed), "busy_with_warmup_ms": b_all / 1e3,
                           "per_name": {k: {"count": n, "ms": us / 1e3} for k, (n, us) in top},
                           "idle_gaps": {k: {"count": n, "ms": us / 1e3} for k, (n, us) in idle}}
    if a.out:
        a.out.mkdir(parents=True, exist_ok=True)
        from gpulab.benchmark import utc_now, versions
        from gpulab.device import info

        (a.out / "gp-device-busy.json").write_text(json.dumps(
            {"device": info().name, "versions": versions(), "date": utc_now(), "backends": report}, indent=1))
    print("== summary: backend | median total ms | profiled total ms | device busy in it ms")
    for k, v in report.items():
        print(f"{k:7} | {v['median_total_ms']:7.1f} | {v['profiled_total_ms']:7.1f} | {v['busy_ms']:7.1f}")


if __name__ == "__main__":
    main()
