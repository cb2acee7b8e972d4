"""``gpulab euler``: chapter 5 on the command line.

* ``gpulab euler circuit FILE`` / ``gpulab euler path FILE``: an Euler circuit (path) of the
  graph in an edge list — two vertex ids ``u v`` (or ``u,v``) per line, an optional header
  line, ``#`` comments, ``-`` for stdin — as edge ids (line order of the edges, from 0) or as
  the vertex sequence;
* ``gpulab euler debruijn K N``: the de Bruijn sequence B(K, N);
* ``gpulab euler pin``: every 4-digit PIN in 10,003 key presses;
* ``gpulab euler assemble FILE``: the sequence spelled by k-mers (one per line, or FASTA).

A mistake (a file that is not there, a vertex id that is not a whole number >= 0, a graph
without an Euler circuit ...) is one line on stderr and exit status 2, named by the command.
`add_parser` builds the parsers; `gpulab.cli` calls it.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import time

from gpulab.errors import GpulabError

_INT = re.compile(r"[+-]?\d+")
_DIGITS36 = "0123456789abcdefghijklmnopqrstuvwxyz"


# ----------------------------------------------------------------------------- input


def read_text(path: str) -> str:
    """The text of ``path`` (``-``: stdin); a missing or unreadable file is a `GpulabError`."""
    name = "stdin" if path == "-" else path
    try:
        if path == "-":
            return sys.stdin.read()
        with open(path, encoding="utf-8") as f:
            return f.read()
    except FileNotFoundError:
        raise GpulabError(f"{name}: no such file") from None
    except IsADirectoryError:
        raise GpulabError(f"{name} is a directory, not a file") from None
    except UnicodeDecodeError:
        raise GpulabError(f"{name} is not a UTF-8 text file") from None
    except OSError as exc:
        raise GpulabError(f"{name}: {exc.strerror or exc}") from None


def parse_edges(text: str, name: str = "input"):
    """``(src, dst)`` int32 arrays of an edge list: two vertex ids per line, separated by a
    comma or by whitespace; ``#`` starts a comment; a first line without any number is a header.
    Edge id i is the i-th edge line. Errors name the line."""
    import numpy as np

    from gpulab.euler.host import MAX_VERTEX

    rows = []
    for no, line in enumerate(text.splitlines(), 1):
        line = line.split("#", 1)[0].strip()
        if line:
            rows.append((no, [f.strip() for f in line.split(",")] if "," in line else line.split()))
    if rows and not any(_INT.fullmatch(f) for f in rows[0][1]):
        rows = rows[1:]  # a header such as "u,v" or "src dst"
    if not rows:
        raise GpulabError(f"{name} has no edges (expected lines of two vertex ids `u v` or `u,v`)")
    flat = []
    for no, fields in rows:
        if len(fields) != 2:
            raise GpulabError(f"{name} line {no}: {len(fields)} columns; an edge is two vertex ids `u v` or `u,v`")
        for f in fields:
            if not _INT.fullmatch(f):
                raise GpulabError(f"{name} line {no}: vertex {f!r} is not a whole number")
            v = int(f)
            if not 0 <= v <= MAX_VERTEX:
                why = "is negative (vertex ids are >= 0)" if v < 0 else \
                    f"is above {MAX_VERTEX}, the largest vertex id (ids are int32 on the GPU)"
                raise GpulabError(f"{name} line {no}: vertex {v} {why}")
            flat.append(v)
    ids = np.array(flat, dtype=np.int32).reshape(-1, 2)
    return np.ascontiguousarray(ids[:, 0]), np.ascontiguousarray(ids[:, 1])


def parse_kmers(text: str, name: str = "input", fmt: str = "auto") -> tuple[list[str], str]:
    """``(kmers, format)``: one k-mer per line (blank lines and ``#`` comments skipped), or the
    records of a FASTA file (``>`` header lines; a record's lines are joined into one k-mer)."""
    lines = text.splitlines()
    if fmt == "auto":
        first = next((s.strip() for s in lines if s.strip()), "")
        fmt = "fasta" if first.startswith(">") else "lines"
    if fmt == "lines":
        kmers = [s.strip() for s in lines if s.strip() and not s.lstrip().startswith("#")]
    else:
        kmers, header = [], None
        for no, line in enumerate(lines, 1):
            s = line.strip()
            if s.startswith(">"):
                if header is not None and not kmers[-1]:
                    raise GpulabError(f"{name} line {header}: FASTA record without a sequence")
                header = no
                kmers.append("")
            elif s and not s.startswith(";"):
                if header is None:
                    raise GpulabError(f"{name} line {no}: sequence before the first FASTA header ('>' line)")
                kmers[-1] += s
        if header is not None and not kmers[-1]:
            raise GpulabError(f"{name} line {header}: FASTA record without a sequence")
    if not kmers:
        raise GpulabError(f"{name} has no k-mers ({'one per line' if fmt == 'lines' else 'FASTA records'})")
    return kmers, fmt


# ----------------------------------------------------------------------------- output


def _emit(args, text: str, summary: dict) -> int:
    """The result: ``text`` to --out (default stdout); with --json, one JSON object on stdout
    (``summary``, with the result's arrays unless --out took it)."""
    data = dict(summary)
    keys = data.pop("result_keys", ())
    if args.out:
        try:
            with open(args.out, "w", encoding="utf-8") as f:
                f.write(text + "\n")
        except OSError as exc:
            raise GpulabError(f"--out {args.out}: {exc.strerror or exc}") from None
        for k in keys:
            data.pop(k, None)
        data["out"] = args.out
    if args.json:  # (a reader that goes away, `| head`: gpulab.cli.main's BrokenPipeError handling)
        print(json.dumps(data))
    elif args.out:
        print(f"wrote {args.out}")
    else:
        print(text)
    return 0


# ----------------------------------------------------------------------------- commands


def run_walk(args) -> int:
    """``gpulab euler circuit|path``."""
    import numpy as np

    import gpulab.euler as eu

    name = "stdin" if args.edges == "-" else args.edges
    src, dst = parse_edges(read_text(args.edges), name)
    directed = not args.undirected
    fn = eu.euler_circuit if args.euler_cmd == "circuit" else eu.euler_path
    t0 = time.perf_counter()
    res = fn(src, dst, directed=directed, source=args.source, variant=args.variant, backend=args.backend,
             vertices=True)
    seconds = time.perf_counter() - t0
    res = list(res)
    edges, verts = np.asarray(res[0]), np.asarray(res[-1])
    forward = None if directed else np.asarray(res[1]).astype(bool)
    items = verts if args.output == "vertices" else edges
    summary = {"walk": args.euler_cmd, "directed": directed, "edge_count": int(edges.size),
               "start": int(verts[0]), "end": int(verts[-1]), "closed": bool(verts[0] == verts[-1]),
               "edges": edges.tolist()}
    if forward is not None:
        summary["forward"] = forward.tolist()
    if args.output == "vertices":
        summary["vertices"] = verts.tolist()
    summary.update(variant=args.variant, backend=args.backend, seconds=seconds,
                   result_keys=("edges", "forward", "vertices"))
    return _emit(args, "\n".join(map(str, items.tolist())), summary)


def _symbols(k: int, alphabet: str | None, numbers: bool):
    """How to write symbol i: a character of ``alphabet`` (default 0-9a-z for k <= 36), or numbers."""
    if alphabet is not None:
        if numbers:
            raise GpulabError("--alphabet and --numbers exclude each other")
        if len(set(alphabet)) != len(alphabet) or len(alphabet) != k:
            raise GpulabError(f"--alphabet {alphabet!r}: K = {k} distinct characters needed, "
                              f"got {len(set(alphabet))} distinct of {len(alphabet)}")
        return alphabet, ""
    if numbers or k > len(_DIGITS36):
        return None, " "
    return _DIGITS36[:k], ""


def run_debruijn(args) -> int:
    """``gpulab euler debruijn K N``."""
    import gpulab.euler as eu

    table, sep = _symbols(args.k, args.alphabet, args.numbers)
    t0 = time.perf_counter()
    seq = eu.de_bruijn(args.k, args.n, linear=args.linear, variant=args.variant, backend=args.backend)
    seconds = time.perf_counter() - t0
    words = [table[s] for s in seq.tolist()] if table else [str(s) for s in seq.tolist()]
    text = sep.join(words)
    summary = {"k": args.k, "n": args.n, "linear": args.linear, "length": int(seq.size),
               "sequence": text if table else seq.tolist(), "variant": args.variant, "backend": args.backend,
               "seconds": seconds, "result_keys": ("sequence",)}
    return _emit(args, text, summary)


def run_pin(args) -> int:
    """``gpulab euler pin``."""
    import gpulab.euler as eu

    if args.digits < 1:
        raise GpulabError(f"--digits {args.digits}: a PIN has at least 1 digit")
    t0 = time.perf_counter()
    seq = eu.pin_sequence(digits=args.digits, variant=args.variant, backend=args.backend)
    seconds = time.perf_counter() - t0
    summary = {"digits": args.digits, "pins": 10 ** args.digits, "length": len(seq), "sequence": seq,
               "variant": args.variant, "backend": args.backend, "seconds": seconds, "result_keys": ("sequence",)}
    return _emit(args, seq, summary)


def run_assemble(args) -> int:
    """``gpulab euler assemble FILE``."""
    import gpulab.euler as eu

    name = "stdin" if args.kmers == "-" else args.kmers
    kmers, fmt = parse_kmers(read_text(args.kmers), name, args.format)
    t0 = time.perf_counter()
    try:
        seq = eu.assemble(kmers, variant=args.variant, backend=args.backend)
    except GpulabError as exc:
        raise type(exc)(f"{name}: {exc}") from None
    seconds = time.perf_counter() - t0
    summary = {"kmers": len(kmers), "k": len(kmers[0]), "format": fmt, "length": len(seq), "sequence": seq,
               "variant": args.variant, "backend": args.backend, "seconds": seconds, "result_keys": ("sequence",)}
    return _emit(args, seq, summary)


RUN = {"circuit": run_walk, "path": run_walk, "debruijn": run_debruijn, "pin": run_pin, "assemble": run_assemble}


def _check_out(args) -> None:
    """--out must be writable before the work starts (it is created, empty, here)."""
    from gpulab.commands import writable_file

    if getattr(args, "out", None):
        writable_file(args.out, "--out")


def cmd_euler(args) -> int:
    from gpulab.commands import run_chapter_command

    def run(a):
        _check_out(a)
        if getattr(a, "variant", "") is None:  # the backend's default, named in the output
            from gpulab.euler.variants import REGISTRY

            a.variant = REGISTRY.default(a.backend)
        return RUN[a.euler_cmd](a)

    return run_chapter_command(f"gpulab euler {args.euler_cmd}", run, args)


# ----------------------------------------------------------------------------- parsers


def _vertex(text: str) -> int:
    from gpulab.euler.host import MAX_VERTEX

    if not _INT.fullmatch(text.strip()):
        raise argparse.ArgumentTypeError(f"{text!r} is not a vertex id (a whole number >= 0)")
    v = int(text)
    if v < 0:
        raise argparse.ArgumentTypeError(f"{v} is negative; vertex ids are >= 0")
    if v > MAX_VERTEX:
        raise argparse.ArgumentTypeError(f"{v} is above {MAX_VERTEX}, the largest vertex id")
    return v


def _common(p, what: str) -> None:
    p.add_argument("--out", metavar="FILE", default=None,
                   help=f"write {what} to FILE (default: stdout); with --json, the JSON then leaves it out")
    p.add_argument("--json", action="store_true", help="one JSON object on stdout: the result, its size, seconds")
    p.add_argument("--variant", default=None,
                   help="a variant of `gpulab bench euler` (default: the backend's default, ruling_set on the GPU; "
                        "hierholzer and networkx run on the CPU)")
    p.add_argument("--backend", default="numba", choices=["numba", "cuda-c", "cpu"], help="(default: numba)")
    p.set_defaults(fn=cmd_euler)


def add_parser(subparsers) -> argparse.ArgumentParser:
    """The ``euler`` command and its sub-commands (each sets ``fn``)."""
    from gpulab.commands import exit_statuses

    EXIT_STATUS = exit_statuses(None)  # noqa: N806  (the same table as every other command)
    g = subparsers.add_parser("euler", help="chapter 5: Euler circuits and paths, de Bruijn sequences, PINs, "
                                            "k-mer assembly", description=__doc__.split("\n\n")[0], epilog=EXIT_STATUS)
    gsub = g.add_subparsers(dest="euler_cmd", required=True, metavar="command")
    for walk in ("circuit", "path"):
        more = "" if walk == "circuit" else (" from the vertex with out = in + 1 to the one with in = out + 1 "
                                             "(a graph with a circuit gets a circuit)")
        p = gsub.add_parser(walk, help=f"an Euler {walk} of the graph in an edge-list file",
                            description=f"An Euler {walk}{more}: every edge once. The edge list has two vertex ids "
                                        "`u v` or `u,v` per line (whole numbers >= 0), an optional header line, "
                                        "# comments; edge i is the i-th edge line (from 0).",
                            epilog=EXIT_STATUS.replace("(one line on stderr)", "or no such walk (one line on stderr, e.g. 'vertex 3 has "
                                                               "2 in-edges and 1 out-edges')"))
        p.add_argument("edges", metavar="FILE", help="the edge list (CSV or whitespace-separated); - for stdin")
        p.add_argument("--undirected", action="store_true", help="edges may be walked either way (default: directed)")
        p.add_argument("--source", type=_vertex, default=None, metavar="V",
                       help=f"start at vertex V (default: the {walk}'s own start: "
                            + ("the tail of edge 0)" if walk == "circuit" else "the only vertex it can start at, "
                               "or the tail of edge 0)"))
        p.add_argument("--output", choices=["edges", "vertices"], default="edges",
                       help="edges: edge ids in walk order, one per line; vertices: the E + 1 vertices walked "
                            "(default: edges; undirected: --json also gives each edge's direction)")
        _common(p, "the ids")
    p = gsub.add_parser("debruijn", help="the de Bruijn sequence B(K, N): every word of length N once",
                        description="The de Bruijn sequence B(K, N): K^N symbols in which every word of length N "
                                    "over K symbols occurs once as a cyclic window (the Euler circuit of the de "
                                    "Bruijn graph).", epilog=EXIT_STATUS)
    p.add_argument("k", metavar="K", type=int, help="alphabet size, 2..256")
    p.add_argument("n", metavar="N", type=int, help="word length (order), >= 1")
    p.add_argument("--linear", action="store_true",
                   help="append the first N - 1 symbols: every word then occurs once as a plain window")
    p.add_argument("--alphabet", metavar="CHARS", default=None,
                   help="the K symbols' characters, e.g. ACGT (default: 0-9a-z for K <= 36, else numbers)")
    p.add_argument("--numbers", action="store_true", help="write symbols as numbers 0..K-1 separated by spaces")
    _common(p, "the sequence")
    p = gsub.add_parser("pin", help="every PIN in the fewest key presses (B(10, 4): 10,003 digits)",
                        description="A keypad that opens when the last D digits typed are the PIN: typing these "
                                    "10^D + D - 1 digits tries every PIN once (B(10, D), linearised).",
                        epilog=EXIT_STATUS)
    p.add_argument("--digits", metavar="D", type=int, default=4, help="PIN length (default: 4)")
    _common(p, "the digits")
    p = gsub.add_parser("assemble", help="assemble a sequence from its k-mers (one per line, or FASTA)",
                        description="A sequence whose k-mers (with multiplicity) are exactly the given ones: the "
                                    "Euler path of their de Bruijn multigraph. k-mers are in ACGT (either case), "
                                    "all of one length k, 2 <= k <= 32.", epilog=EXIT_STATUS)
    p.add_argument("kmers", metavar="FILE", help="k-mers one per line (# comments), or FASTA; - for stdin")
    p.add_argument("--format", choices=["auto", "lines", "fasta"], default="auto",
                   help="auto: FASTA if the first line starts with '>' (default: auto)")
    _common(p, "the sequence")
    return g
