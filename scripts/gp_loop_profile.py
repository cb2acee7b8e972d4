"""Issue 29: where the host's time goes in a whole GP run at the paper's scale (25,000
individuals, 32 stocks x 768 days, 50 generations, GPU breeding, reuse on): per backend, one
run to warm the process, RUNS timed runs (their `timing`), then one run under cProfile, whose
functions are printed by their own time and by their cumulative time (gpulab's only).
Profiling slows Python code, so its shares, not its totals, are the point. ``--per-generation``:
instead, a run of 0 generations and one of GENERATIONS are profiled (each after a warm run), and
each function's calls and own time per generation are the difference over GENERATIONS: the
loop's cost without the warm-up's.

    python scripts/gp_loop_profile.py [--backends cuda-c numba] [--runs 3] [--top 40] [--out DIR]
    python scripts/gp_loop_profile.py --per-generation [--top 40]
"""

from __future__ import annotations

import argparse
import cProfile
import io
import pstats
from pathlib import Path

from gpulab.gp.cli import market_from
from gpulab.gp.loop import GPParams, evolve


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--backends", nargs="+", default=["cuda-c", "numba"])
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--top", type=int, default=40)
    ap.add_argument("--population", type=int, default=25_000)
    ap.add_argument("--generations", type=int, default=50)
    ap.add_argument("--out", type=Path)
    ap.add_argument("--per-generation", action="store_true")
    a = ap.parse_args()
    market = market_from("synthetic", 32, 768, 256, 0)
    params = GPParams(population=a.population, generations=a.generations)

    def run(backend):
        return evolve(market, train_days=768, params=params, backend=backend, breeding="gpu", seed=0, progress=None)

    if a.per_generation:
        return per_generation(market, a)
    for backend in a.backends:
        run(backend)
        for r in range(a.runs):
            t = run(backend).timing
            print(f"{backend:7} run {r}: total {t['total_s'] * 1e3:7.1f} ms  eval {t['evaluation_s'] * 1e3:6.1f}  "
                  f"breed {t['breeding_s'] * 1e3:6.1f}  init {t['init_s'] * 1e3:5.1f}", flush=True)
        prof = cProfile.Profile()
        prof.enable()
        t = run(backend).timing
        prof.disable()
        print(f"{backend:7} profiled: total {t['total_s'] * 1e3:7.1f} ms  eval {t['evaluation_s'] * 1e3:6.1f}  "
              f"breed {t['breeding_s'] * 1e3:6.1f}")
        for key in ("tottime", "cumulative"):
            s = io.StringIO()
            st = pstats.Stats(prof, stream=s).strip_dirs().sort_stats(key)
            st.print_stats(a.top if key == "tottime" else r"(loop|breeding_gpu|resident|host|programs|cudac|device|"
                           r"launch|readback|devicearray|dispatcher)", )
            text = s.getvalue()
            if key == "cumulative":  # (gpulab's and numba-cuda's entry points, the top ones)
                lines = text.splitlines()
                head = [i for i, x in enumerate(lines) if x.strip().startswith("ncalls")]
                text = "\n".join(lines[:head[0] + 1 + a.top]) if head else text
            print(f"== {backend} by {key}\n{text}")
            if a.out:
                a.out.mkdir(parents=True, exist_ok=True)
                (a.out / f"profile-{backend}-{key}.txt").write_text(text)


def per_generation(market, a) -> None:
    """Each function's calls and own time per generation: a profiled run of ``a.generations``
    generations minus one of 0, over ``a.generations``."""

    def profiled(backend, G):
        params = GPParams(population=a.population, generations=G)
        evolve(market, train_days=768, params=params, backend=backend, breeding="gpu", seed=0, progress=None)
        prof = cProfile.Profile()
        prof.enable()
        evolve(market, train_days=768, params=params, backend=backend, breeding="gpu", seed=0, progress=None)
        prof.disable()
        return {f"{k[0].rsplit('/', 1)[-1]}:{k[1]}({k[2]})": (v[1], v[2]) for k, v in pstats.Stats(prof).stats.items()}

    for backend in a.backends:
        zero, full = profiled(backend, 0), profiled(backend, a.generations)
        rows = []
        for name, (calls, own) in full.items():
            c0, t0 = zero.get(name, (0, 0.0))
            rows.append((name, (calls - c0) / a.generations, (own - t0) / a.generations * 1e6))
        rows.sort(key=lambda r: -r[2])
        total = sum(r[2] for r in rows)
        lines = [f"== {backend}: per generation, profiled ({a.generations} generations minus 0): {total:.0f} us own time",
                 f"{'calls':>8} {'own us':>9}  function"]
        lines += [f"{c:8.1f} {t:9.1f}  {n}" for n, c, t in rows[:a.top]]
        print("\n".join(lines), flush=True)
        if a.out:
            a.out.mkdir(parents=True, exist_ok=True)
            (a.out / f"per-generation-{backend}.txt").write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
