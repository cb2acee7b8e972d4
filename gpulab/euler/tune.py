"""Chapter 5 tuning sweep on the GPU: the ruling set's SPACING / GROWTH / RANK_SPACING and the
launch parameters BLOCK / JUMP_CHECK, both backends, on the blog's deep and shallow graphs
(42M edges over 10.5M vertices). Writes rows JSON for the book and the winners for the bench.

    python -m gpulab.euler.tune --out gpu-out
        -> euler-tuning-<device>.json      every configuration: total and per-stage medians
           euler-best-params.json          {"ruling_set": {backend: {param: value}}}: pass it to
                                           the bench as GPULAB_EULER_PARAMS=<that file>
        and prints the diff that makes the winners the registry's defaults (variants.py).

Two phases per backend, each configuration checked edge for edge against the first circuit of
its graph (itself checked on the device: every edge once, chained, closed):

1. SPACING x GROWTH, with RANK_SPACING = SPACING, instrumented runs (CUDA events between the
   stages): the labelling stage picks SPACING and GROWTH, the ranking stage picks RANK_SPACING
   (the two stages are independent, so one sweep serves both);
2. BLOCK x JUMP_CHECK with those winners, timed like the benchmark (whole pipeline, CUDA
   events, median), against the registry's defaults measured the same way.

The score of a configuration is the sum of its times on the deep and the shallow graph.
Dry run on a CPU: GPULAB_DEVICE=sim python -m gpulab.euler.tune --out /tmp/t  (tiny graphs).
"""

from __future__ import annotations

import argparse
import difflib
import json
import statistics
import sys
import time
from pathlib import Path

import numpy as np

import gpulab  # noqa: F401  (device selection first)
from gpulab import benchmark, device
from gpulab.errors import GpulabError
from gpulab.euler import bench
from gpulab.euler.variants import REGISTRY
from gpulab.timing import measure

SPACINGS = (16, 32, 64, 128, 256)
GROWTHS = (4, 8, 16, 64)
BLOCKS = (128, 256, 512)
JUMP_CHECKS = (4, 8, 16)
TUNED = ("SPACING", "GROWTH", "RANK_SPACING", "BLOCK", "JUMP_CHECK")


def _graphs(sim: bool, labels: list[str]):
    cases = {c.label: c for c in bench.full_cases() + bench.cases(quick=False)}
    if sim:  # tiny graphs on the simulator (the bench's simulated cases)
        cases = {c.label: c for c in bench.cases(quick=False)}
        labels = [c.label for c in bench.cases(quick=False) if c.size["kind"] != "debruijn"]
    rng = np.random.default_rng(1)
    return [(lab, bench.setup(cases[lab], rng)) for lab in labels]


class Runner:
    """One plan per (backend, BLOCK); the other parameters are read by the plan at run time."""

    def __init__(self, backend: str, capacity: int):
        self.v = REGISTRY.get("ruling_set", backend)
        self.backend, self.capacity = backend, capacity
        self.plan, self.block = None, None

    def configure(self, cfg: dict):
        params = self.v.launch_params({k: v for k, v in cfg.items() if not device.on_simulator() or k != "BLOCK"})
        if self.plan is None or params["BLOCK"] != self.block:
            self.plan = None
            bench._free_plans({"plans": {}, "sim": device.on_simulator()})
            self.plan = self.v.run(self.capacity, params)
            self.block = params["BLOCK"]
        self.plan.params.update(params)
        return self.plan

    def run(self, state):
        E = state["E"]
        s, d = self.plan.load(state["d_src"], state["d_dst"], E)
        out, _ = self.plan.directed(s, d, E)
        return out


def check(runner: Runner, state, expected: dict, label: str) -> None:
    """The circuit of this configuration must be the first one's (verified on the device)."""
    from numba import cuda

    plan, E = runner.plan, state["E"]
    out = runner.run(state)
    cuda.synchronize()
    if label not in expected:
        ok, why = plan.verify(out, state["d_src"], state["d_dst"], E)
        if not ok:
            raise GpulabError(f"{label}: not an Euler circuit: {why}")
        expected[label] = cuda.device_array(E, np.int32)
        expected[label].copy_to_device(out[:E])
        return
    diff, first = plan.differences(out, expected[label], E)
    if diff:
        raise GpulabError(f"{label}: the circuit differs from the first configuration's at {diff} positions "
                          f"(first {first})")


