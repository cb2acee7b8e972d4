"""mkdocs hook: a chapter's traced memory counts, from the committed ``gpulab trace`` JSON
(``docs/benchmarks/trace-<chapter>.json``, written by ``gpulab trace CHAPTER --json``).

``<!-- gpulab:trace <chapter> -->`` becomes one table row per variant and kernel (named
``variant: kernel``, or just the variant where each launches one kernel): global load and
store sectors per request, shared-memory and constant-memory wavefronts per request, and
global bytes moved per element stored, with a caption that says where the counts come from
(numba's simulator, at which size) and how to reproduce them. A kernel that several variants
launch with the same counts (a shared final pass) is one row naming them all.

Options (``key="value"`` after the chapter): ``variants="a|b"`` (only these variants, in this
order), ``kernels="x|y"`` (only these kernels), ``lines="yes"`` (and, collapsed under the
table, the same counts per source line and array), and ``measured="<stem or path>"`` with
``size="<size label>"``: beside each traced per-request count, the same count that Nsight
Compute measured on a GPU for the numba backend of that variant and kernel, read from a
``gpulab bench CHAPTER --metrics`` JSON (a stem names ``docs/benchmarks/metrics/<stem>.json``,
a path is relative to ``docs/``; see `gpulab.metrics`). Each such cell reads ``traced /
measured``; the constant-memory column stays traced only (ncu gives no constant-memory
wavefront count among the metrics gpulab reads). A marker naming a file, variant, kernel or
size that the JSONs do not have fails the build; a variant whose numba record was not
profiled shows "—" and the caption says why.
"""

from __future__ import annotations

import importlib.util
import json
import re
from pathlib import Path

_spec = importlib.util.spec_from_file_location("gpulab_bench_tables", Path(__file__).with_name("bench_tables.py"))
_tables = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_tables)
num = _tables.num
OPTS, OPT = _tables.OPTS, _tables.OPT  # a marker's key="value" options, as bench_tables reads them
MARKER = re.compile(r"^([ \t]*)<!-- gpulab:trace (\S+)" + OPTS + r" -->$", re.MULTILINE)
COUNT_HEAD = ["load sectors", "store sectors", "shared wavefronts", "constant wavefronts"]  # per request
HEAD = ["variant: kernel"] + COUNT_HEAD + ["bytes / output"]
LINE_HEAD = ["variant", "source line", "array"] + COUNT_HEAD
PAIRS = (("global_load_sectors", "global_load_requests"), ("global_store_sectors", "global_store_requests"),
         ("shared_wavefronts", "shared_requests"), ("constant_wavefronts", "constant_requests"))
MAX_ROWS = 20
# the per-request ratios of a `gpulab bench --metrics` record's kernel, in COUNT_HEAD's order (constant: none)
MEASURED = ("global_load_sectors_per_request", "global_store_sectors_per_request", "shared_wavefronts_per_request", None)


class Missing(Exception):
    """A marker names a file, variant or kernel the trace JSON does not have: the build fails."""


def load(docs_dir: Path, chapter: str) -> dict:
    path = docs_dir / "benchmarks" / f"trace-{chapter}.json"
    if not path.exists():
        raise Missing(f"{path} does not exist (write it with `gpulab trace {chapter} --json > {path}`)")
    return json.loads(path.read_text())


def load_measured(docs_dir: Path, name: str) -> dict:
    """A `gpulab bench --metrics` JSON: `docs/benchmarks/metrics/<name>.json`, or `name` as a
    path relative to `docs/` where it has a slash or ends in `.json`."""
    path = docs_dir / name if "/" in name or name.endswith(".json") else docs_dir / "benchmarks" / "metrics" / f"{name}.json"
    if not path.exists():
        raise Missing(f"{path} does not exist (write it with `gpulab bench CHAPTER --metrics`)")
    return json.loads(path.read_text())


