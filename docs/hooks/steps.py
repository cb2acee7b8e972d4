"""mkdocs hook: each ladder step's measured verdict, and the chapter's running table, from the
committed benchmark JSON (``docs/benchmarks/<chapter>-<device>.json``). No number is typed by hand.

``<!-- gpulab:step <chapter> <device> <variant> size="<label>" -->`` closes a step with one line:
its time on each backend at that size, the gain over the step before it (the previous variant of
the same backend in the benchmark's order, which is the registry's: the book's order) and its
share of the benchmark's peer (cuBLAS, CUB, a CPU baseline ...). ``vs="<variant>"`` compares
with another step instead of the previous one.

``<!-- gpulab:ladder <chapter> <device> size="<label>" -->`` is the running table of a chapter:
step | numba | CUDA C | gain over the step before | against the peer, one row per GPU
variant in the book's order (siboehm's SGEMM post keeps one such table growing through the
post; here it is rendered once, where the chapter sums up, and each step's line quotes its row).
"""

from __future__ import annotations

import importlib.util
import json
import re
from pathlib import Path

_spec = importlib.util.spec_from_file_location("gpulab_bench_tables", Path(__file__).with_name("bench_tables.py"))
_tables = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_tables)
num, ratio = _tables.num, _tables.ratio
OPTS, OPT = _tables.OPTS, _tables.OPT  # a marker's key="value" options, as bench_tables reads them
STEP = re.compile(r"^([ \t]*)<!-- gpulab:step (\S+) (\S+) (\S+)" + OPTS + r" -->$", re.MULTILINE)
LADDER = re.compile(r"^([ \t]*)<!-- gpulab:ladder (\S+) (\S+)" + OPTS + r" -->$", re.MULTILINE)
GPU = ("numba", "cuda-c")
BACKEND = {"numba": "numba", "cuda-c": "CUDA C"}
DEVICE = {"h200": "H200", "h100": "H100"}


class Missing(Exception):
    """A marker names a file, size or variant the JSON does not have: the build fails (strict)."""


def _load(docs_dir: Path, chapter: str, dev: str) -> dict:
    path = docs_dir / "benchmarks" / f"{chapter}-{dev}.json"
    if not path.exists():
        raise Missing(f"{path} does not exist")
    return json.loads(path.read_text())


def _timed(result: dict, size: str) -> dict[tuple[str, str], dict]:
    """(variant, backend) → record at `size`, for the records that were timed and checked."""
    out = {(r["variant"], r["backend"]): r for r in result["records"]
           if r["label"] == size and r.get("median_ms") is not None and r.get("check") is not False}
    if not out:
        labels = sorted({r["label"] for r in result["records"]})
        raise Missing(f"{result['chapter']}: no timed record at size {size!r}; sizes: {', '.join(labels)}")
    return out


def _order(result: dict, backend: str) -> list[str]:
    return list(dict.fromkeys(r["variant"] for r in result["records"] if r["backend"] == backend))


def _previous(result: dict, variant: str, backend: str, timed: dict) -> str | None:
    """The step before `variant` on `backend` that was timed at this size."""
    order = [v for v in _order(result, backend) if (v, backend) in timed]
    i = order.index(variant) if variant in order else -1
    return order[i - 1] if i > 0 else None


def ms(x: float) -> str:
    return f"{num(x)} ms"


def _gain(before: float, after: float, than: str = "") -> str:
    """`2.4× faster than x` / `1.3× slower than x` (a step can lose: the book says why), or
    `within 1% of x` where the difference would print as 1.00×."""
    r = before / after
    if 1 / 1.005 < r < 1.005:
        return f"within 1% of {than}".rstrip(" of") if than else "within 1%"
    text = f"{num(r)}× faster" if r >= 1 else f"{num(1 / r)}× slower"
    return f"{text} than {than}" if than else text


def step_line(result: dict, variant: str, size: str, dev: str, vs: str | None = None) -> str:
    timed = _timed(result, size)
    if vs is not None and not any((vs, b) in timed for b in GPU):
        raise Missing(f"{result['chapter']}: vs={vs!r} has no timed GPU record at {size!r}")
    parts = []
    for backend in GPU:
        rec = timed.get((variant, backend))
        if rec is None:
            continue
        prev = vs or _previous(result, variant, backend, timed)
        text = BACKEND[backend] + " " + ms(rec["median_ms"])  # (a plain concatenation: see bench_tables)
        extra = []
        if prev and (prev, backend) in timed:
            extra.append(_gain(timed[(prev, backend)]["median_ms"], rec["median_ms"], f"`{prev}`"))
        if rec.get("ratio_to_peer"):
            r = rec["ratio_to_peer"]
            extra.append(f"{ratio(r)} of the peer's speed" if r < 2 else f"{ratio(r)} the peer's speed")
        parts.append(text + (f" ({', '.join(extra)})" if extra else ""))
    if not parts:
        raise Missing(f"{result['chapter']}: variant {variant!r} has no timed GPU record at {size!r}")
    peer = next((r.get("peer") for r in timed.values() if r.get("peer")), None)
    device = DEVICE.get(dev, result["device"]["name"])
    tail = f" Peer: {peer}." if peer else ""
    return f"**Measured** ({device}, {size}): " + "; ".join(parts) + "." + tail


def ladder_table(result: dict, size: str, dev: str) -> str:
    timed = _timed(result, size)
    variants = [v for v in dict.fromkeys(r["variant"] for r in result["records"] if r["backend"] in GPU)
                if any((v, b) in timed for b in GPU)]
    head = ["step", "numba", "CUDA C", "gain over the step before", "vs the peer"]
    rows, best_before = [], None
    for v in variants:
        times = {b: timed[(v, b)]["median_ms"] for b in GPU if (v, b) in timed}
        best = min(times.values())
        gain = _gain(best_before, best) if best_before else "—"
        share = max((timed[(v, b)].get("ratio_to_peer") or 0) for b in times)
        rows.append([f"`{v}`"] + [ms(times[b]) if b in times else "—" for b in GPU] + [gain, ratio(share)])
        best_before = best
    peer = next((r.get("peer") for r in timed.values() if r.get("peer")), "the peer")
    lines = _tables._table(head, rows)
    device = DEVICE.get(dev, result["device"]["name"])
    caption = (f"*{device}, {size}; median of each variant's timed runs, from "
               f"`docs/benchmarks/{result['chapter']}-{dev}.json` ({result['date'][:10]}). Gain: the faster "
               f"backend against the step before's faster backend. Peer: {peer}.*")
    return "\n".join(lines + ["", caption, ""])


def on_page_markdown(markdown, page, config, files):
    docs_dir = Path(config["docs_dir"])

    def step(m: re.Match) -> str:
        chapter, dev, variant = m.group(2), m.group(3), m.group(4)
        opts = dict(OPT.findall(m.group(5) or ""))
        line = step_line(_load(docs_dir, chapter, dev), variant, opts["size"], dev, opts.get("vs"))
        return m.group(1) + line

    def ladder(m: re.Match) -> str:
        chapter, dev = m.group(2), m.group(3)
        opts = dict(OPT.findall(m.group(4) or ""))
        text = ladder_table(_load(docs_dir, chapter, dev), opts["size"], dev)
        return _tables._indent(m, text)

    markdown = STEP.sub(step, markdown)
    return LADDER.sub(ladder, markdown)
