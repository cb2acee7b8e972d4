"""What every `gpulab` sub-command shares, the chapters' own (`gpulab gp`, `gpulab euler` ...)
included: the exit-status table of `--help`, the one-line error rule, and the device-dependent
defaults of chapter 3's commands.

It sits below the chapters, so a chapter's command-line module imports it and never
[`gpulab.cli`][gpulab.cli], which imports the chapters' command modules.
"""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

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



# --8<-- [start:writable]
def cannot_write(flag: str, path, exc: OSError) -> GpulabError:
    """The one-line error for an output that cannot be written (`flag`: the option that named it)."""
    return GpulabError(f"{flag} {path}: cannot write there ({exc.strerror or exc})")


def writable_dir(path, flag: str, files: tuple[str, ...] = ()) -> Path:
    """Create the directory `path` and check, before any long work, that files can be written
    in it, `files` (names the command will write there) included: a result must never be lost
    at the end of a run for want of a place to put it. Raises a `GpulabError` naming `flag`."""
    path = Path(path).expanduser()
    try:
        path.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=path, prefix=".gpulab-", suffix=".probe"):
            pass
    except OSError as exc:
        raise cannot_write(flag, path, exc) from None
    for name in files:
        target = path / name
        if target.is_dir() or (target.exists() and not os.access(target, os.W_OK)):
            raise GpulabError(f"{flag} {path}: cannot write {target} (a directory, or not writable)")
    return path


def writable_file(path, flag: str) -> Path:
    """Check, before any long work, that the file `path` can be written (its directory is
    created; an existing file is kept as it is, a new one is left empty)."""
    path = Path(path).expanduser()
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with open(path, "a", encoding="utf-8"):
            pass
    except OSError as exc:
        raise cannot_write(flag, path, exc) from None
    return path
# --8<-- [end:writable]

# gp's defaults that fit the device: {command: {device: (backend, population, generations)}} (here, not
# in gpulab.gp, so that building the parser imports no numba). "gpu": the paper's scale for evolve, the
# chapter's published experiment. "sim": measured on a 2-core machine without a GPU to finish in under a
# minute with the default data, on the CPU backend (numba's CUDA simulator is too slow to evolve with).
GP_DEFAULTS = {"evolve": {"gpu": ("numba", 25_000, 50), "sim": ("cpu", 5000, 20)},
               "experiment": {"gpu": ("cpu", 2000, 30), "sim": ("cpu", 1000, 10)}}
