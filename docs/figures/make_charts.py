"""Draw the book's benchmark charts as SVG from the committed benchmark JSON (no GPU needed).

Run from the repository root:

    python docs/figures/make_charts.py

* ``docs/benchmarks/<chapter>-<device>.svg`` for every ``<!-- gpulab:bench <chapter> <device> -->``
  marker of the chapters (`gpulab.benchmark.chart`: one panel per size the table opens with,
  its ``sizes="a|b"`` option if it has one; the hook embeds the SVG under the table);
* ``docs/benchmarks/distributed-h200x2.svg`` (`scripts/bench_distributed.py`'s ``plot``);
* ``docs/benchmarks/gp-experiment-cpu.svg`` and ``gp-experiment-grid-h100.svg``
  (`gpulab.gp.loop.plot_experiment`).

Text stays text and the files carry no date: the output is byte-for-byte reproducible. Each
SVG starts with a comment naming the JSON it was drawn from and its SHA-256
(``tests/test_figures.py`` checks that no chart is older than its data).
"""

from __future__ import annotations

import hashlib
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


STAMP = re.compile(r"<!-- drawn from (\S+) sha256 ([0-9a-f]{64})(.*?) -->")


def stamp(svg: Path, data: Path, extra: str = "") -> Path:
    """Put ``<!-- drawn from <data> sha256 <hash><extra> -->`` after the SVG's XML declaration."""
    text = svg.read_text()
    head, rest = text.split("\n", 1)
    rel = data.relative_to(ROOT) if data.is_relative_to(ROOT) else data.name
    svg.write_text(f"{head}\n<!-- drawn from {rel} sha256 {digest(data)}{extra} -->\n{rest}")
    return svg


def digest(data: Path) -> str:
    return hashlib.sha256(data.read_bytes()).hexdigest()


def bench_charts() -> list[Path]:
    out = []
    for md in sorted((ROOT / "docs").rglob("*.md")):
        for chapter, dev, opts in MARKER.findall(md.read_text()):
            data = BENCH / f"{chapter}-{dev}.json"
            if data.exists():
                sizes = dict(re.findall(r"([\w-]+)=\"([^\"]*)\"", opts)).get("sizes")
                svg = benchmark.chart(json.loads(data.read_text()), data.with_suffix(".svg"),
                                      sizes.split("|") if sizes else None)
                out.append(stamp(svg, data, f' sizes="{sizes}"' if sizes else ""))
    return out


def distributed_chart() -> Path:
    spec = importlib.util.spec_from_file_location("bench_distributed", ROOT / "scripts" / "bench_distributed.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    path, data = BENCH / "distributed-h200x2.svg", BENCH / "distributed-h200x2.json"
    mod.plot(json.loads(data.read_text()), path)
    return stamp(path, data)


def experiment_charts() -> list[Path]:
    """The charts of the experiments the book shows as SVG (`gp-experiment-cpu`, the paper's grid on an H100)."""
    out = []
    for stem in ("gp-experiment-cpu", "gp-experiment-grid-h100"):
        data = BENCH / f"{stem}.json"
        out.append(stamp(plot_experiment(json.loads(data.read_text()), BENCH / f"{stem}.svg"), data))
    return out


if __name__ == "__main__":
    for p in [*bench_charts(), distributed_chart(), *experiment_charts()]:
        print(p.relative_to(ROOT))
