"""mkdocs hook: render committed benchmark JSON into the book.

A page line ``<!-- gpulab:bench <chapter> <device> -->`` becomes the results table (and the
chart, if committed: ``<stem>.svg`` drawn by ``docs/figures/make_charts.py``, else the PNG of
``gpulab bench``) of ``docs/benchmarks/<chapter>-<device>.json``. When that file
does not exist the page says so plainly: the book never shows numbers that were not measured.

``<!-- gpulab:rows <file-stem> -->`` renders a sweep's ``{"rows": [...]}`` as a table.

Every table is rendered for a reader at page width:

* numbers for humans: 3 significant digits, thousands separators, never e-notation
  (``1,930 (1,080×)``; a column of billions is shown in billions, its header says so);
* at most 20 rows and 7 columns open on the page. A wider table opens with its result columns
  (times, throughputs, % of a peer) after the columns that name the row; a tuning sweep's
  parameter columns come after its results. A longer table opens with the best record per group
  (per configuration of everything but the parameters, or per size) and keeps every record, every
  column, under a collapsed "All N records".

A marker may say what to open with (``key="value"`` after the stem):
``by="measured ms"`` (the column that ranks records), ``best="size"`` (the columns to group by,
``|``-separated), ``where="size=2^28"`` (open only those rows instead of the best per group),
``sizes="a|b"`` (a ``bench`` marker: the sizes shown open, at most 6), ``units="ms: a|b"`` (a
``rows`` marker: columns a and b are headed "a ms", "b ms"), ``cols="a|b|c"`` (a ``rows``
marker: the columns shown open, in that order; every column stays in the collapsed table).

``<!-- gpulab:summary <device> -->`` is the Benchmarks page's opening table: one row per chapter
(its headline case), the fastest GPU variant there, its time, the peer it measures itself against
(the record's ``peer`` and ``peer_median_ms``), and its speed as a percentage of the peer's. A
chapter's headline case is its largest case with a peer time, or the cases a ``<chapter>="a|b"``
option names (at most two per chapter).
"""

from __future__ import annotations

import importlib.util
import json
import math
import posixpath
import re
import sys
from pathlib import Path

# gpulab/benchmark.py, loaded as a file (the hook does not import the gpulab package): the caption's
# "measured ..." text is the package's own (`measured_text`)
_spec = importlib.util.spec_from_file_location("gpulab_benchmark_for_docs",
                                               Path(__file__).resolve().parents[2] / "gpulab" / "benchmark.py")
_benchmark = importlib.util.module_from_spec(_spec)
sys.modules[_spec.name] = _benchmark  # (its dataclasses look their module up there)
_spec.loader.exec_module(_benchmark)

OPTS = r"((?:\s+[\w-]+=\"[^\"]*\")*)"
MARKER = re.compile(r"^([ \t]*)<!-- gpulab:bench (\S+) (\S+)" + OPTS + r" -->$", re.MULTILINE)
SUMMARY = re.compile(r"^([ \t]*)<!-- gpulab:summary (\S+)" + OPTS + r" -->$", re.MULTILINE)
ROWS = re.compile(r"^([ \t]*)<!-- gpulab:rows (\S+)" + OPTS + r" -->$", re.MULTILINE)
OPT = re.compile(r"([\w-]+)=\"([^\"]*)\"")

MAX_ROWS, MAX_COLS, MAX_SIZES = 20, 6, 4  # 4 sizes: "1,930 (1,080×)" cells fit the text width at 1280 px
# The width an open table may take at 1280 px (the text column is 688 px; material gives every
# header cell min-width 5rem = 100 px and 16 px padding each side) and the width of a character of
# table text, a little generous: an estimate, checked in a browser by tests/test_book_layout.py.
TEXT_PX, INDENT_PX, COL_MIN_PX, PAD_PX, CHAR_PX = 680, 34, 100, 32, 7.6
SUPERSCRIPT = str.maketrans("-0123456789", "⁻⁰¹²³⁴⁵⁶⁷⁸⁹")
SCALES = {6: "millions", 9: "billions", 12: "trillions"}


# ---------------------------------------------------------------------- numbers for humans

