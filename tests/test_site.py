"""The built book in a real browser (headless Chromium from Debian's packages): every page loads
with no console error and no request leaving the site, math is typeset, code tabs switch —
and the checks catch a page that breaks each rule.

Skipped, with the reason, where Chromium or websocket-client is not installed (`.ci/run`
installs Chromium). The site is built here with `mkdocs build --strict`, or taken from
`GPULAB_SITE_DIR` when that points at a build.
"""

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests import browser as br

ROOT = Path(__file__).resolve().parent.parent

pytestmark = pytest.mark.skipif(br.chromium_path() is None,
                                reason="Chromium is not installed (apt-get install chromium; .ci/run does)")


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    if os.environ.get("GPULAB_SITE_DIR"):
        return Path(os.environ["GPULAB_SITE_DIR"])
    out = tmp_path_factory.mktemp("site")
    p = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(out)], cwd=ROOT,
                       capture_output=True, text=True, env=dict(os.environ, NO_MKDOCS_2_WARNING="1"))
    assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-3000:]
    return out


@pytest.fixture(scope="module")
def chromium():
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
