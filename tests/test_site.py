"""The built book in a real browser (headless Chromium from Debian's packages): every page loads
with no console error and no request leaving the site, math is typeset, code tabs switch —
and the checks catch a page that breaks each rule.

The browser tests are skipped, with the reason, where Chromium or websocket-client is not
installed (`.ci/run` installs Chromium); the checks on the built HTML alone (no reST markup)
always run. The site is built here with `mkdocs build --strict`, or taken from
`GPULAB_SITE_DIR` when that points at a build.
"""

import collections
import os
import re
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path

import pytest

from tests import browser as br

ROOT = Path(__file__).resolve().parent.parent



@pytest.fixture(scope="module")
def site(tmp_path_factory):
    if os.environ.get("GPULAB_SITE_DIR"):
        return Path(os.environ["GPULAB_SITE_DIR"])
    pytest.importorskip("mkdocs", reason="mkdocs (the docs extra) is not installed: no book to check")
    out = tmp_path_factory.mktemp("site")
    p = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(out)], cwd=ROOT,
                       capture_output=True, text=True, env=dict(os.environ, NO_MKDOCS_2_WARNING="1"))
    assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-3000:]
    return out


@pytest.fixture(scope="module")
def chromium():
    if br.chromium_path() is None:
        pytest.skip("Chromium is not installed (apt-get install chromium; .ci/run does)")
    pytest.importorskip("websocket", reason="websocket-client is not installed (pip install -e '.[dev]')")
    servers = []

    def open_site(root):
        server = br.Server(root)
        b = br.Browser(br.chromium_path(), server.url)
        servers.append((server, b))
        return server, b

    yield open_site
    for server, b in servers:
        b.close()
        server.close()


def pages(site: Path) -> list[str]:
    return sorted(p.relative_to(site).as_posix() for p in site.rglob("*.html"))


def test_every_page_loads_cleanly_and_typesets_its_math(site, chromium):
    server, b = chromium(site)
    found = pages(site)
    assert "index.html" in found and "chapters/ch1-matmul/index.html" in found and len(found) >= 10
    problems, typeset = [], 0
    for page in found:
        report = b.open(server.url + page)
        math = br.math_problems(b)
        problems += [f"{page}: {m}" for m in report.problems() + math]
        typeset += b.evaluate("document.querySelectorAll('mjx-container').length")
    assert not problems, "\n".join(problems)
    assert typeset > 50, f"only {typeset} formulas typeset across the book"


def test_linked_code_tabs_switch_together(site, chromium):
    """Clicking "CUDA C" in one tab set switches every numba / CUDA C set on the page."""
    server, b = chromium(site)
    report = b.open(server.url + "chapters/ch1-matmul/index.html")
    before = br.tab_states(b, "CUDA C")
    assert len(before) >= 3 and not any(before), before
    br.click_tab(b, "CUDA C")
    after = br.tab_states(b, "CUDA C")
    assert all(after), f"after one click, CUDA C is selected in {sum(after)} of {len(after)} tab sets"
    br.click_tab(b, "numba")
    assert not any(br.tab_states(b, "CUDA C"))
    assert not report.problems(), report.problems()


def test_every_tab_of_every_page_opens_its_own_code(site, chromium):
    """Click every tab of every tab set, page by page: the tab clicked is the one selected, its
    own panel is the one shown, and a numba / CUDA C panel holds code. Back-to-back tab groups
    with no text between them fuse into one set with repeated labels, and with linked tabs a
    click on the second "numba" then selects the first one: its code can never be opened."""
    server, b = chromium(site)
    problems, clicked = [], 0
    for page in pages(site):
        if 'class="tabbed-set' not in (site / page).read_text(encoding="utf-8"):
            continue
        b.open(server.url + page)
        clicked += sum(map(len, br.tab_sets(b)))
        problems += [f"{page}: {m}" for m in br.tab_problems(b)]
    assert not problems, "\n".join(problems)
    assert clicked >= 60, f"only {clicked} tabs found across the book"


# reST roles (":func:`x`" in a docstring renders as ":func:<code>x</code>", and as ":func:`x`"
# in a source listing) and ">>>" examples outside a code block, which Markdown reads as three
# nested quotes.
REST_ROLE = re.compile(r":(?:py:)?(?:func|class|meth|mod|attr|data|exc|obj|const|math|ref|doc|term)"
                       r":(?:<code|`|&lt;code)")
