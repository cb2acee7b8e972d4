"""What every `gpulab` sub-command shares, the chapters' own (`gpulab gp`, `gpulab euler` ...)
included: the exit-status table of `--help`, the one-line error rule, and the device-dependent
defaults of chapter 3's commands.

It sits below the chapters, so a chapter's command-line module imports it and never
[`gpulab.cli`][gpulab.cli], which imports the chapters' command modules.
"""

from __future__ import annotations

import sys

from gpulab.errors import GpulabError


def exit_statuses(one: str | None = "a check failed (a variant's result, an exercise ...)") -> str:
    """The exit statuses, for a parser's epilog (`one`: what status 1 means, None: not used)."""
    rows = [("0", "ok")] + ([("1", one)] if one else []) + [
        ("2", "a usage error or bad input (one line on stderr)"), ("130", "interrupted (Ctrl-C)"),
        ("141", "stdout closed early (e.g. piped into head): quietly")]
    return "exit status:\n" + "\n".join(f"  {code:5s}{text}" for code, text in rows)


def run_chapter_command(name: str, run, args) -> int:
    """A chapter's sub-command: its user errors become one line on stderr, named by the command
    (`gpulab gp evolve: ...`), and exit status 2."""
    try:
        return run(args)
    except GpulabError as exc:
        print(f"{name}: {' '.join(str(exc).split())}", file=sys.stderr)
        return 2


# gp's defaults that fit the device: {command: {device: (backend, population, generations)}} (here, not
# in gpulab.gp, so that building the parser imports no numba). "gpu": the paper's scale for evolve, the
# chapter's published experiment. "sim": measured on a 2-core machine without a GPU to finish in under a
# minute with the default data, on the CPU backend (numba's CUDA simulator is too slow to evolve with).
GP_DEFAULTS = {"evolve": {"gpu": ("numba", 25_000, 50), "sim": ("cpu", 5000, 20)},
               "experiment": {"gpu": ("cpu", 2000, 30), "sim": ("cpu", 1000, 10)}}