def measured_kernels(metrics: dict, size: str, rows: list[dict]) -> dict[tuple[str, str], dict | str]:
    """For each traced row's (variant, kernel): the numba record's ncu counts of that kernel at
    `size`, or the reason the record was not profiled. Raises `Missing` for a size, variant or
    kernel the JSON does not have."""
    where = f"{metrics['chapter']} --metrics JSON"
    labels = list(dict.fromkeys(r["label"] for r in metrics["records"]))
    if size not in labels:
        raise Missing(f"{where}: no size {size!r}; measured: {', '.join(labels)}")
    recs = {r["variant"]: r for r in metrics["records"] if r["label"] == size and r["backend"] == "numba"}
    out: dict[tuple[str, str], dict | str] = {}
    for r in rows:
        rec = recs.get(r["variant"])
        if rec is None:
            raise Missing(f"{where}: no numba record of {r['variant']!r} at {size}")
        if rec.get("metrics") is None:
            why = rec.get("metrics_skipped") or rec.get("skipped") or "not profiled"
            out[(r["variant"], r["kernel"])] = why
        elif r["kernel"] not in rec["metrics"]:
            raise Missing(f"{where}: {r['variant']!r} at {size} has no kernel {r['kernel']!r}; "
                          f"measured: {', '.join(rec['metrics'])}")
        else:
            out[(r["variant"], r["kernel"])] = rec["metrics"][r["kernel"]]
    return out


def _measured_cell(traced: str, values: list) -> str:
    """`traced / measured` (several variants measured apart: their range)."""
    values = [v for v in values if v is not None]
    shown = list(dict.fromkeys(num(v) for v in values))
    if not shown:
        return traced if traced == "—" else f"{traced} / —"  # no requests of that kind: one dash
    return f"{traced} / {shown[0] if len(shown) == 1 else num(min(values)) + '–' + num(max(values))}"


def _ratio(counts: dict, n: str, d: str) -> str:
    return num(counts[n] / counts[d]) if counts[d] else "—"


def _select(result: dict, variants: list[str] | None, kernels: list[str] | None) -> list[dict]:
    rows = result["rows"]
    known = list(dict.fromkeys(r["variant"] for r in rows))
    for v in variants or ():
        if v not in known:
            raise Missing(f"trace-{result['chapter']}.json: no traced variant {v!r}; traced: {', '.join(known)}")
    for k in kernels or ():
        if not any(r["kernel"] == k for r in rows):
            raise Missing(f"trace-{result['chapter']}.json: no kernel {k!r}")
    if variants:
        rows = sorted((r for r in rows if r["variant"] in variants), key=lambda r: variants.index(r["variant"]))
    return [r for r in rows if not kernels or r["kernel"] in kernels]


def _merged(rows: list[dict]) -> list[tuple[list[str], dict]]:
    """One entry per (kernel, counts): the variants that launch that kernel with those counts."""
    out: dict[tuple, tuple[list[str], dict]] = {}
    for r in rows:
        key = (r["kernel"], tuple(sorted(r["totals"].items())), r["outputs"])
        out.setdefault(key, ([], r))[0].append(r["variant"])
    return sorted(out.values(), key=lambda e: len(e[0]) > 1)  # a step's own kernels first, shared ones after


def _who(names: list[str], every: list[str]) -> str:
    if len(names) > 1 and names == every:
        return f"all {len(names)}"
    return ", ".join(f"`{n}`" for n in names)