NESTED_QUOTES = re.compile(r"<blockquote>\s*<blockquote>")
# A list item that Markdown swallowed into the paragraph before it (a list item's second paragraph
# indented by 2 spaces instead of 4 ends the list; the next "* " lines are then plain text): a
# line of a paragraph that starts with a bullet.
SWALLOWED_ITEM = re.compile(r"<p>(?:(?!</p>).)*\n[*-] <(?:strong|code|em)>", re.S)


def markup_problems(html: str) -> list[str]:
    found = [f"reST role: {m.group(0)}" for m in REST_ROLE.finditer(html)]
    found += ["nested blockquotes (a '>>>' example outside a code block?)" for _ in NESTED_QUOTES.finditer(html)]
    found += ["a list item read as a paragraph's text (indent a list item's later paragraphs by 4)"
              for _ in SWALLOWED_ITEM.finditer(html)]
    return found


def test_no_rest_markup_in_the_built_site(site):
    """Docstrings are Markdown: no reST role and no '>>>' example read as a quote, on any page
    (text, API tables and the source listings alike)."""
    problems = []
    for page in pages(site):
        found = markup_problems((site / page).read_text(encoding="utf-8"))
        problems += [f"{page}: {n} × {m}" for m, n in collections.Counter(found).items()]
    assert not problems, "\n".join(problems)


def test_evaluate_raises_table_names_its_exceptions(site):
    """`gp.evaluate`'s Raises section parses: one row per exception type, none of them prose."""
    html = (site / "api/gp/index.html").read_text(encoding="utf-8")
    start = html.index('id="gpulab.gp.evaluate"')
    raises = html.index('<span class="doc-section-title">Raises:</span>', start)
    section = html[raises:html.index("</table>", raises)]
    types = re.findall(r'<tr class="doc-section-item">\s*<td>\s*<code>(?:<a[^>]*>)?([^<]*)', section)
    assert types == ["ProgramError", "ProgramLimitError", "LimitError", "BackendUnavailable", "GpulabError"], types


def test_the_markup_check_catches_rest_and_quoted_examples():
    assert markup_problems('<p>a :func:<code>evaluate</code> and :class:<code>Market</code></p>') == [
        "reST role: :func:<code", "reST role: :class:<code"]
    assert markup_problems('<span class="sd">see :math:`k = 2/(n+1)`</span>') == ["reST role: :math:`"]
    assert markup_problems("<blockquote>\n<blockquote>\n<blockquote>\n<p>import gpulab</p>") == [
        "nested blockquotes (a '>>>' example outside a code block?)"]
    assert markup_problems('<p>a <a href="#gpulab.gp.evaluate"><code>evaluate</code></a>, ratio 1:2, '
                           "<code>a:b</code></p><blockquote><p>a quote</p></blockquote>") == []
    assert markup_problems("<p>the spread.\n* <strong>The passes</strong> take</p>") == [
        "a list item read as a paragraph's text (indent a list item's later paragraphs by 4)"]
    assert markup_problems("<ul>\n<li><p><strong>a</strong> b</p></li>\n</ul>\n<p>x * y\n- z</p>") == []


# ---------------------------------------------------------------------- the checks can fail

BROKEN = {
    "console.html": "<p>hello</p><script>console.error('boom: something broke')</script>",
    "exception.html": "<script>undefinedFunction()</script>",
    "outside.html": '<img src="http://example.invalid/tracker.png"><p>x</p>',
    "missing.html": '<img src="no-such-image.png">',
    "math.html": '<p><span class="arithmatex">\\(x^2\\)</span></p>',
    "clean.html": "<p>nothing wrong here</p>",
}


