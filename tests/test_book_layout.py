"""The chapters as a reader sees them at 1280 px (headless Chromium): no table that is open on the
page scrolls sideways, and chapter 5 is not a page one has to scroll through for ever.

Skipped, with the reason, where Chromium, websocket-client or mkdocs is not installed; the site
is built with `mkdocs build --strict` (test_site's fixture), or taken from `GPULAB_SITE_DIR` when
that points at a build.
"""

from pathlib import Path

import pytest

from tests import browser as br
from tests import test_site

site = test_site.site  # the fixture: the built book (mkdocs build --strict), or GPULAB_SITE_DIR

WIDTH, HEIGHT = 1280, 900
CH5_MAX_HEIGHT = 25_000  # px at 1280 px wide

# Every element that could scroll a table sideways: material's wrappers and the table itself
# (`table:not([class])` is an inline-block with `overflow: auto`). Only the ones the reader sees
# open count: a table inside a closed "??? note" or an unselected tab is not rendered.
OVERFLOW_JS = """(() => {
  // display: none (an unselected tab) or inside a closed <details> (Chromium still lays those out)
  const shown = e => e.getClientRects().length && !e.closest('details:not([open])');
  const out = [];
  const boxes = document.querySelectorAll('.md-typeset__scrollwrap, .md-typeset__table, .md-typeset table');
  for (const e of boxes) {
    if (!shown(e)) continue;
    if (e.scrollWidth > e.clientWidth + 1) {
      const t = e.tagName === 'TABLE' ? e : e.querySelector('table');
      const head = t ? [...t.querySelectorAll('th')].map(h => h.textContent.trim()).join(' | ') : '';
      out.push(`${e.className || e.tagName}: ${e.scrollWidth} px in ${e.clientWidth} px [${head.slice(0, 120)}]`);
    }
  }
  const article = document.querySelector('article.md-content__inner');
  const width = article.clientWidth;
  for (const t of document.querySelectorAll('.md-typeset table')) {
    if (!shown(t)) continue;
    const w = t.getBoundingClientRect().width;
    if (w > width + 1) out.push(`table ${Math.round(w)} px wider than the text (${width} px)`);
  }
  return [...new Set(out)];
})()"""

OPEN_TABLES_JS = ("[...document.querySelectorAll('.md-typeset table')]"
                  ".filter(t => t.getClientRects().length && !t.closest('details:not([open])')).length")
HEIGHT_JS = "Math.max(document.documentElement.scrollHeight, document.body.scrollHeight)"


@pytest.fixture(scope="module")
def reader(site):
    """(server url, browser) with a 1280 × 900 window."""
    if br.chromium_path() is None:
        pytest.skip("Chromium is not installed (apt-get install chromium; .ci/run does)")
    pytest.importorskip("websocket", reason="websocket-client is not installed (pip install -e '.[dev]')")
    server = br.Server(site)
    b = br.Browser(br.chromium_path(), server.url)
    try:
        b.call("Emulation.setDeviceMetricsOverride", session=True, width=WIDTH, height=HEIGHT,
               deviceScaleFactor=1, mobile=False)
        yield server.url, b
    finally:
        b.close()
        server.close()


def chapter_pages(site: Path) -> list[str]:
    return sorted(p.relative_to(site).as_posix() for p in (site / "chapters").rglob("index.html"))


def overflowing_tables(b: br.Browser) -> list[str]:
    return b.evaluate(OVERFLOW_JS)


def page_height(b: br.Browser) -> int:
    return b.evaluate(HEIGHT_JS)


@pytest.fixture(scope="module")
def chapters(site, reader):
    """Every chapter page loaded once at 1280 px: {page: (overflowing tables, open tables, height)}."""
    url, b = reader
    out = {}
    for page in chapter_pages(site):
        b.open(url + page)
        assert b.evaluate("window.innerWidth") == WIDTH
        out[page] = (overflowing_tables(b), b.evaluate(OPEN_TABLES_JS), page_height(b))
    return out


def test_no_open_table_scrolls_sideways_at_1280px(chapters):
    assert "chapters/ch5-euler/index.html" in chapters and len(chapters) >= 7, list(chapters)
    tables = sum(n for _, n, _ in chapters.values())
    assert tables >= 20, f"only {tables} open tables across the chapters: is the selector right?"
    problems = [f"{page}: {m}" for page, (over, _, _) in chapters.items() for m in over]
    assert not problems, "\n".join(problems)


def test_chapter_5_is_shorter_than_25000px_at_1280px(chapters):
    h = chapters["chapters/ch5-euler/index.html"][2]
    assert 2_000 < h < CH5_MAX_HEIGHT, f"chapter 5 is {h} px tall at {WIDTH} px wide"


def test_the_checks_catch_a_wide_table_and_a_long_page(reader):
    """The same checks on a page made to break them: a 40-column open table (and the same table
    inside a closed note, which must not count) and a page 30,000 px tall."""
    url, b = reader
    cells = "".join(f"<td>column {i} 123,456</td>" for i in range(40))
    html = ('<article class="md-content__inner md-typeset" style="width:800px">'
            f'<div class="md-typeset__scrollwrap" style="overflow-x:auto"><div class="md-typeset__table">'
            f'<table><tr>{cells}</tr></table></div></div>'
            f'<details><summary>all</summary><table id="closed"><tr>{cells}</tr></table></details>'
            '<div style="height:30000px"></div></article>')
    b.call("Page.navigate", session=True, url="about:blank")
    b.evaluate(f"document.open(); document.write({html!r}); document.close(); 1")
    found = overflowing_tables(b)
    assert found and all("closed" not in m for m in found), found
    assert len([m for m in found if m.startswith("table ")]) == 1, found  # the closed one is not counted
    assert page_height(b) > CH5_MAX_HEIGHT
