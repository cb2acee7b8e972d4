"""``gpulab gp evolve`` and ``gpulab gp experiment`` (the parser lives in :mod:`gpulab.cli`)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from gpulab.errors import GpulabError


def market_from(spec: str, stocks: int, days: int, test_days: int, seed: int):
    """``synthetic`` (stocks × (days + test_days)), ``sample`` or ``csv:PATH[,PATH...]``."""
    from gpulab.gp import load_csv, sample_market, synthetic_market

    if spec == "synthetic":
        return synthetic_market(stocks, days + test_days, seed=seed)
    if spec == "sample":
        return sample_market()
    if spec.startswith("csv:"):
        return load_csv(spec[4:].split(","))
    raise GpulabError(f"--data {spec!r}: expected synthetic, sample or csv:PATH[,PATH...]")


def run_evolve(args) -> int:
    from gpulab.gp.evolve import GPParams, evolve, write

    if args.data == "synthetic" and args.days is None:
        args.days = 768
    market = market_from(args.data, args.stocks, args.days or 0, args.test_days, args.seed)
    train_days = args.days if args.data == "synthetic" else (args.days or market.days * 3 // 4)
    if train_days >= market.days:
        raise GpulabError(f"--days {train_days}: the data have {market.days} evaluation days; leave some for the test")
    params = GPParams(population=args.population, generations=args.generations)
    print(f"gp evolve: {market} — train {train_days} days, test {market.days - train_days} days; "
          f"population {args.population}, variant {args.variant} [{args.backend}], seed {args.seed}")
    result = evolve(market, train_days=train_days, params=params, variant=args.variant, backend=args.backend,
                    seed=args.seed)
    paths = write(result, args.out, stem=args.stem, extra={"data": args.data})
    t = result.timing
    print(f"best rule: buy {result.best['buy']}\n           sell {result.best['sell']}")
    print(f"{args.generations} generations in {t['total_s']:.2f} s (evaluation {t['evaluation_s']:.2f} s, "
          f"breeding {t['breeding_s']:.2f} s; before them, {t['warmup_s']:.2f} s of compilation (kernels, breeding) and "
          f"upload); wrote {', '.join(map(str, paths))}")
    return 0


def run_experiment(args) -> int:
    from gpulab.gp.evolve import GPParams, experiment, plot_experiment

    params = GPParams(population=args.population, generations=args.generations)
    data = experiment(params=params, variant=args.variant, backend=args.backend, seeds=tuple(range(args.seeds)),
                      stocks_total=args.stocks_total, test_days=args.test_days)
    from gpulab import benchmark, device

    data.update({"device": device.info().as_dict(), "versions": benchmark.versions(), "where": args.where,
                 "date": benchmark.utc_now()})
    data["rows"] = experiment_rows(data)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    path = out / f"{args.stem}.json"
    path.write_text(json.dumps(data, indent=1) + "\n")
    png = plot_experiment(data, out / f"{args.stem}.png")
    print("\nstocks × train days   train (per 100 days)   test (per 100 days)")
    for s in data["summary"]:
        print(f"{s['stocks']:6d} × {s['train_days']:4d}       {s['train_mean']:+.4f} ± {s['train_std']:.4f}"
              f"      {s['test_mean']:+.4f} ± {s['test_std']:.4f}")
    print(f"wrote {path}, {png}", file=sys.stdout)
    return 0


def experiment_rows(data: dict) -> list[dict]:
    """The summary as the book's table (``<!-- gpulab:rows ... -->``)."""
    return [{"training stocks": s["stocks"], "training days": s["train_days"],
             "train fitness per 100 days": f"{s['train_mean']:+.4f} ± {s['train_std']:.4f}",
             "test fitness per 100 days": f"{s['test_mean']:+.4f} ± {s['test_std']:.4f}", "runs": s["runs"]}
            for s in data["summary"]]