def test_the_checks_catch_broken_pages(tmp_path, chromium):
    for name, body in BROKEN.items():
        (tmp_path / name).write_text(f"<!doctype html><html><head><title>{name}</title></head><body>{body}</body></html>")
    server, b = chromium(tmp_path)
    found = {name: b.open(server.url + name).problems() + br.math_problems(b) for name in BROKEN}
    assert any("boom: something broke" in p for p in found["console.html"]), found["console.html"]
    assert any("undefinedFunction" in p for p in found["exception.html"]), found["exception.html"]
    assert any("leaving the site" in p and "example.invalid" in p for p in found["outside.html"]), found["outside.html"]
    assert any("no-such-image.png (404)" in p for p in found["missing.html"]), found["missing.html"]
    assert found["math.html"] == ["math: 0 of 1 formulas typeset by MathJax"], found["math.html"]
    assert found["clean.html"] == []


FUSED_PAGE = """# Fused

=== "numba"

    ```python
    first_numba = 1
    ```

=== "CUDA C"

    ```c
    int first_cuda = 1;
    ```

=== "numba"

    ```python
    second_numba = 2
    ```

=== "CUDA C"

    ```c
    int second_cuda = 2;
    ```

Split:

=== "numba"

    ```python
    ok = 1
    ```

=== "CUDA C"

    ```c
    int ok = 1;
    ```

===! "numba"

    ```python
    also_ok = 2
    ```

=== "CUDA C"

    Prose where code belongs.
"""


def test_the_tab_check_catches_fused_tab_groups(tmp_path, chromium):
    """A small site built with the book's theme and tab settings: two back-to-back numba / CUDA C
    groups fuse, and the check reports the repeated labels and the tabs that open another panel;
    `===!` starts a new group, which passes, except for its panel with no code."""
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "index.md").write_text(FUSED_PAGE)
    (tmp_path / "mkdocs.yml").write_text(
        "site_name: fused\ntheme: {name: material, font: false, features: [content.tabs.link]}\n"
        "markdown_extensions: [pymdownx.superfences, {pymdownx.tabbed: {alternate_style: true}}]\n")
    p = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--site-dir", str(tmp_path / "site")], cwd=tmp_path,
                       capture_output=True, text=True, env=dict(os.environ, NO_MKDOCS_2_WARNING="1"))
    assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-3000:]
    server, b = chromium(tmp_path / "site")
    b.open(server.url + "index.html")
    assert br.tab_sets(b) == [["numba", "CUDA C"] * 2, ["numba", "CUDA C"], ["numba", "CUDA C"]]
    found = br.tab_problems(b, settle=0.2)
    fused = [m for m in found if m.startswith("tab set 1 ")]
    assert any("repeated labels" in m for m in fused), found
    assert any("clicked tab 3 ('numba'), but tab(s) [1] selected" in m for m in fused), found
    assert [m for m in found if not m.startswith("tab set 1 ")] == [
        "tab set 3 ['numba', 'CUDA C']: tab 2 ('CUDA C') shows a panel with no code"], found


def test_references_resolve_and_every_entry_is_cited(site):
    """Every `references/#anchor` link on the site names an entry of the References page, and every
    entry there is cited from at least one chapter."""
    refs = (site / "references/index.html").read_text(encoding="utf-8")
    body = refs[refs.index('<article'):refs.index('</article>')]
    entries = set(re.findall(r'<a id="([^"]+)"></a>', body))
    assert len(entries) >= 20, sorted(entries)
    link = re.compile(r'href="(?:\.\./)*references/#([^"]+)"')
    broken, cited = [], set()
    for page in pages(site):
        if page == "references/index.html":
            continue
        for anchor in link.findall((site / page).read_text(encoding="utf-8")):
            if anchor not in entries:
                broken.append(f"{page}: #{anchor}")
            if page.startswith("chapters/"):
                cited.add(anchor)
    assert not broken, "links to no entry of the References page:\n" + "\n".join(broken)
    assert entries <= cited, f"entries no chapter cites: {sorted(entries - cited)}"


# ---------------------------------------------------------------------- tables a reader can read

MAX_OPEN_ROWS, MAX_OPEN_COLUMNS = 20, 8
E_NOTATION = re.compile(r"\d\.?\d*e[+-]\d+")


