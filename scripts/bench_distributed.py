"""Beyond one GPU, measured: the subset search and GP evaluation on 1 and 2 GPUs through Dask,
against the single-GPU call without Dask, in one run.

    python scripts/bench_distributed.py --out gpu-out
        -> distributed-<device>.json (gpulab-bench/1 records + Dask's overhead) and a table last

Per case: a warm-up call (each worker compiles its kernels and opens its CUDA context: not
timed), then ``--repeat`` timed calls, wall clock on the client (the whole call: scatter, tasks,
gather, merge), median. Every answer is checked against the no-Dask answer of the same case
(subset: combination, distance bit for bit and rank; GP: the fitness array bit for bit). For the
subset search each task reports its own search time on its worker: the record keeps the busiest
worker's sum, so ``wall - busiest`` is what Dask and the split cost on top of the GPUs' work.

The no-Dask baseline runs last, in this process, after the clusters are closed (a CUDA context
in the client while workers start would be a context on GPU 0 beside worker 0's).
Dry run on a CPU: GPULAB_DEVICE=sim python scripts/bench_distributed.py --sim --out /tmp/d
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

import numpy as np

import gpulab  # noqa: F401  (device selection first)
from gpulab import benchmark, device
from gpulab import distributed as gd


def subset_cases(sim: bool):
    if sim:
        return [dict(label="C(12,4)", n=12, k=4, days=40, variant="incremental", backend="numba")]
    best = dict(variant="incremental", backend="cuda-c")  # chapter 2's fastest (subset-h200.json)
    # C(300,5) was asked for; the incremental kernels keep Q (n(n-1)/2 doubles) in shared memory,
    # which holds n <= 237 on an H200 (n = 300 needs 366,992 bytes of the 232,448: a LimitError
    # from the worker, first run). So: C(200,6), and the largest n that fits, with k = 5 and 6.
    # C(300,5): above that cap, chapter 2's incremental_global (Q read from global memory)
    return [dict(label="C(200,6)", n=200, k=6, days=250, **best), dict(label="C(236,6)", n=236, k=6, days=250, **best),
            dict(label="C(236,5)", n=236, k=5, days=250, **best),
            dict(label="C(300,5)", n=300, k=5, days=250, variant="incremental_global", backend="cuda-c")]


def gp_cases(sim: bool):
    if sim:
        return [dict(label="P=16 2x64", P=16, stocks=2, days=64, variant="register", backend="numba")]
    out = []
    for stocks, days in ((32, 768), (128, 4096)):  # the seed market and chapter 3's large one
        for variant in ("bitsliced", "register"):
            out.append(dict(label=f"4x seed P=100000 {stocks}x{days}", P=100_000, stocks=stocks, days=days,
                            variant=variant, backend="numba"))
    return out


def wall(fn, repeat: int):
    """(median ms, every call's ms, the last call's result, the last call's (start, end) by
    time.time(), which the tasks' clocks are compared with)."""
    times, result = [], None
    for _ in range(repeat):
        e0, t0 = time.time(), time.perf_counter()
        result = fn()
        times.append((time.perf_counter() - t0) * 1e3)
        span = (e0, time.time())
    return statistics.median(times), times, result, span


def scatter_ms(client, values: int, repeat: int = 20) -> float:
    """A subset call's scatter alone: `values` float64 to every worker (broadcast, as
    `search_chunks` does), then released; median ms."""
    q = np.random.default_rng(0).random(values)
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        f = client.scatter(q, broadcast=True, hash=False)
        times.append((time.perf_counter() - t0) * 1e3)
        del f
    return statistics.median(times)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=".")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--sim", action="store_true", help="tiny cases on the simulator (a dry run)")
    ap.add_argument("--only", choices=("subset", "gp"), default=None, help="only the subset search's or GP's cases")
    ap.add_argument("--chunks-per-worker", type=int, default=None,
                    help="an experiment: this many rank ranges per worker (default: gpulab's default_chunks)")
    ap.add_argument("--client-batch-ms", type=float, default=None,
                    help="an experiment: the client's batching interval for messages to the scheduler "
                         "(Dask's Client.scheduler_comm.interval, 10 ms in distributed/client.py; not a setting)")
    args = ap.parse_args()
    sim = args.sim or device.on_simulator()
    from distributed import Client

    import gpulab.gp as gp
    import gpulab.subset as ss
    from gpulab.gp import bench as gp_bench
    from gpulab.gp.market import synthetic_market

    gpus = gd.visible_gpus()
    counts = [1, 2] if sim or len(gpus) >= 2 else [1]
    print(f"GPUs visible: {gpus or 'none (simulator: CPU workers)'}; clusters of {counts} workers", flush=True)
    inputs = {}
    subset_run = subset_cases(sim) if args.only != "gp" else []
    gp_run = gp_cases(sim) if args.only != "subset" else []
    for c in subset_run:
        inputs[c["label"]] = ss.correlation(ss.synthetic_returns(c["days"], c["n"], seed=11))
    for c in gp_run:
        key = (c["P"], c["stocks"], c["days"])
        if key not in inputs:
            inputs[key] = (gp_bench.population(c["P"]), synthetic_market(c["stocks"], c["days"], seed=gp_bench.MARKET_SEED))
    records, overheads, answers, gpus_used, scatters = [], {}, {}, {}, {}
    for workers in counts:
        cluster = gd.local_cluster(gpus=workers, cpu_workers=workers)
        client = Client(cluster)
        if args.client_batch_ms is not None:
            client.scheduler_comm.interval = args.client_batch_ms / 1e3  # Dask internals: an experiment only
        try:
            client.wait_for_workers(workers, timeout=300)
            info = client.run(gd.worker_device)
            gpus_used[workers] = sorted((i["ordinal"], i["pci_bus_id"]) for i in info.values() if i["ordinal"] is not None)
            print(f"== {workers} worker(s): {sorted(info.values(), key=str)}", flush=True)
            client.run(lambda: None)
            overheads[workers] = gd.overhead_ms(client)
            print(f"   empty task round trip {overheads[workers]:.2f} ms", flush=True)
            scatters[workers] = scatter_ms(client, 200 * 199 // 2)
            print(f"   scatter of C(200)'s Q to every worker {scatters[workers]:.2f} ms", flush=True)
            for c in subset_run:
                C = inputs[c["label"]]
                chunks = args.chunks_per_worker * workers if args.chunks_per_worker else None
                call = lambda: gd.search_chunks(C, c["k"], client=client, variant=c["variant"], backend=c["backend"],  # noqa: E731
                                                chunks=chunks)
                try:
                    call()  # warm-up: every worker compiles and opens its context
                except Exception as exc:  # noqa: BLE001  (recorded, the other cases go on)
                    records.append({"case": c["label"], "what": "subset", "workers": workers, "variant": c["variant"],
                                    "error": f"{type(exc).__name__}: {exc}"})
                    print(f"   subset {c['label']}: {type(exc).__name__}: {exc}", flush=True)
                    continue
                med, samples, parts, span = wall(call, args.repeat)
                best = gd.merge(parts)
                per_worker = {}
                for p in parts:
                    per_worker[p.worker] = per_worker.get(p.worker, 0.0) + p.seconds * 1e3
                total = ss.choose(c["n"], c["k"])
                answers[("subset", c["label"], workers)] = (best.rank, best.distance)
                records.append({"chapter": "distributed", "case": c["label"], "what": "subset", "workers": workers,
                                "variant": c["variant"], "backend": c["backend"], "median_ms": med, "samples_ms": samples,
                                "subsets": total, "throughput": total / (med / 1e3), "unit": "subsets/s",
                                "chunks": len(parts), "busiest_worker_ms": max(per_worker.values()),
                                "worker_ms": per_worker, "dask_and_split_ms": med - max(per_worker.values()),
                                "last_call_timeline_ms": gd.call_timeline(parts, *span),
                                "rank": best.rank, "distance": best.distance})
                print(f"   subset {c['label']:9s} {med:9.2f} ms  {total / med / 1e6:8.3g} Gsubsets/s  chunks {len(parts)}"
                      f"  busiest worker {max(per_worker.values()):.2f} ms", flush=True)
                print("     last call (ms): " + ", ".join(f"{k} {v:.1f}" for k, v in records[-1]["last_call_timeline_ms"].items()),
                      flush=True)
            for c in gp_run:
                pop, market = inputs[(c["P"], c["stocks"], c["days"])]
                call = lambda: gd.evaluate(pop, market, client=client, variant=c["variant"], backend=c["backend"])  # noqa: E731
                try:
                    call()
                except Exception as exc:  # noqa: BLE001
                    records.append({"case": c["label"], "what": "gp", "workers": workers, "variant": c["variant"],
                                    "error": f"{type(exc).__name__}: {exc}"})
                    print(f"   gp {c['label']} {c['variant']}: {type(exc).__name__}: {exc}", flush=True)
                    continue
                med, samples, fit, _ = wall(call, args.repeat)
                answers[("gp", c["label"], c["variant"], workers)] = fit
                records.append({"chapter": "distributed", "case": c["label"], "what": "gp", "workers": workers,
                                "variant": c["variant"], "backend": c["backend"], "median_ms": med, "samples_ms": samples,
                                "individuals": c["P"], "stocks": c["stocks"], "days": c["days"]})
                print(f"   gp {c['label']:28s} {c['variant']:9s} {med:9.2f} ms", flush=True)
        finally:
            client.close()
            cluster.close()
    # the baseline: the single-device call, no Dask, in this process
    base = {}
    for c in subset_run:
        C = inputs[c["label"]]
        call = lambda: ss.least_correlated(C, c["k"], c["variant"], c["backend"])  # noqa: E731
        call()
        med, samples, r, _ = wall(call, args.repeat)
        base[("subset", c["label"])] = med
        ok = all(answers.get(("subset", c["label"], w)) == (r.rank, r.distance) for w in counts)
        records.append({"chapter": "distributed", "case": c["label"], "what": "subset", "workers": 0,
                        "variant": c["variant"], "backend": c["backend"], "median_ms": med, "samples_ms": samples,
                        "note": "no Dask: gpulab.subset.least_correlated in the client process", "rank": r.rank,
                        "distance": r.distance, "answers_equal": ok})
        print(f"   no Dask subset {c['label']:9s} {med:9.2f} ms  answers equal: {ok}", flush=True)
    for c in gp_run:
        pop, market = inputs[(c["P"], c["stocks"], c["days"])]
        call = lambda: np.asarray(gp.evaluate(pop, market, c["variant"], c["backend"]))  # noqa: E731
        call()
        med, samples, fit, _ = wall(call, args.repeat)
        base[("gp", c["label"], c["variant"])] = med
        ok = all(np.array_equal(answers.get(("gp", c["label"], c["variant"], w)), fit) for w in counts)
        records.append({"chapter": "distributed", "case": c["label"], "what": "gp", "workers": 0, "variant": c["variant"],
                        "backend": c["backend"], "median_ms": med, "samples_ms": samples, "answers_equal": ok,
                        "note": "no Dask: gpulab.gp.evaluate in the client process"})
        print(f"   no Dask gp {c['label']:28s} {c['variant']:9s} {med:9.2f} ms  answers equal: {ok}", flush=True)
    # speedups: 2 workers against 1 (both through Dask), and against no Dask
    by = {(r["what"], r["case"], r["variant"], r["workers"]): r for r in records if "median_ms" in r}
    for r in by.values():
        if r["workers"] == 2:
            one = by.get((r["what"], r["case"], r["variant"], 1))
            zero = by.get((r["what"], r["case"], r["variant"], 0))
            r["speedup_vs_1_worker"] = one["median_ms"] / r["median_ms"] if one else None
            r["efficiency"] = r["speedup_vs_1_worker"] / 2 if one else None
            r["speedup_vs_no_dask"] = zero["median_ms"] / r["median_ms"] if zero else None
    result = {"schema": "gpulab-distributed/1", "chapter": "distributed", "date": benchmark.utc_now(),
              "device": device.info().as_dict(), "gpus": gpus, "versions": {**benchmark.versions(), **_dask_versions()},
              "settings": {"repeat": args.repeat, "timing": "wall clock of the whole call on the client, after one "
                           "warm-up call (compile, contexts); median", "cluster": "gpulab.distributed.local_cluster: "
                           "one Nanny worker process per GPU, one thread, CUDA_VISIBLE_DEVICES=i",
                           "chunks_per_worker": args.chunks_per_worker or gd.CHUNKS_PER_WORKER,
                           "chunks_per_worker_default": not args.chunks_per_worker,
                           "client_batch_ms": args.client_batch_ms if args.client_batch_ms is not None else "Dask's (10)"},
              "empty_task_ms": overheads, "scatter_q200_ms": scatters, "worker_gpus": gpus_used, "records": records}
    result["rows"] = summary_rows(result)
    name = "sim" if sim else f"{benchmark.device_slug(result)}x{len(gpus)}"  # e.g. h200x2 (the committed run's name)
    Path(args.out).mkdir(parents=True, exist_ok=True)
    out = Path(args.out) / f"distributed-{name}.json"
    out.write_text(json.dumps(result, indent=1, default=str) + "\n")
    plot(result, out.with_suffix(".png"))
    print(f"\nwrote {out}\n")
    print(f"{'case':34s} {'variant':12s} {'no Dask':>9s} {'1 GPU':>9s} {'2 GPUs':>9s} {'2 vs 1':>7s} {'eff':>5s}")
    for r in by.values():
        if r["workers"] == 2:
            z = by.get((r["what"], r["case"], r["variant"], 0))
            o = by.get((r["what"], r["case"], r["variant"], 1))
            print(f"{r['what'] + ' ' + r['case']:34s} {r['variant']:12s} {z['median_ms'] if z else float('nan'):9.2f} "
                  f"{o['median_ms']:9.2f} {r['median_ms']:9.2f} {r['speedup_vs_1_worker']:7.2f} {r['efficiency']:5.2f}")
    print(f"empty task round trip (ms): {overheads}")
    bad = [r for r in records if r.get("answers_equal") is False]
    return 1 if bad else 0


def summary_rows(result: dict) -> list[dict]:
    """One row per case: no Dask, 1 and 2 workers, the speedups (what the book's table shows)."""
    by = {(r["what"], r["case"], r["variant"], r["workers"]): r for r in result["records"] if "median_ms" in r}
    rows = []
    for (what, case, variant, workers), r in by.items():
        if workers != 2:
            continue
        one, zero = by.get((what, case, variant, 1)), by.get((what, case, variant, 0))
        rows.append({"what": what, "case": case, "variant": variant,
                     "no_dask_ms": round(zero["median_ms"], 2) if zero else None,
                     "1_gpu_ms": round(one["median_ms"], 2) if one else None, "2_gpus_ms": round(r["median_ms"], 2),
                     "2_vs_1": round(one["median_ms"] / r["median_ms"], 2) if one else None,
                     "efficiency": round(one["median_ms"] / r["median_ms"] / 2, 2) if one else None,
                     "2_vs_no_dask": round(zero["median_ms"] / r["median_ms"], 2) if zero else None,
                     "dask_and_split_ms": round(r["dask_and_split_ms"], 1) if "dask_and_split_ms" in r else None})
    return rows


def plot(result: dict, path: Path) -> None:
    """Bars: each case's time without Dask, on 1 GPU and on 2 GPUs through Dask (one group of
    horizontal bars per case: the cases are different problems, not points of one axis)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = result["rows"]
    series = (("no_dask_ms", "1 GPU, no Dask", "#999999"), ("1_gpu_ms", "1 GPU, Dask", "#E69F00"),
              ("2_gpus_ms", "2 GPUs, Dask", "#0072B2"))
    with plt.rc_context(benchmark.CHART_RC):
        fig, ax = plt.subplots(figsize=(benchmark.CHART_WIDTH_IN, 0.9 + 0.5 * len(rows)), layout="constrained")
        y = np.arange(len(rows))
        for i, (key, label, color) in enumerate(series):
            ax.barh(y + (i - 1) * 0.27, [r[key] or 0 for r in rows], 0.27, label=label, color=color)
        ax.set_yticks(y, [f"{r['what']} {r['case']}\n{r['variant']}" for r in rows])
        ax.invert_yaxis()
        ax.set_xscale("log")
        ax.xaxis.set_major_formatter(benchmark.log_tick_label)
        ax.grid(True, axis="x", alpha=0.3)
        ax.set_xlabel("ms per call, median (log scale; shorter is faster)")
        ax.set_title(f"{result['device']['name']} x {len(result.get('gpus') or [])}: one call, wall clock on the client")
        fig.legend(loc="outside lower center", ncols=3, frameon=False)
        benchmark.save_chart(fig, path)
        plt.close(fig)


def _dask_versions() -> dict:
    import dask
    import distributed

    return {"dask": dask.__version__, "distributed": distributed.__version__}


if __name__ == "__main__":
    sys.exit(main())
