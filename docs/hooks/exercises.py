"""mkdocs hook: the exercise statements on the Exercises page, from the exercise files themselves.

A page line ``<!-- gpulab:exercises -->`` becomes, for each chapter in book order, its set's
introduction (the text of ``exercises/<set>/README.md`` between its title and its first ``##``
heading) and then each exercise: its full name (the ``@pytest.mark.exercise`` name its tests
carry), its statement (the module docstring of its file, written in Markdown, whose first line is
``Exercise <set>.<n> — <title>.``), the file to edit and the command that grades it. The
docstring is the one source of the statement: a student reads it at the top of the file, the
book renders it here. An exercise file without such a docstring, or whose number no test
carries, fails the build.
"""

from __future__ import annotations

import ast
import importlib.util
import posixpath
import re
from pathlib import Path

_spec = importlib.util.spec_from_file_location("gpulab_bench_tables", Path(__file__).with_name("bench_tables.py"))
_tables = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_tables)

MARKER = re.compile(r"^<!-- gpulab:exercises -->$", re.MULTILINE)
FIRST_LINE = re.compile(r"Exercise (\w+\.\d+) — (.+?)\.?$")


def exercise_names(set_dir: Path) -> dict[str, str]:
    """`{"matmul.1": "matmul.1-matvec-constant", ...}`: the names the set's tests are marked with."""
    names = {}
    for test in sorted(set_dir.glob("test_*.py")):
        for node in ast.walk(ast.parse(test.read_text(), str(test))):
            if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "exercise"
                    and node.args and isinstance(node.args[0], ast.Constant)):
                full = node.args[0].value
                names[full.split("-", 1)[0]] = full
    return names


def statements(set_dir: Path) -> list[dict]:
    """Each exercise file of a set: `{"number", "title", "body", "file"}`, in exercise order."""
    out = []
    for path in sorted(set_dir.glob("*.py")):
        if path.name.startswith("test_") or path.name == "conftest.py":
            continue
        doc = ast.get_docstring(ast.parse(path.read_text(), str(path)))
        first, _, body = (doc or "").partition("\n")
        m = FIRST_LINE.match(first.strip())
        if not m:
            raise ValueError(f"{path}: its docstring must open with 'Exercise <set>.<n> — <title>.' "
                             f"(it opens with {first!r})")
        out.append({"number": m.group(1), "title": m.group(2), "body": body.strip(), "file": path})
    return sorted(out, key=lambda e: int(e["number"].split(".")[1]))


def set_intro(set_dir: Path) -> str:
    readme = set_dir / "README.md"
    if not readme.exists():
        return ""
    text = re.sub(r"\A# .*\n", "", readme.read_text())
    return text.split("\n## ", 1)[0].strip()


def render(root: Path, page_dir: str, docs_dir: Path) -> str:
    from gpulab.chapters import all_chapters

    out = []
    for ch in all_chapters():
        set_dir = root / "exercises" / ch.exercises
        if not set_dir.is_dir():
            continue
        page = _tables._chapter_page(docs_dir, ch.number)
        title = f"{ch.number}. {ch.title}"
        if page:
            title = f"[{title}]({posixpath.relpath(page, page_dir or '.')})"
        out += [f"## {title}: `exercises/{ch.exercises}/` {{#{ch.exercises}}}", ""]
        intro = set_intro(set_dir)
        if intro:
            out += [intro, ""]
        names = exercise_names(set_dir)
        for ex in statements(set_dir):
            full = names.get(ex["number"])
            if full is None:
                raise ValueError(f"{ex['file']}: no test in {set_dir} is marked "
                                 f"@pytest.mark.exercise(\"{ex['number']}-...\")")
            rel = ex["file"].relative_to(root).as_posix()
            out += [f"### `{full}`: {ex['title']} {{#{full.replace('.', '-')}}}", "",
                    f"Edit `{rel}`; grade it with `gpulab grade {ch.exercises} --exercise {ex['number']}`.", "",
                    ex["body"], ""]
    return "\n".join(out)


def on_page_markdown(markdown, page, config, files):
    if not MARKER.search(markdown):
        return markdown
    docs_dir = Path(config["docs_dir"])
    root = Path(config["config_file_path"]).parent
    text = render(root, posixpath.dirname(page.file.src_uri), docs_dir)
    return MARKER.sub(lambda m: text, markdown)
