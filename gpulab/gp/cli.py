"""``gpulab gp evolve`` and ``gpulab gp experiment`` (the parser lives in [`gpulab.cli`][gpulab.cli]).

Both commands check every argument, load the data and check that they can write their outputs
before any long work; a mistake is one line on stderr with exit status 2. Their defaults fit the
device: the paper's scale on a GPU; on numba's simulator (no GPU) the CPU backend and a size that
finishes in under a minute, said in one line on stderr. A progress bar with a time estimate goes
to stderr; Ctrl-C keeps the generations (runs) finished, in a JSON marked ``"interrupted": true``,
and exits with status 130.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from gpulab.commands import writable_dir
from gpulab.errors import GpulabError

SIM_NUMBA = (32, 2)  # population, generations when --backend numba is named on the simulator (~10 individuals
# × 32 stocks × 1,024 days per second there)


def settle_defaults(args, command: str) -> str | None:
    """Fill the device-dependent defaults into ``args``; on the simulator, the line that says so."""
    from gpulab import device
    from gpulab.commands import GP_DEFAULTS

    mode = "sim" if device.on_simulator() else "gpu"
    backend, population, generations = GP_DEFAULTS[command][mode]
    chosen = []
    if args.backend is None:
        if getattr(args, "variant", None) is not None:  # a variant named without a backend: one that has it
            from gpulab.gp.variants import REGISTRY

            has = [b for b in ("numba", "cuda-c", "cpu") if args.variant in REGISTRY.names(b)]
            backend = backend if backend in has or not has else has[0]
        args.backend = backend
        chosen.append(f"backend {backend}")
    if mode == "sim" and args.backend != "cpu":
        population, generations = SIM_NUMBA
    if args.population is None:
        args.population = population
        chosen.append(f"population {population:,}")
    if args.generations is None:
        args.generations = generations
        chosen.append(f"generations {generations}")
    if mode != "sim" or not chosen:
        return None
    flags = "/".join("--" + c.split()[0] for c in chosen)
    return (f"simulator (no GPU): {', '.join(chosen)} (defaults sized to finish in under a minute here); "
            f"pass {flags} to change")


def resolve_variant(args) -> None:
    """``--variant`` (or the backend's best) that can run here, else a GpulabError."""
    from gpulab.gp.variants import REGISTRY

    args.variant = REGISTRY.resolve(args.variant, args.backend).name


def prepare_out(out: str, stem: str, suffixes=(".json", ".png")) -> Path:
    """Create ``out`` and check that the outputs can be written there, before any long work."""
    if not stem or Path(stem).name != stem or stem in (".", ".."):
        raise GpulabError(f"--stem {stem!r}: expected a file name without a directory (the files go into --out)")
    return writable_dir(out, "--out", files=tuple(f"{stem}{suffix}" for suffix in suffixes))


def check_data_spec(spec: str) -> None:
    if not (spec in ("synthetic", "sample") or (spec.startswith("csv:") and spec[4:].strip(","))):
        raise GpulabError(f"--data {spec!r}: expected synthetic, sample or csv:PATH[,PATH...]")


def market_from(spec: str, stocks: int, days: int, test_days: int, seed: int):
    """``synthetic`` (stocks × (days + test_days)), ``sample`` or ``csv:PATH[,PATH...]``."""
    from gpulab.gp import load_csv, sample_market, synthetic_market

    check_data_spec(spec)
    if spec == "synthetic":
        return synthetic_market(stocks, days + test_days, seed=seed)
    if spec == "sample":
        return sample_market()
    return load_csv([p for p in spec[4:].split(",") if p])


def _say(line: str) -> None:
    from gpulab.progress import write

    write(line)


def run_evolve(args) -> int:
    from gpulab.gp.loop import EvolutionInterrupted, GPParams, check_breeding, evolve, write

    check_data_spec(args.data)
    note = settle_defaults(args, "evolve")
    synthetic = args.data == "synthetic"
    if not synthetic:
        given = [f for f, v in (("--stocks", args.stocks), ("--test-days", args.test_days)) if v is not None]
        if given:
            raise GpulabError(f"{given[0]} applies to --data synthetic only (with {args.data} the test period is "
                              "the days after --days)")
    stocks = 32 if args.stocks is None else args.stocks
    test_days = 256 if args.test_days is None else args.test_days
    params = GPParams(population=args.population, generations=args.generations).check()
    resolve_variant(args)
    args.breeding = check_breeding(args.breeding, params.population, args.backend)
    if synthetic and args.days is None:
        args.days = 768
    market = market_from(args.data, stocks, args.days or 0, test_days, args.seed)
    train_days = args.days if args.days is not None else market.days * 3 // 4
    if not 1 <= train_days < market.days:
        raise GpulabError(f"--days {train_days}: the data have {market.days} evaluation days; "
                          "train on 1 or more and leave some for the test")
    out = prepare_out(args.out, args.stem)
    train, test = market.split(train_days)
    tell = sys.stderr if args.json else sys.stdout
    if note:
        _say(note)
    print(f"gp evolve: {market} — train {train.days} days, test {test.days} days; population {args.population:,}, "
          f"{args.generations} generations, variant {args.variant} [{args.backend}], breeding on the "
          f"{args.breeding.upper()}, seed {args.seed}",
          file=tell, flush=True)
    try:
        result = evolve(market, train_days=train_days, params=params, variant=args.variant, backend=args.backend,
                        seed=args.seed, progress=True, breeding=args.breeding, reuse=not args.no_reuse)
    except EvolutionInterrupted as exc:
        result = exc.result
    paths = write(result, out, stem=args.stem, extra={"data": args.data})
    t, best = result.timing, result.best
    done = result.history[-1]["generation"] if result.history else None
    if args.json:
        summary = {"command": "gp evolve", "interrupted": result.interrupted, "generations_done": done,
                   "generations": args.generations, "population": args.population, "variant": args.variant,
                   "backend": args.backend, "breeding": args.breeding, "seed": args.seed, "data": args.data,
                   "stocks": train.stocks, "train_days": train.days, "test_days": test.days, "best": best,
                   "train_best_per100": result.history[-1]["train_best_per100"] if result.history else None,
                   "test_of_best_per100": result.history[-1]["test_of_best_per100"] if result.history else None,
                   "timing": {k: v for k, v in t.items() if k != "what"}, "files": [str(p) for p in paths]}
        print(json.dumps(summary))
    elif best:
        h = result.history[-1]
        print(f"best rule: buy {best['buy']}\n           sell {best['sell']}\n"
              f"           train {h['train_best_per100']:+.4f}, test {h['test_of_best_per100']:+.4f} per 100 days")
    if result.interrupted:
        when = "before generation 0 finished" if done is None else f"after generation {done} of {args.generations}"
        _say(f"gpulab gp evolve: interrupted {when}; wrote what finished "
             f"(\"interrupted\": true) to {', '.join(map(str, paths))}")
        return 130
    if not args.json:
        print(f"{args.generations} generations in {t['total_s']:.2f} s (evaluation {t['evaluation_s']:.2f} s, "
              f"breeding {t['breeding_s']:.2f} s; before them, {t['warmup_s']:.2f} s of compilation (kernels, "
              f"breeding) and upload); wrote {', '.join(map(str, paths))}")
    return 0


def run_experiment(args) -> int:
    from gpulab import benchmark, device
    from gpulab.gp.loop import EvolutionInterrupted, GPParams, _check_experiment, experiment, plot_experiment

    note = settle_defaults(args, "experiment")
    params = GPParams(population=args.population, generations=args.generations)
    seeds = tuple(range(args.seeds))
    configs = [(S, D) for S in args.stocks for D in args.days]
    if args.stocks_total is None:
        args.stocks_total = max(64, 2 * max(args.stocks))
    _check_experiment(args.stocks_total, args.test_days, configs, seeds, params, args.variant,
                      args.backend, 2010, True)
    resolve_variant(args)
    out = prepare_out(args.out, args.stem)
    tell = sys.stderr if args.json else sys.stdout
    if note:
        _say(note)
    print(f"gp experiment: {len(configs)} configurations × {args.seeds} seeds; population "
          f"{args.population:,}, {args.generations} generations, variant {args.variant} [{args.backend}]; test "
          f"{args.test_days} days × {args.stocks_total} stocks", file=tell, flush=True)
    try:
        data = experiment(configs=configs, params=params, variant=args.variant, backend=args.backend, seeds=seeds,
                          stocks_total=args.stocks_total, test_days=args.test_days, progress=True)
    except EvolutionInterrupted as exc:
        data = exc.result
    data.update({"device": device.info().as_dict(), "versions": benchmark.versions(), "where": args.where,
                 "date": benchmark.utc_now()})
    data["rows"] = experiment_rows(data)
    path = out / f"{args.stem}.json"
    path.write_text(json.dumps(data, indent=1) + "\n")
    paths = [path] + ([plot_experiment(data, out / f"{args.stem}.png")] if data["summary"] else [])
    if args.json:
        print(json.dumps({"command": "gp experiment", "interrupted": data["interrupted"],
                          "runs_done": len(data["runs"]), "runs_planned": data["runs_planned"],
                          "settings": data["settings"], "summary": data["summary"],
                          "seconds": sum(r["seconds"] for r in data["runs"]), "files": [str(p) for p in paths]}))
    else:
        print("\nstocks × train days   train (per 100 days)   test (per 100 days)")
        for s in data["summary"]:
            print(f"{s['stocks']:6d} × {s['train_days']:4d}       {s['train_mean']:+.4f} ± {s['train_std']:.4f}"
                  f"      {s['test_mean']:+.4f} ± {s['test_std']:.4f}")
    if data["interrupted"]:
        _say(f"gpulab gp experiment: interrupted after {len(data['runs'])} of {data['runs_planned']} runs; wrote "
             f"what finished (\"interrupted\": true) to {', '.join(map(str, paths))}")
        return 130
    if not args.json:
        print(f"wrote {', '.join(map(str, paths))}")
    return 0


def experiment_rows(data: dict) -> list[dict]:
    """The summary as the book's table (``<!-- gpulab:rows ... -->``)."""
    return [{"training stocks": s["stocks"], "training days": s["train_days"],
             "train fitness per 100 days": f"{s['train_mean']:+.4f} ± {s['train_std']:.4f}",
             "test fitness per 100 days": f"{s['test_mean']:+.4f} ± {s['test_std']:.4f}", "runs": s["runs"]}
            for s in data["summary"]]