def num(v, sig: int = 3) -> str:
    """``1930.4`` → ``1,930``; ``0.02847`` → ``0.0285``; ``4.07e-07`` → ``4.07 × 10⁻⁷``; ints exact."""
    if v is None:
        return "—"
    if isinstance(v, bool):
        return "✓" if v else "✗"
    if isinstance(v, int):
        return f"{v:,}"
    if not isinstance(v, float):
        return str(v)
    if not math.isfinite(v):
        return str(v)
    if v == 0:
        return "0"
    exp = math.floor(math.log10(abs(v)))
    if exp < -3:
        m = round(v / 10 ** exp, sig - 1)
        if abs(m) >= 10:
            m, exp = m / 10, exp + 1
        return f"{m:.{sig - 1}f} × 10{str(exp).translate(SUPERSCRIPT)}"
    digits = sig - 1 - exp
    r = round(v, digits)
    return f"{r:,.0f}" if digits <= 0 else f"{r:,.{digits}f}"


def ratio(x) -> str:
    """Speed against the peer: a percentage below 2× (cuBLAS, CUB), a factor above (a CPU baseline)."""
    if not x:
        return "—"
    return f"{num(100 * x)}%" if x < 2 else f"{num(float(x))}×"


def scale_of(values) -> int:
    """The power of 1000 to show a column in: 9 when its numbers are billions, 0 below millions."""
    big = [abs(v) for v in values if isinstance(v, float) and v]
    if not big or min(big) < 1e5 or max(big) < 1e6:
        return 0
    return min(12, 3 * math.floor(math.log10(max(big)) / 3))


def _cell(v, scale: int = 0) -> str:
    if isinstance(v, dict):
        return str(v.get("registers", "")) if "registers" in v else ""
    if isinstance(v, float) and scale:
        return num(v / 10 ** scale)
    if isinstance(v, str) and len(v) > 16:  # CUDA_ERROR_ILLEGAL_INSTRUCTION may wrap after an underscore
        return v.replace("_", "_\u200b")
    return num(v)


def _table(head: list[str], rows: list[list[str]]) -> list[str]:
    esc = [[c.replace("|", "\\|") for c in r] for r in [head] + rows]
    return ["| " + " | ".join(esc[0]) + " |", "|" + "---|" * len(head)] + ["| " + " | ".join(r) + " |" for r in esc[1:]]


def _details(title: str, lines: list[str]) -> list[str]:
    return ["", f'??? note "{title}"', ""] + [("    " + line) if line else "" for line in lines]


# ---------------------------------------------------------------------- sweeps: {"rows": [...]}

RESULT = re.compile(r"(?:^|[\s_(])ms(?:$|[\s_)])|/s\b|per_s|tflops|pct|%|cub\b|TB/s|fitness|efficiency|_vs_|"
                    r"/measured|/ edges|speed", re.IGNORECASE)
PARAMETER = re.compile(r"^[A-Z][A-Z0-9_]*$|^(?:block|chunk)$")


def _is_param(c: str) -> bool:
    return bool(PARAMETER.match(c)) and c not in ("N",)


def _is_result(c: str) -> bool:
    return bool(RESULT.search(c)) and not _is_param(c)


def _rank_column(cols, rows, opts):
    """The column that ranks records and whether lower is better (a time) or higher (a rate)."""
    if "by" in opts:
        c = opts["by"]
        return c, not RESULT.search(c) or bool(re.search(r"(?:^|[\s_(])ms(?:$|[\s_)])", c))
    numeric = [c for c in cols if _is_result(c) and any(isinstance(r.get(c), (int, float)) for r in rows)]
    times = [c for c in numeric if re.search(r"(?:^|[\s_(])ms(?:$|[\s_)])", c) and not c.startswith("model")]
    if times:
        return times[0], True
    return (numeric[0], False) if numeric else (None, True)


def _min_px(head: str, cells) -> float:
    """The narrowest a column can be: its longest unbreakable word (a header word is bold)."""
    words = [len(w) * 1.1 for w in head.split()] + [len(w) for c in cells for w in re.split(r"[\s\u200b]+", c.replace("\u00a0", "_"))]
    return max(COL_MIN_PX, PAD_PX + CHAR_PX * max(words, default=0))


def _fits(cols, rows, all_rows, budget: float) -> bool:
    scales = {c: scale_of([r.get(c) for r in all_rows]) for c in cols}
    return sum(_min_px(_head(c, scales[c]), [_cell(r.get(c), scales[c]) for r in rows]) for c in cols) <= budget


