"""Print the import cycles of gpulab: strongly connected groups of its module graph.

Every `import` and `from ... import` counts, at module level and inside functions alike (an import
inside a function hides a cycle from Python, not from a reader). `from package import name` counts
as an import of `package.name` when that is a module, else of `package`, as import-linter (grimp)
counts it. Run from the repository root:

    python scripts/import_graph.py            # cycles, one group a line; exit status 1 if any
    python scripts/import_graph.py --edges    # and every edge inside each group, with its line
"""
from __future__ import annotations

import argparse
import ast
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = "gpulab"


def modules(root: Path = ROOT) -> dict[str, Path]:
    """Module name -> source file, for every module of the package."""
    out = {}
    for path in sorted((root / PACKAGE).rglob("*.py")):
        parts = path.relative_to(root).with_suffix("").parts
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out[".".join(parts)] = path
    return out


def imports(name: str, path: Path, known: set[str]) -> list[tuple[str, int]]:
    """(imported module of the package, line) for every import statement in one module."""
    is_package = path.name == "__init__.py"
    here = name.split(".") if is_package else name.split(".")[:-1]
    found = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                prefix = here[: len(here) - node.level + 1]
                base = ".".join(prefix + ([base] if base else []))
            targets = []
            for alias in node.names:
                full = f"{base}.{alias.name}"
                targets.append(full if full in known else base)
        else:
            continue
        for target in targets:
            # the deepest module of the package that the statement names
            while target and target not in known:
                target = target.rpartition(".")[0]
            if target and target != name:
                found.append((target, node.lineno))
    return found


def graph(root: Path = ROOT) -> dict[str, dict[str, list[int]]]:
    """importer -> imported -> lines."""
    mods = modules(root)
    known = set(mods)
    edges: dict[str, dict[str, list[int]]] = {m: {} for m in mods}
    for name, path in mods.items():
        for target, line in imports(name, path, known):
            edges[name].setdefault(target, []).append(line)
    return edges


def cycles(edges: dict[str, dict[str, list[int]]]) -> list[list[str]]:
    """Strongly connected groups of more than one module (Tarjan's algorithm, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    groups = []
    counter = 0
    for start in sorted(edges):
        if start in index:
            continue
        work = [(start, iter(sorted(edges[start])))]
        index[start] = low[start] = counter
        counter += 1
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            for child in children:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(edges[child]))))
                    break
                if child in on_stack:
                    low[node] = min(low[node], index[child])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    group = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        group.append(member)
                        if member == node:
                            break
                    if len(group) > 1:
                        groups.append(sorted(group))
    return sorted(groups)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--edges", action="store_true", help="print the edges inside each cycle")
    args = parser.parse_args(argv)
    edges = graph()
    groups = cycles(edges)
    for group in groups:
        print(" <-> ".join(group))
        if args.edges:
            for a in group:
                for b in group:
                    if b in edges[a]:
                        lines = ",".join(map(str, edges[a][b]))
                        print(f"    {a} -> {b}  (line {lines})")
    print(f"{len(groups)} import cycle(s) in {PACKAGE}/", file=sys.stderr)
    return 1 if groups else 0


if __name__ == "__main__":
    sys.exit(main())
