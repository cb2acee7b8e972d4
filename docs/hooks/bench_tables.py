"""mkdocs hook: render committed benchmark JSON into the book.

A page line ``<!-- gpulab:bench <chapter> <device> -->`` becomes the results table (and the
chart, if its PNG is committed) of ``docs/benchmarks/<chapter>-<device>.json``. When that file
does not exist the page says so plainly: the book never shows numbers that were not measured.
"""

from __future__ import annotations

import json
import os
import posixpath
import re
from pathlib import Path

MARKER = re.compile(r"^([ \t]*)<!-- gpulab:bench (\S+) (\S+) -->$", re.MULTILINE)
# ``<!-- gpulab:rows <file-stem> -->``: a tuning sweep's JSON ({"rows": [{...}, ...], ...}) as a table.
ROWS = re.compile(r"^([ \t]*)<!-- gpulab:rows (\S+) -->$", re.MULTILINE)


def _cell(v):
    if isinstance(v, float):
        return f"{v:.3g}"
    if isinstance(v, dict):
        return str(v.get("registers", "")) if "registers" in v else ""
    return str(v)


def _render_rows(match: re.Match, docs_dir: Path) -> str:
    path = docs_dir / "benchmarks" / f"{match.group(2)}.json"
    if not path.exists():
        return f'!!! warning "Not measured yet"\n    `docs/benchmarks/{path.name}` is not committed yet.\n'
    data = json.loads(path.read_text())
    rows = data["rows"]
    cols = list(dict.fromkeys(k for r in rows for k, v in r.items() if not isinstance(v, (list,))))
    head = ["registers" if c == "resources" else c for c in cols]
    out = ["| " + " | ".join(head) + " |", "|" + "---|" * len(cols)]
    for r in rows:
        out.append("| " + " | ".join(_cell(r.get(c, "")) for c in cols) + " |")
    meta = {k: v for k, v in data.items() if k != "rows" and not isinstance(v, (list, dict))}
    if meta:
        out.append("\n*" + ", ".join(f"{k} = {_cell(v)}" for k, v in meta.items()) + f" (from `docs/benchmarks/{path.name}`)*")
    return "\n".join(out)


def _render(match: re.Match, page_dir: str, docs_dir: Path) -> str:
    from gpulab.benchmark import format_markdown  # imports no numba

    chapter, dev = match.group(2), match.group(3)
    stem = f"{chapter}-{dev}"
    data = docs_dir / "benchmarks" / f"{stem}.json"
    if not data.exists():
        return (f'!!! warning "No {dev.upper()} results committed yet"\n'
                f"    `docs/benchmarks/{stem}.json` does not exist yet: the results of "
                f"`gpulab bench {chapter}` on that device will appear here once they are measured "
                "and committed. No numbers are shown until then.\n")
    result = json.loads(data.read_text())
    out = [format_markdown(result)]
    png = data.with_suffix(".png")
    if png.exists():
        rel = posixpath.relpath(f"benchmarks/{stem}.png", page_dir or ".")
        out.append(f"\n![{chapter} throughput on {result['device']['name']}]({rel})\n")
    return "\n".join(out)


def on_page_markdown(markdown, page, config, files):
    docs_dir = Path(config["docs_dir"])
    page_dir = posixpath.dirname(page.file.src_uri)
    markdown = MARKER.sub(lambda m: _indent(m, _render(m, page_dir, docs_dir)), markdown)
    return ROWS.sub(lambda m: _indent(m, _render_rows(m, docs_dir)), markdown)


def _indent(match: re.Match, text: str) -> str:
    """Keep the marker's indentation, so a marker inside an admonition or tab renders there."""
    pad = match.group(1)
    return "\n".join(pad + line if line else line for line in text.splitlines())