def _open_view(cols, rows, opts, budget: float = TEXT_PX):
    """(columns, rows, what) shown open: at most MAX_COLS columns and MAX_ROWS rows."""
    varying = [c for c in cols if len({json.dumps(r.get(c), sort_keys=True) for r in rows}) > 1]
    params = [c for c in varying if _is_param(c)]
    results = [c for c in cols if _is_result(c)]
    names = [c for c in varying if c not in params and c not in results
             and all(isinstance(r.get(c), str) for r in rows)]
    other = [c for c in varying if c not in params + results + names]
    what = ""
    if "where" in opts:  # where="k=v": only those rows open, however many the table has
        k, v = opts["where"].split("=", 1)
        shown = [r for r in rows if str(r.get(k)) == v]
        if not shown:  # a misspelled column or value: fail the build, as cols= and units= do
            raise KeyError(f"where={opts['where']!r} matches none of the {len(rows)} records "
                           f"(their {k!r}: {sorted({str(r.get(k)) for r in rows})[:8]})")
        what = f"{k} = {v}: {len(shown)} of {len(rows)} records"
        if len(shown) > MAX_ROWS:
            what += f" (the first {MAX_ROWS} shown)"
        rows = shown[:MAX_ROWS]
    elif len(rows) > MAX_ROWS:
        by, lower = _rank_column(cols, rows, opts)
        if by is not None:
            group = opts["best"].split("|") if "best" in opts else (names if params else names[:1])
            best: dict = {}
            for r in rows:
                v = r.get(by)
                if not isinstance(v, (int, float)) or isinstance(v, bool):
                    continue
                key = tuple(json.dumps(r.get(c)) for c in group)
                if key not in best or (v < best[key][by] if lower else v > best[key][by]):
                    best[key] = r
            shown = list(best.values())
            what = (f"the {'fastest' if lower else 'best'} record ({by}) per {' · '.join(group) or 'table'}: "
                    f"{min(len(shown), MAX_ROWS)} of {len(rows)} records")
            results = [by] + [c for c in results if c != by]
        else:
            shown = rows
        if len(shown) > MAX_ROWS:
            what += f" (the first {MAX_ROWS} shown)"
        rows = shown[:MAX_ROWS]
    if len(cols) <= MAX_COLS and _fits(cols, rows, rows, budget):
        return cols, rows, what
    # As many as fit: the columns that tell the rows shown apart (the names first, then parameters
    # and counts, each only if it separates rows the earlier ones do not), three results, the
    # other names, the other results, the parameters, the rest. Shown in that order of kinds:
    # names, counts, results, parameters.
    def distinct(cs):
        return len({tuple(json.dumps(r.get(c), sort_keys=True) for c in cs) for r in rows})

    key: list = []
    for c in names + [c for c in params + other if all(isinstance(r.get(c), (int, str)) for r in rows)]:
        if distinct(key) == len(rows):
            break
        if distinct(key + [c]) > distinct(key):
            key.append(c)
    differ = [c for c in params if distinct([c]) > 1]  # the parameters that differ between these rows first
    keep = []
    for c in dict.fromkeys(key + results[:3] + names + results[3:] + differ + params + other):
        if len(keep) < MAX_COLS and (len(keep) < 2 or _fits(keep + [c], rows, rows, budget)):
            keep.append(c)
    counts = [c for c in key if c in other]
    return sorted(keep, key=(names + counts + results + params + [c for c in other if c not in counts]).index), rows, what


def _head(c: str, scale: int) -> str:
    h = "registers" if c == "resources" else re.sub(r"^pct_(?:of_)?", "% of ", c).replace("_per_s", "/s").replace("_", " ")
    return f"{h} ({SCALES[scale]})" if scale else h


def _rows_table(cols, rows, all_rows) -> list[str]:
    scales = {c: scale_of([r.get(c) for r in all_rows]) for c in cols}
    return _table([_head(c, scales[c]) for c in cols], [[_cell(r.get(c), scales[c]) for c in cols] for r in rows])