def staged(runner: Runner, state, repeat: int) -> dict:
    """Median total and per-stage times of ``repeat`` instrumented runs (after one warm-up)."""
    plan = runner.plan
    runner.run(state)
    per_stage: dict = {}
    totals = []
    plan.instrument = True
    try:
        for _ in range(repeat):
            runner.run(state)
            for k, v in plan.stage_ms.items():
                per_stage.setdefault(k, []).append(v)
            totals.append(sum(plan.stage_ms.values()))
    finally:
        plan.instrument = False
    out = {"total_ms": statistics.median(totals)}
    out.update({f"{k}_ms": statistics.median(v) for k, v in per_stage.items()})
    out["host_syncs"] = plan.stats.get("host_syncs")
    out["splitters"] = plan.stats.get("splitters")
    out["label_jump_rounds"] = plan.stats.get("label_jump_rounds")
    return out


def sweep_backend(backend: str, graphs, args, expected: dict, rows: list, log) -> dict | None:
    v = REGISTRY.get("ruling_set", backend)
    if v.unavailable_reason():
        log(f"{backend}: {v.unavailable_reason()}")
        return None
    sim = device.on_simulator()
    runner = Runner(backend, max(st["E"] for _, st in graphs) + 1)
    default = {k: v.params[k] for k in TUNED}
    spacings = (4, 8) if sim else SPACINGS  # the simulator: a dry run of the script
    growths = (2,) if sim else GROWTHS

    # phase 1: SPACING x GROWTH (RANK_SPACING = SPACING), per-stage times
    score_label, score_rank = {}, {}
    for S in spacings:
        for G in growths:
            cfg = dict(default, SPACING=S, GROWTH=G, RANK_SPACING=S)
            runner.configure(cfg)
            lab_sum = rank_sum = 0.0
            for label, st in graphs:
                row = {"phase": "spacing", "backend": backend, "graph": label, **cfg}
                try:
                    check(runner, st, expected, label)
                    row.update(staged(runner, st, args.stage_repeat))
                    lab_sum += row["labelling_ms"]
                    rank_sum += row["ranking_ms"]
                except GpulabError as exc:
                    row["error"] = str(exc)
                    lab_sum = rank_sum = float("inf")
                rows.append(row)
                log(_fmt(row))
            score_label[(S, G)] = lab_sum
            score_rank.setdefault(S, []).append(rank_sum)
    S_best, G_best = min(score_label, key=score_label.get)
    R_best = min(score_rank, key=lambda s: min(score_rank[s]))
    log(f"{backend}: labelling best SPACING={S_best} GROWTH={G_best}; ranking best RANK_SPACING={R_best}")

    # phase 2: BLOCK x JUMP_CHECK with those, whole pipeline timed like the benchmark
    blocks = (8,) if sim else BLOCKS
    checks = (3,) if sim else JUMP_CHECKS
    scores = {}
    configs = [dict(default, SPACING=S_best, GROWTH=G_best, RANK_SPACING=R_best, BLOCK=b, JUMP_CHECK=j)
               for b in blocks for j in checks]
    configs.append(dict(default, phase="default"))
    for cfg in configs:
        phase = cfg.pop("phase", "launch")
        runner.configure(cfg)
        total = 0.0
        for label, st in graphs:
            row = {"phase": phase, "backend": backend, "graph": label, **cfg}
            try:
                check(runner, st, expected, label)
                t = measure(lambda: runner.run(st), warmup=2, repeat=args.repeat)
                row.update(total_ms=t.median_ms, spread=t.spread, host_syncs=runner.plan.stats.get("host_syncs"))
                total += t.median_ms
            except GpulabError as exc:
                row["error"] = str(exc)
                total = float("inf")
            rows.append(row)
            log(_fmt(row))
        if phase == "launch":
            scores[tuple(cfg[k] for k in TUNED)] = total
        else:
            default_total = total
    best = dict(zip(TUNED, min(scores, key=scores.get)))
    log(f"{backend}: best {best}: {scores[tuple(best.values())]:.4g} ms for the graphs together "
        f"(registry defaults {default_total:.4g} ms)")
    runner.plan = None
    bench._free_plans({"plans": {}, "sim": sim})
    return {"params": best, "score_ms": scores[tuple(best.values())], "default_score_ms": default_total,
            "default": default}