def trace_table(result: dict, variants: list[str] | None = None, kernels: list[str] | None = None,
                lines: bool = False, metrics: dict | None = None, size: str | None = None) -> str:
    """The table (and caption) of a `gpulab:trace` marker; with `metrics` (a `gpulab bench
    --metrics` JSON) and `size` (one of its size labels), each per-request cell also gives the
    GPU's count."""
    rows = _select(result, variants, kernels)
    if not rows:
        raise Missing(f"trace-{result['chapter']}.json: no row to show")
    measured = measured_kernels(metrics, size, rows) if metrics is not None else None
    every = list(dict.fromkeys(r["variant"] for r in rows))
    body = []
    for names, r in _merged(rows):
        t = r["totals"]
        cells = [_ratio(t, n, d) for n, d in PAIRS]
        if measured is not None:
            got = [measured[(v, r["kernel"])] for v in names]
            got = [g for g in got if isinstance(g, dict)]
            cells = [c if key is None else _measured_cell(c, [g[key] for g in got]) for c, key in zip(cells, MEASURED)]
        body.append([f"{_who(names, every)}: `{r['kernel']}`"] + cells + [num(r["bytes_per_output"])])
    head = HEAD  # the caption says which number is which: longer heads squeeze the names
    if len(rows) == len(every):  # one kernel per variant: the kernel's name says nothing more
        head, body = ["variant"] + head[1:], [[r[0].split(": ")[0]] + r[1:] for r in body]
    out = _tables._table(head, body[:MAX_ROWS])
    if len(body) > MAX_ROWS:
        out += _tables._details(f"All {len(body)} rows", _tables._table(head, body))
    if lines:
        detail = []
        for names, r in _merged(rows):
            for c in r["by_line"]:
                detail.append([_who(names, every), f"`{c['file'].rsplit('/', 1)[-1]}:{c['line']}` (`{r['kernel']}`)",
                               f"`{c['array']}`"] + [_ratio(c, n, d) for n, d in PAIRS])
        out += _tables._details("The same counts per source line and array", _tables._table(LINE_HEAD, detail))
    sizes = ", ".join(dict.fromkeys(r["size"] for r in rows))
    chapter = result["chapter"]
    skipped = [n for n in result.get("not_traced", ()) if n["backend"] == "cuda-c"]
    tail = " CUDA C variants cannot run on the simulator and are not traced." if skipped else ""
    lead = "Two numbers in a cell: traced on the simulator / measured on the GPU. " if measured is not None else ""
    caption = (f"*{lead}Traced on numba's CUDA simulator at size {sizes} (`docs/benchmarks/trace-{chapter}.json`; "
               f"reproduce with `gpulab trace {chapter}`). Counts per warp-wide request: 32-byte global "
               f"sectors loaded and stored, shared-memory and constant-memory wavefronts (1 is the best case); "
               f"bytes / output: global bytes moved per element stored (atomics are not counted). ")
    if measured is None:
        caption += f"Predictions at a tiny size, not yet measured on a GPU with Nsight Compute.{tail}*"
    else:
        caption += _measured_caption(chapter, metrics, size, measured) + tail + "*"
    return "\n".join(out + ["", caption, ""])


def _measured_caption(chapter: str, metrics: dict, size: str, measured: dict) -> str:
    quick = " --quick" if metrics.get("settings", {}).get("quick") else ""
    recs = [r for r in metrics["records"] if r.get("label") == size and r.get("metrics")]
    kernels = next((r["metrics_kernels"] for r in recs if r.get("metrics_kernels")), None)
    launches = next((r["metrics_launches"] for r in recs if r.get("metrics_launches")), None)
    flags = (f" --metrics-kernels \"{kernels}\"" if kernels else "") + (f" --metrics-launches {launches}" if launches else "")
    text = (f"Measured: the same count from Nsight Compute on an {metrics['device']['name']} "
            f"({metrics['date'][:10]}) for the numba kernel at {size}, ncu run with `--clock-control none` "
            f"(reproduce with `gpulab bench {chapter}{quick} --metrics{flags} --sizes \"{size}\"`)"
            + (f", over the first {launches} launches of these kernels in one call" if launches else "")
            + ". Constant wavefronts are the simulator's only: ncu gives no such count.")
    skipped = dict.fromkeys(f"`{v}` ({why.split(':')[0].split(';')[0]})" for (v, _), why in measured.items()
                            if isinstance(why, str))
    if skipped:
        text += f" Not measured: {', '.join(skipped)}."
    return text


def _render(m: re.Match, docs_dir: Path) -> str:
    opts = dict(OPT.findall(m.group(3) or ""))
    unknown = set(opts) - {"variants", "kernels", "lines", "measured", "size"}
    if unknown:
        raise Missing(f"gpulab:trace marker: unknown option {sorted(unknown)[0]!r}")
    if ("measured" in opts) != ("size" in opts):
        raise Missing("gpulab:trace marker: measured=\"...\" and size=\"...\" go together")
    variants, kernels = (opts[k].split("|") if opts.get(k) else None for k in ("variants", "kernels"))
    metrics = load_measured(docs_dir, opts["measured"]) if "measured" in opts else None
    return trace_table(load(docs_dir, m.group(2)), variants, kernels, opts.get("lines") == "yes",
                       metrics, opts.get("size"))


def on_page_markdown(markdown, page, config, files):
    docs_dir = Path(config["docs_dir"])
    return MARKER.sub(lambda m: _tables._indent(m, _render(m, docs_dir)), markdown)