class _Tables(HTMLParser):
    """Every <table> of a page: whether it sits inside a <details> (collapsed), its body rows,
    its widest row (cells) and the text of its cells, code left out (a source listing's
    line-number table, a `1e-5` in code, are code, not numbers for a reader)."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.tables, self._open, self._details, self._cell, self._code = [], [], 0, None, 0

    def handle_starttag(self, tag, attrs):
        if tag == "details":
            self._details += 1
        elif tag in ("code", "pre"):
            self._code += 1
        elif tag == "table":
            listing = "highlighttable" in (dict(attrs).get("class") or "")
            self._open.append({"collapsed": self._details > 0, "rows": 0, "columns": 0, "cells": [], "_row": 0,
                               "listing": listing})
        elif self._open and tag == "tr":
            self._open[-1]["_row"] = 0
        elif self._open and tag in ("td", "th"):
            t = self._open[-1]
            t["_row"] += 1
            t["columns"] = max(t["columns"], t["_row"])
            if tag == "td" and t["_row"] == 1:
                t["rows"] += 1
            self._cell = []

    def handle_endtag(self, tag):
        if tag == "details":
            self._details -= 1
        elif tag in ("code", "pre"):
            self._code -= 1
        elif tag == "table" and self._open:
            t = self._open.pop()
            if not t["listing"]:
                self.tables.append(t)
        elif tag in ("td", "th") and self._open and self._cell is not None:
            self._open[-1]["cells"].append("".join(self._cell).strip())
            self._cell = None

    def handle_data(self, data):
        if self._cell is not None and not self._code:
            self._cell.append(data)


def table_problems(html: str) -> list[str]:
    """An open table (not inside a collapsed <details>) over 20 body rows or 8 columns, and any
    table cell in e-notation ("1.93e+03"), open or collapsed."""
    p = _Tables()
    p.feed(html)
    found = []
    for i, t in enumerate(p.tables, 1):
        if not t["collapsed"] and t["rows"] > MAX_OPEN_ROWS:
            found.append(f"table {i}: {t['rows']} rows open (at most {MAX_OPEN_ROWS}; collapse the rest)")
        if not t["collapsed"] and t["columns"] > MAX_OPEN_COLUMNS:
            found.append(f"table {i}: {t['columns']} columns open (at most {MAX_OPEN_COLUMNS})")
        bad = [c for c in t["cells"] if E_NOTATION.search(c)]
        if bad:
            found.append(f"table {i}: {len(bad)} cells in e-notation, e.g. {bad[0]!r}")
    return found


def test_tables_are_readable_in_the_built_site(site):
    """Tables open on the page have at most 20 body rows and 8 columns (the rest under a
    collapsed "all records"), and no cell anywhere reads in e-notation."""
    problems = []
    for page in pages(site):
        problems += [f"{page}: {m}" for m in table_problems((site / page).read_text(encoding="utf-8"))]
    assert not problems, "\n".join(problems[:60]) + f"\n({len(problems)} problems)"


def test_the_table_check_catches_long_wide_and_e_notation_tables():
    def table(rows, cols, cell="1"):
        body = "".join("<tr>" + f"<td>{cell}</td>" * cols + "</tr>" for _ in range(rows))
        return f"<table><thead><tr>{'<th>h</th>' * cols}</tr></thead><tbody>{body}</tbody></table>"

    assert table_problems(table(20, 8)) == []
    assert table_problems(table(21, 3)) == ["table 1: 21 rows open (at most 20; collapse the rest)"]
    assert table_problems(table(3, 9)) == ["table 1: 9 columns open (at most 8)"]
    assert table_problems(f"<details><summary>all</summary>{table(136, 12)}</details>") == []
    assert table_problems(f"<details><summary>all</summary></details>{table(21, 2)}") == [
        "table 1: 21 rows open (at most 20; collapse the rest)"]
    assert table_problems(table(1, 2, "1.93e+03 (1.08e+03×)")) == [
        "table 1: 2 cells in e-notation, e.g. '1.93e+03 (1.08e+03×)'"]
    assert table_problems(table(1, 1) + f"<details>{table(1, 1, '4e-07')}</details>") == [
        "table 2: 1 cells in e-notation, e.g. '4e-07'"]
    assert table_problems(table(2, 2, "1,930 Medges/s (1,080×)") + table(1, 1, "4.07 × 10⁻⁷")) == []
    assert table_problems(table(1, 1, "<code>tol=1e-5</code>")) == []
    assert table_problems(table(30, 2, "<pre>x = 1e-5</pre>").replace("<table>", '<table class="highlighttable">')) == []