def _fmt(row: dict) -> str:
    keys = " ".join(f"{k}={row[k]}" for k in TUNED)
    if "error" in row:
        return f"  {row['phase']:8s} {row['backend']:6s} {row['graph']:12s} {keys}  ERROR {row['error'][:200]}"
    stages = " ".join(f"{k[:-3]}={row[k]:.3g}" for k in ("labelling_ms", "ranking_ms") if k in row)
    return (f"  {row['phase']:8s} {row['backend']:6s} {row['graph']:12s} {keys}  total={row['total_ms']:.4g} ms "
            f"{stages} syncs={row.get('host_syncs')}")


def registry_diff(best: dict) -> str:
    """The change to gpulab/euler/variants.py that makes the winners the defaults: numba's (or
    the only backend's) values in PARAMS["ruling_set"], the other backend's differences in
    BACKEND_PARAMS."""
    path = Path(__file__).resolve().with_name("variants.py")
    lines = path.read_text().splitlines(keepends=True)
    ref_backend = "numba" if "numba" in best else next(iter(best))
    ref = best[ref_backend]
    base = {"BLOCK": 256, "JUMP_CHECK": 8}
    rs = {k: ref[k] for k in ("SPACING", "GROWTH", "RANK_SPACING")}
    rs.update({k: ref[k] for k in base if ref[k] != base[k]})
    rs_line = '    "ruling_set": dict(BASE, ' + ", ".join(f"{k}={v}" for k, v in rs.items()) + "),\n"
    others = {b: {k: v for k, v in p.items() if v != ref[k]} for b, p in best.items() if b != ref_backend}
    bp_line = "BACKEND_PARAMS: dict = {" + ", ".join(
        f'("ruling_set", "{b}"): dict(' + ", ".join(f"{k}={v}" for k, v in d.items()) + ")"
        for b, d in others.items() if d) + "}\n"
    new = [rs_line if ln.startswith('    "ruling_set": dict(BASE') else bp_line if ln.startswith("BACKEND_PARAMS")
           else ln for ln in lines]
    return "".join(difflib.unified_diff(lines, new, "a/gpulab/euler/variants.py", "b/gpulab/euler/variants.py"))


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default="gpu-out")
    ap.add_argument("--repeat", type=int, default=10, help="timed runs per configuration (phase 2)")
    ap.add_argument("--stage-repeat", type=int, default=5, help="instrumented runs per configuration (phase 1)")
    ap.add_argument("--sizes", nargs="*", default=["deep-42M", "shallow-42M"])
    ap.add_argument("--backends", nargs="*", default=["cuda-c", "numba"])
    args = ap.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    log = lambda m: print(f"[{time.perf_counter() - t0:6.1f}s] {m}", flush=True)  # noqa: E731
    sim = device.on_simulator()
    graphs = _graphs(sim, args.sizes)
    log(f"graphs: {[lab for lab, _ in graphs]}")
    rows, best, expected = [], {}, {}
    for backend in args.backends:
        res = sweep_backend(backend, graphs, args, expected, rows, log)
        if res:
            best[backend] = res
    dev = benchmark.device_slug({"device": device.info().as_dict()})
    result = {"rows": rows, "measured": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
              "device": device.info().name, "graphs": [lab for lab, _ in graphs],
              "score": "sum of the medians on the graphs", "best": best, "versions": benchmark.versions()}
    (out / f"euler-tuning-{dev}.json").write_text(json.dumps(result, indent=1) + "\n")
    params = {"ruling_set": {b: r["params"] for b, r in best.items()}}
    (out / "euler-best-params.json").write_text(json.dumps(params, indent=1) + "\n")
    log(f"wrote {out / f'euler-tuning-{dev}.json'}, {out / 'euler-best-params.json'}")
    for b, r in best.items():
        print(f"  {b}: {r['params']}  {r['score_ms']:.4g} ms (defaults {r['default']}: {r['default_score_ms']:.4g} ms)")
    if best:
        print("\nTo make the winners the registry's defaults:\n")
        print(registry_diff({b: r["params"] for b, r in best.items()}) or "(no change: the defaults won)")
    return 0 if best else 1


if __name__ == "__main__":
    sys.exit(main())
