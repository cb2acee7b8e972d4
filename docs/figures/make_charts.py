"""Draw the book's benchmark charts as SVG from the committed benchmark JSON (no GPU needed).

Run from the repository root:

    python docs/figures/make_charts.py

* ``docs/benchmarks/<chapter>-<device>.svg`` for every ``<!-- gpulab:bench <chapter> <device> -->``
  marker of the chapters (`gpulab.benchmark.chart`: one panel per size the table opens with,
  its ``sizes="a|b"`` option if it has one; the hook embeds the SVG under the table);
* ``docs/benchmarks/distributed-h200x2.svg`` (`scripts/bench_distributed.py`'s ``plot``);
* ``docs/benchmarks/gp-experiment-cpu.svg`` (`gpulab.gp.loop.plot_experiment`).

Text stays text and the files carry no date: the output is byte-for-byte reproducible.
"""

from __future__ import annotations

import importlib.util
import json
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from gpulab import benchmark  # noqa: E402
from gpulab.gp.loop import plot_experiment  # noqa: E402

BENCH = ROOT / "docs" / "benchmarks"
MARKER = re.compile(r"<!-- gpulab:bench (\S+) (\S+)((?:\s+[\w-]+=\"[^\"]*\")*) -->")


def bench_charts() -> list[Path]:
    out = []
    for md in sorted((ROOT / "docs").rglob("*.md")):
        for chapter, dev, opts in MARKER.findall(md.read_text()):
            data = BENCH / f"{chapter}-{dev}.json"
            if data.exists():
                sizes = dict(re.findall(r"([\w-]+)=\"([^\"]*)\"", opts)).get("sizes")
                out.append(benchmark.chart(json.loads(data.read_text()), data.with_suffix(".svg"),
                                           sizes.split("|") if sizes else None))
    return out


def distributed_chart() -> Path:
    spec = importlib.util.spec_from_file_location("bench_distributed", ROOT / "scripts" / "bench_distributed.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    path = BENCH / "distributed-h200x2.svg"
    mod.plot(json.loads((BENCH / "distributed-h200x2.json").read_text()), path)
    return path


def experiment_chart() -> Path:
    return plot_experiment(json.loads((BENCH / "gp-experiment-cpu.json").read_text()), BENCH / "gp-experiment-cpu.svg")


if __name__ == "__main__":
    for p in [*bench_charts(), distributed_chart(), experiment_chart()]:
        print(p.relative_to(ROOT))