def _render_rows(match: re.Match, docs_dir: Path) -> str:
    path = docs_dir / "benchmarks" / f"{match.group(2)}.json"
    if not path.exists():
        return f'!!! warning "Not measured yet"\n    `docs/benchmarks/{match.group(2)}.json` is not committed yet.\n'
    opts = dict(OPT.findall(match.group(3) or ""))
    data = json.loads(path.read_text())
    rows = data["rows"]
    if "units" in opts:  # units="ms: a|b|c": these columns' headers say their unit
        unit, _, named = opts["units"].partition(":")
        named = {c.strip() for c in named.split("|")}
        missing = named - {k for r in rows for k in r}
        if missing:
            raise KeyError(f"{path.name}: units= names columns it does not have: {sorted(missing)}")
        rows = [{(f"{k} {unit.strip()}" if k in named else k): v for k, v in r.items()} for r in rows]
    cols = list(dict.fromkeys(k for r in rows for k, v in r.items() if not isinstance(v, list)))
    budget = TEXT_PX - INDENT_PX * (len(match.group(1).expandtabs(4)) // 4)  # inside a note or tab: narrower
    open_cols, open_rows, what = _open_view(cols, rows, opts, budget)
    if "cols" in opts:  # cols="a|b|c": the columns shown open, in this order (the rest below)
        open_cols = [c.strip() for c in opts["cols"].split("|")]
        missing = [c for c in open_cols if c not in cols]
        if missing:
            raise KeyError(f"{path.name}: cols= names columns it does not have: {missing}")
    out = _rows_table(open_cols, open_rows, rows)
    meta = {k: v for k, v in data.items() if k != "rows" and not isinstance(v, (list, dict))
            and not (isinstance(v, str) and ("\n" in v or len(v) > 160))}  # long texts stay in the JSON
    note = ", ".join(f"{k} = {_cell(v)}" for k, v in meta.items())
    src = f"from `docs/benchmarks/{match.group(2)}.json`"
    if what or open_cols != cols:
        shown = what or f"{len(open_cols)} of {len(cols)} columns"
        out.append(f"\n*Shown: {shown}; every record, every column, below.*")
        out += _details(f"All {len(rows)} records", _rows_table(cols, rows, rows))
    out.append("\n*" + (note + f" ({src})" if note else src[0].upper() + src[1:]) + "*")
    return "\n".join(out)


# ---------------------------------------------------------------------- chapter benchmarks

def _compact(result: dict, labels: list[str], scale: int) -> tuple[list[str], list[list[str]]]:
    """`gpulab.benchmark.compact_rows` (one row per variant · backend, one column per size) with
    the book's human numbers: throughput in units of 10**scale, speed-ups like "1,080×"."""
    from gpulab.benchmark import compact_rows

    head, rows = compact_rows(result, labels, number=lambda x: num(x / 10 ** scale), ratio=ratio)
    # compact_rows keeps each cell on one line (no-break spaces); at page width a cell may wrap
    # between the throughput and its ratio, and a row's name between variant and backend.
    # (a backend like "cuda-c" stays whole: no break at its hyphen).
    return head, [[re.sub(r"\u00a0·\u00a0(\S+)$", r' · <span style="white-space: nowrap">\1</span>',
                          c.replace("\u00a0(", " (")) for c in r] for r in rows]


def _records(result: dict) -> list[str]:
    recs = result["records"]
    public = any(r.get("public_median_ms") is not None for r in recs)
    peer = next((r["peer"] for r in recs if r["peer"]), "peer")
    ceiling = next((r["ceiling_name"] for r in recs if r["ceiling_name"]), "ceiling")
    head = ["size", "variant", "backend", "median ms"] + (["public call ms"] if public else []) + [
        "throughput", f"speed vs {peer}", f"% of {ceiling}", "check"]
    rows = []
    for r in recs:
        row = [r["label"], r["variant"], r["backend"], num(r["median_ms"])]
        if public:
            row.append(num(r.get("public_median_ms")))
        # concatenation, not f" {r['unit']}": under pytest on the GPU image (Python 3.12.3), once
        # GPU tests had run in the process, such f-strings compiled later lost their leading space
        row += [num(r["throughput"]) + (" " + r["unit"] if r["throughput"] is not None else ""),
                ratio(r["ratio_to_peer"]),
                f"{num(100 * r['ratio_to_ceiling'])}%" if r["ratio_to_ceiling"] else "—",
                {True: "✓", False: "✗", None: "—"}[r["check"]] if not r["skipped"] or r["check"] is False else "skipped"]
        rows.append(row)
    out = _table(head, rows)
    if public:
        out += ["", "*public call ms: the chapter's public function called on inputs already on the device "
                    "(validation, result allocation and Python included); median ms: the variant's launcher alone.*"]
    return out


def _format_bench(result: dict, opts: dict) -> str:
    recs = result["records"]
    labels = list(dict.fromkeys(r["label"] for r in recs))
    shown = opts["sizes"].split("|") if "sizes" in opts else labels[:MAX_SIZES]
    missing = [s for s in shown if s not in labels]
    if missing:
        raise ValueError(f"bench marker: sizes {missing} are not in the results (sizes: {labels})")
    units = list(dict.fromkeys(r["unit"] for r in recs if r["throughput"] is not None))
    scale = scale_of([float(r["throughput"]) for r in recs if r["throughput"] is not None]) if len(units) == 1 else 0
    head, rows = _compact(result, shown, scale)
    out = _table(head, rows)
    out[1] = "|---|" + "---:|" * (len(head) - 1)
    peer = next((r["peer"] for r in recs if r["peer"]), None)
    unit = (f"{SCALES[scale]} of {units[0]}" if scale else units[0]) if len(units) == 1 else ""
    what = f"Throughput in {unit}" if unit else "Throughput"
    if peer:
        what += f"; in parentheses, the speed against {peer} measured in the same run (100% = as fast)"
    sizes = f" {len(shown)} of the {len(labels)} sizes (all of them below)." if len(shown) < len(labels) else ""
    out += ["", f"*{what}. Bold: the fastest at that size; —: not run there (see all records).{sizes}*"]
    dev, v = result["device"], result["versions"]
    out += ["", f"*{dev['name']} (sm_{dev['compute_capability'][0]}{dev['compute_capability'][1]}, "
                f"{dev['sm_count']} SMs), driver {v.get('driver', '?')}, numba-cuda {v.get('numba-cuda', '?')}, "
                f"{_benchmark.measured_text(result)}.*"]
    if len(shown) < len(labels):
        h2, r2 = _compact(result, labels, scale)
        full = _table(h2, r2)
        full[1] = "|---|" + "---:|" * (len(h2) - 1)
        out += _details(f"All {len(labels)} sizes", full)
    out += _details(f"All {len(recs)} records", _records(result))
    return "\n".join(out)


def _render(match: re.Match, page_dir: str, docs_dir: Path) -> str:
    chapter, dev = match.group(2), match.group(3)
    opts = dict(OPT.findall(match.group(4) or ""))
    stem = f"{chapter}-{dev}"
    data = docs_dir / "benchmarks" / f"{stem}.json"
    if not data.exists():
        return (f'!!! warning "No {dev.upper()} results committed yet"\n'
                f"    `docs/benchmarks/{stem}.json` does not exist yet: the results of "
                f"`gpulab bench {chapter}` on that device will appear here once they are measured "
                "and committed. No numbers are shown until then.\n")
    result = json.loads(data.read_text())
    out = [_format_bench(result, opts)]
    for ext in (".svg", ".png"):  # the SVG of docs/figures/make_charts.py, else the PNG of `gpulab bench`
        if data.with_suffix(ext).exists():
            rel = posixpath.relpath(f"benchmarks/{stem}{ext}", page_dir or ".")
            out.append(f"\n![{chapter} throughput per variant on {result['device']['name']}]({rel})\n")
            break
    return "\n".join(out)


# ---------------------------------------------------------------------- the summary table

def headline(result: dict, labels: list[str] | None = None) -> list[dict]:
    """The record each summary row shows: at each headline case (`labels`, default the case with
    the most work among those with a peer time), the fastest GPU variant whose result was checked."""
    recs = [r for r in result["records"] if r["backend"] != "cpu" and r["check"] is True
            and not r["skipped"] and r["median_ms"] is not None]
    if labels is None:
        timed = [r for r in recs if r["peer_median_ms"] and r["throughput"]]
        if not timed:
            return []
        labels = [max(timed, key=lambda r: r["throughput"] * r["median_ms"])["label"]]
    rows = []
    for label in labels:
        at = [r for r in recs if r["label"] == label]
        if not at:
            known = list(dict.fromkeys(r["label"] for r in result["records"]))
            raise ValueError(f"summary marker: {result['chapter']} has no checked GPU record at {label!r} "
                             f"(its cases: {known})")
        rows.append(min(at, key=lambda r: r["median_ms"]))
    return rows


def _bench_results(docs_dir: Path, device: str) -> dict[str, dict]:
    out = {}
    for path in sorted((docs_dir / "benchmarks").glob(f"*-{device}.json")):
        data = json.loads(path.read_text())
        if isinstance(data, dict) and data.get("schema") == "gpulab-bench/1" and data.get("records") \
                and path.stem == f"{data['chapter']}-{device}":
            out[data["chapter"]] = data | {"_file": path.name}
    return out


def _chapter_page(docs_dir: Path, number: int) -> str | None:
    found = sorted((docs_dir / "chapters").glob(f"ch{number}-*.md"))
    return found[0].relative_to(docs_dir).as_posix() if found else None


def _nav_titles(nav) -> dict[str, str]:
    """{page: its title in the navigation} (the short titles: "1. Matrix multiplication")."""
    out = {}
    for item in nav or []:
        for title, target in (item.items() if isinstance(item, dict) else []):
            out |= _nav_titles(target) if isinstance(target, list) else {target: title}
    return out


def _render_summary(match: re.Match, page_dir: str, docs_dir: Path, nav=None) -> str:
    from gpulab.chapters import all_chapters

    device = match.group(2)
    opts = dict(OPT.findall(match.group(3) or ""))
    results = _bench_results(docs_dir, device)
    head = ["chapter", "best variant", "time (ms)", "peer", "% of peer", "device", "date"]
    rows, peers, files = [], {}, []
    titles = _nav_titles(nav)
    for ch in all_chapters():
        result = results.get(ch.name)
        page = _chapter_page(docs_dir, ch.number)
        title = titles.get(page, f"{ch.number}. {ch.title}")
        link = f"[{title}]({posixpath.relpath(page, page_dir or '.')})" if page else title
        if result is None:
            rows.append([link, "not measured yet", "—", "—", "—", "—", "—"])
            continue
        files.append(f"`{result['_file']}`")
        labels = opts[ch.name].split("|") if ch.name in opts else None
        for r in headline(result, labels):
            peer = r["peer"] or "—"
            peers.setdefault(peer, []).append((ch, r))
            rows.append([f"{link}<br><small>{r['label']}</small>",
                         f"{r['variant']}<br>{BACKENDS.get(r['backend'], r['backend'])}",
                         num(float(r["median_ms"])),
                         f"{re.split(r' [(]|, ', peer)[0]}<br>{num(float(r['peer_median_ms']))} ms" if r["peer_median_ms"] else peer,
                         ratio(r["ratio_to_peer"]),
                         result["device"]["name"].removeprefix("NVIDIA "),
                         result["date"][:10]])
    if len(rows) > 12:
        raise ValueError(f"summary marker: {len(rows)} rows, more than 12")
    out = _table(head, rows)
    out[1] = "|---|---|" + "---:|" + "---|" + "---:|" + "---|---|"
    out = ['<div class="gpulab-summary" markdown>', ""] + out + ["", "</div>"]  # its padding: assets/summary.css
    out += ["", "*Each row: a chapter's headline case (under its title), the fastest GPU variant there whose "
                "result was checked, its median time, and the peer's median time on the same inputs in the "
                "same run. % of peer: the peer's time ÷ the variant's, as a percentage (100% = as fast as the "
                "peer), as a factor from 2× up. From " + ", ".join(files) + ".*", "", "The peers, as the "
                "benchmarks record them:", ""]
    for peer, where in peers.items():
        chs = " and ".join(dict.fromkeys(f"chapter {ch.number}" for ch, _ in where))
        includes = "; ".join(dict.fromkeys(i for ch, r in where if (i := _peer_includes(results[ch.name], r))))
        out.append(f"- {chs}: **{peer}**" + (f" (timed: {includes})" if includes else ""))
    return "\n".join(out)


def _peer_includes(result: dict, rec: dict) -> str | None:
    """What the peer's time includes, where the peer is itself a record of the run (a CPU peer)."""
    same = (r for r in result["records"] if r["label"] == rec["label"] and r["median_ms"] == rec["peer_median_ms"])
    return next((r.get("peer_includes") for r in same), None)


BACKENDS = {"numba": "numba", "cuda-c": "CUDA C", "cpu": "CPU"}


def on_page_markdown(markdown, page, config, files):
    docs_dir = Path(config["docs_dir"])
    page_dir = posixpath.dirname(page.file.src_uri)
    markdown = SUMMARY.sub(lambda m: _indent(m, _render_summary(m, page_dir, docs_dir, config.get("nav"))), markdown)
    markdown = MARKER.sub(lambda m: _indent(m, _render(m, page_dir, docs_dir)), markdown)
    return ROWS.sub(lambda m: _indent(m, _render_rows(m, docs_dir)), markdown)


def _indent(match: re.Match, text: str) -> str:
    """Keep the marker's indentation, so a marker inside an admonition or tab renders there."""
    pad = match.group(1)
    return "\n".join(pad + line if line else line for line in text.splitlines())
