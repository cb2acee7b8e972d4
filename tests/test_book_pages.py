"""The Benchmarks and Exercises pages of the built book: the summary table says what the committed
benchmark JSON says, every exercise's statement is on the Exercises page, and no page sends a
reader to a README that is not on the site.

The site is the one `tests/test_site.py` builds (`mkdocs build --strict`, skipped without mkdocs;
`GPULAB_SITE_DIR` reuses a build).
"""

import ast
import json
import random
import re
import sys
from html import unescape
from html.parser import HTMLParser
from pathlib import Path

from gpulab.chapters import all_chapters
from tests import test_site
from tests.test_site import pages

ROOT = Path(__file__).resolve().parent.parent
DEVICE = "h200"
site = test_site.site  # the module-scoped fixture: the built site


class _Page(HTMLParser):
    """A page's tables (rows of cells; each cell its text and links), links and text (code kept)."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.tables, self.links, self.text = [], [], []
        self._row = self._cell = None

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "a" and a.get("href"):
            self.links.append(a["href"])
            if self._cell is not None:
                self._cell["links"].append(a["href"])
        if tag == "table":
            self.tables.append([])
        elif tag == "tr" and self.tables:
            self._row = []
            self.tables[-1].append(self._row)
        elif tag in ("td", "th") and self._row is not None:
            self._cell = {"text": "", "links": [], "parts": [""]}
            self._row.append(self._cell)
        elif tag == "br" and self._cell is not None:
            self._cell["parts"].append("")

    def handle_endtag(self, tag):
        if tag in ("td", "th"):
            self._cell = None
        elif tag == "tr":
            self._row = None

    def handle_data(self, data):
        self.text.append(data)
        if self._cell is not None:
            self._cell["text"] += data
            self._cell["parts"][-1] += data


def parse(html: str) -> _Page:
    p = _Page()
    p.feed(html)
    return p


def words(text: str) -> str:
    """Text with its whitespace collapsed and the permalinks dropped, to compare prose."""
    return re.sub(r"\s+", " ", unescape(text).replace("¶", "")).strip()


def sig3(x: float) -> float:
    return float(f"{x:.3g}")


def number(cell: str) -> float:
    """'1,460' -> 1460.0; '96.9%' -> 0.969; '7,570×' -> 7570.0 (no e-notation in a cell)."""
    assert not re.search(r"\de[+-]?\d", cell), f"e-notation in {cell!r}"
    v = float(re.sub(r"[,%×\s]", "", cell))
    return v / 100 if cell.endswith("%") else v


# ---------------------------------------------------------------------- the summary table

def summary_rows(html: str) -> list[list[dict]]:
    tables = parse(html).tables
    assert tables, "the Benchmarks page has no table"
    head = [c["text"].strip() for c in tables[0][0]]
    assert head == ["chapter", "best variant", "time (ms)", "peer", "% of peer", "device", "date"], head
    return tables[0][1:]


def expected_row(result: dict, label: str) -> dict:
    """What the JSON says about a headline case: its fastest checked GPU record."""
    at = [r for r in result["records"] if r["label"] == label and r["backend"] != "cpu" and r["check"] is True
          and not r["skipped"] and r["median_ms"] is not None]
    assert at, f"{result['chapter']}: no checked GPU record at {label!r}"
    return min(at, key=lambda r: r["median_ms"])


def check_summary_row(row: list[dict], result: dict) -> None:
    chapter, variant, ms, peer, pct, device, date = row
    label = chapter["parts"][-1].strip()
    best = expected_row(result, label)
    backend = {"cuda-c": "CUDA C"}.get(best["backend"], best["backend"])
    assert variant["parts"] == [best["variant"], backend]
    assert number(ms["text"]) == sig3(best["median_ms"]), (label, ms["text"], best["median_ms"])
    name, peer_ms = peer["parts"]
    assert best["peer"].startswith(name) and name, (peer["text"], best["peer"])
    assert peer_ms.endswith(" ms") and number(peer_ms.removesuffix(" ms")) == sig3(best["peer_median_ms"])
    ratio = best["ratio_to_peer"]
    assert number(pct["text"]) == (sig3(100 * ratio) / 100 if ratio < 2 else sig3(ratio)), (pct["text"], ratio)
    assert pct["text"].endswith("%" if ratio < 2 else "×")
    assert device["text"] in result["device"]["name"] and device["text"]
    assert date["text"] == result["date"][:10]


def test_summary_table_has_each_chapter_with_the_json_numbers(site):
    rows = summary_rows((site / "benchmarks" / "index.html").read_text(encoding="utf-8"))
    assert len(rows) <= 12
    seen = []
    for row in rows:
        assert len(row) == 7
        link = next(h for h in row[0]["links"])
        number_ = int(re.search(r"chapters/ch(\d+)-", link).group(1))
        ch = next(c for c in all_chapters() if c.number == number_)
        seen.append(ch.name)
        result = json.loads((ROOT / "docs" / "benchmarks" / f"{ch.name}-{DEVICE}.json").read_text())
        check_summary_row(row, result)
    chapters = [c.name for c in all_chapters()]
    assert list(dict.fromkeys(seen)) == chapters, "one row (or two) per chapter, in book order"
    assert all(seen.count(c) <= 2 for c in chapters)
    text = words("".join(parse((site / "benchmarks" / "index.html").read_text(encoding="utf-8")).text))
    for row in rows:
        result = json.loads((ROOT / "docs" / "benchmarks" / f"{seen[rows.index(row)]}-{DEVICE}.json").read_text())
        assert expected_row(result, row[0]["parts"][-1].strip())["peer"] in text, "each peer is said in full"


def _hook(name):
    sys.path.insert(0, str(ROOT / "docs" / "hooks"))
    try:
        return __import__(name)
    finally:
        sys.path.pop(0)


class _PageStub:
    class file:
        src_uri = "benchmarks.md"


def test_summary_is_rendered_from_the_json_not_written_in(tmp_path):
    """Fresh random times in a fake matmul JSON come out in the summary, rounded for humans."""
    bench_tables = _hook("bench_tables")
    rng = random.Random()
    (tmp_path / "benchmarks").mkdir()
    peer_ms = rng.uniform(1, 5000)
    recs = []
    for i, backend in enumerate(["numba", "cuda-c", "cpu"]):
        ms = rng.uniform(0.01, 100) if backend != "cpu" else 1e-6  # a CPU record is never the best GPU variant
        recs.append({"label": "big", "variant": f"v{i}", "backend": backend, "median_ms": ms, "throughput": 1.0,
                     "unit": "X/s", "peer": "Peer (how)", "peer_median_ms": peer_ms, "ratio_to_peer": peer_ms / ms,
                     "check": True, "skipped": None})
    data = {"schema": "gpulab-bench/1", "chapter": "matmul", "date": "2031-02-03T04:05:06Z",
            "device": {"name": "NVIDIA Z9"}, "records": recs}
    (tmp_path / "benchmarks" / f"matmul-{DEVICE}.json").write_text(json.dumps(data))
    md = bench_tables.on_page_markdown(f"<!-- gpulab:summary {DEVICE} -->", _PageStub, {"docs_dir": str(tmp_path)}, None)
    import markdown

    rows = summary_rows(markdown.markdown(md, extensions=["tables", "md_in_html"]))
    assert len(rows) == len(all_chapters())  # the others: "not measured yet"
    check_summary_row(rows[0], data)
    assert rows[0][6]["text"] == "2031-02-03" and rows[0][5]["text"] == "Z9"
    assert all(r[1]["text"] == "not measured yet" for r in rows[1:])


# ---------------------------------------------------------------------- the exercises

def exercise_files() -> list[tuple[str, Path, str, str]]:
    """(full name, file, set, statement) of every exercise under exercises/, read independently of
    the hook: names from the tests' marks, statements from the files' docstrings."""
    found = []
    for ch in all_chapters():
        set_dir = ROOT / "exercises" / ch.exercises
        marks = set(re.findall(r'mark\.exercise\("([^"]+)"\)', "".join(p.read_text() for p in set_dir.glob("test_*.py"))))
        for path in sorted(set_dir.glob("*.py")):
            if path.name.startswith("test_") or path.name == "conftest.py":
                continue
            doc = ast.get_docstring(ast.parse(path.read_text()))
            num = re.match(r"Exercise (\S+) —", doc).group(1)
            full = [m for m in marks if m.split("-", 1)[0] == num]
            assert len(full) == 1, (path, full)
            found.append((full[0], path, ch.exercises, doc.split("\n", 1)[1]))
    return found


def test_every_exercise_is_on_the_exercises_page_with_its_statement(site):
    import markdown

    text = words("".join(parse((site / "exercises" / "index.html").read_text(encoding="utf-8")).text))
    found = exercise_files()
    assert len(found) >= 15
    for full, path, set_name, statement in found:
        number_ = full.split("-", 1)[0]
        assert full in text, full
        assert f"Edit {path.relative_to(ROOT).as_posix()}; grade it with gpulab grade {set_name} --exercise {number_}" \
            in text, full
        assert words(re.sub(r"<[^>]+>", "", markdown.markdown(statement))) in text, f"{full}: statement not on the page"


def test_the_grade_command_the_page_gives_selects_that_exercise_alone():
    """`gpulab grade <set> --exercise <set>.<n>`, as the page prints it, parses with the CLI's own
    parser and selects that exercise and no other of its set (`gpulab.grading.selects`)."""
    from gpulab.cli import build_parser
    from gpulab.grading import selects

    found = exercise_files()
    for full, _, set_name, _ in found:
        number_ = full.split("-", 1)[0]
        args = build_parser().parse_args(["grade", set_name, "--exercise", number_])
        assert args.exercise_set == set_name
        chosen = [f for f, _, s, _ in found if s == set_name and any(selects(f, e) for e in args.exercise)]
        assert chosen == [full], (full, chosen)


def test_no_page_links_to_a_readme(site):
    bad = []
    for page in pages(site):
        html = (site / page).read_text(encoding="utf-8")
        bad += [f"{page}: {h}" for h in re.findall(r'href="([^"]*)"', html) if "readme" in h.lower()]
    assert not bad, "\n".join(bad)
    text = words("".join(parse((site / "exercises" / "index.html").read_text(encoding="utf-8")).text))
    assert "README.md" not in text, "the Exercises page sends readers to a README"
