"""`gpulab euler` on the command line: circuits and paths of random small graphs read from CSV,
whitespace files and stdin (checked here by an independent walk check, not the package's), de
Bruijn sequences, assembly from k-mer files, and every kind of bad input as one line, exit 2."""

import itertools
import json
import subprocess
import sys
from collections import Counter

import pytest

from tests.test_cli import assert_one_line_error
from tests.conftest import child_env


def run(*args, cwd, stdin=None):
    """`gpulab euler ARGS` of this checkout, in ``cwd``."""
    env = child_env()
    return subprocess.run([sys.executable, "-m", "gpulab", "euler", *args], capture_output=True, text=True, cwd=cwd,
                          input=stdin, env=env)


def random_walk(rng, vertices, edges, closed):
    """The edges of a random walk (closed: back to its start), in random order: a graph that
    has an Euler circuit (path) by construction, since the walk itself is one."""
    walk = list(rng.integers(0, vertices, edges + (0 if closed else 1)))
    if closed:
        walk.append(walk[0])
    elif walk[-1] == walk[0]:  # an open walk: its ends differ, so the graph has a path but no circuit
        walk[-1] = (walk[0] + 1 + int(rng.integers(vertices - 1))) % vertices
    pairs = list(zip(walk[:-1], walk[1:]))
    order = rng.permutation(len(pairs))
    return [(int(pairs[i][0]), int(pairs[i][1])) for i in order]


def is_euler_walk(edges, ids, vertices=None, *, directed=True, closed=True, start=None):
    """Independent check: ``ids`` uses every edge once, consecutive edges meet (undirected: as
    walked along ``vertices``), closed when asked, and starts at ``start`` if given."""
    if sorted(ids) != list(range(len(edges))):
        return False
    if directed:
        vertices = [edges[ids[0]][0]] + [edges[e][1] for e in ids]
    if vertices is None or len(vertices) != len(ids) + 1:
        return False
    for i, e in enumerate(ids):
        u, v = edges[e]
        step = (vertices[i], vertices[i + 1])
        if step != (u, v) and (directed or step != (v, u)):
            return False
    if closed and vertices[0] != vertices[-1]:
        return False
    return start is None or vertices[0] == start


def write_edges(path, edges, sep, header):
    lines = ([header] if header else []) + ["# an edge list"] + [f"{u}{sep}{v}" for u, v in edges]
    path.write_text("\n".join(lines) + "\n")


def test_circuit_from_csv_and_path_from_whitespace(tmp_path, rng):
    edges = random_walk(rng, 5, 14, closed=True)
    write_edges(tmp_path / "g.csv", edges, ",", "u,v")
    p = run("circuit", "g.csv", cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    ids = [int(x) for x in p.stdout.split()]
    assert is_euler_walk(edges, ids), (edges, ids)

    edges = random_walk(rng, 5, 13, closed=False)
    write_edges(tmp_path / "g.txt", edges, "  \t", "src dst")
    p = run("path", "g.txt", "--output", "vertices", "--json", cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    out = json.loads(p.stdout)
    assert is_euler_walk(edges, out["edges"], out["vertices"], closed=False)
    assert out["edge_count"] == len(edges) and out["vertices"][0] == out["start"]


def test_undirected_circuit_from_stdin_with_source(rng, tmp_path):
    """--undirected with edges given either way round, --source, --output vertices, stdin."""
    edges = [(v, u) if rng.random() < 0.5 else (u, v) for u, v in random_walk(rng, 4, 12, closed=True)]
    source = edges[int(rng.integers(len(edges)))][1]
    stdin = "".join(f"{u} {v}\n" for u, v in edges)
    p = run("circuit", "-", "--undirected", "--source", str(source), "--output", "vertices", "--json",
            stdin=stdin, cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    out = json.loads(p.stdout)
    assert is_euler_walk(edges, out["edges"], out["vertices"], directed=False, start=source), (edges, out)
    for i, (e, forward) in enumerate(zip(out["edges"], out["forward"])):
        u, v = edges[e]
        assert u == v or forward == (out["vertices"][i] == u), (i, e, forward)


def test_debruijn_sequence_has_every_word_once(tmp_path, rng):
    k, n = int(rng.integers(2, 4)), 3
    p = run("debruijn", str(k), str(n), "--alphabet", "ACGT"[:k], cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    seq = p.stdout.strip()
    assert len(seq) == k ** n and set(seq) <= set("ACGT"[:k])
    cyclic = seq + seq[:n - 1]
    windows = Counter(cyclic[i:i + n] for i in range(len(seq)))
    assert windows == Counter("".join(w) for w in itertools.product("ACGT"[:k], repeat=n))


def _genome(rng, length):
    return "".join("ACGT"[i] for i in rng.integers(0, 4, length))


@pytest.mark.parametrize("fmt", ["lines", "fasta"])
def test_assemble_from_text_and_fasta(tmp_path, rng, fmt):
    genome, k = _genome(rng, 24), 6
    kmers = [genome[i:i + k] for i in range(len(genome) - k + 1)]
    kmers = [kmers[i] for i in rng.permutation(len(kmers))]
    if fmt == "lines":
        (tmp_path / "reads.txt").write_text("# k-mers\n" + "\n".join(kmers) + "\n\n")
        name = "reads.txt"
    else:  # a record's sequence may span lines
        records = [f">read{i}\n{x[:2]}\n{x[2:].lower()}\n" for i, x in enumerate(kmers)]
        (tmp_path / "reads.fa").write_text("".join(records))
        name = "reads.fa"
    p = run("assemble", name, cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    seq = p.stdout.strip()
    assert len(seq) == len(genome)
    assert Counter(seq[i:i + k] for i in range(len(seq) - k + 1)) == Counter(kmers)


def test_out_file_and_json(tmp_path):
    """--out takes the result; --json then gives the summary without it, alone on stdout."""
    (tmp_path / "g.csv").write_text("0,1\n1,0\n")
    p = run("circuit", "g.csv", "--out", "walk.txt", "--json", cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    out = json.loads(p.stdout)
    assert out["out"] == "walk.txt" and "edges" not in out and out["edge_count"] == 2
    assert [int(x) for x in (tmp_path / "walk.txt").read_text().split()] == [0, 1]


@pytest.mark.parametrize("args,stdin,fragments", [
    (["circuit", "missing.csv"], None, ["gpulab euler circuit: missing.csv: no such file"]),
    (["circuit", "-"], "0 1\n1 -2\n", ["stdin line 2: vertex -2 is negative"]),
    (["circuit", "-"], "0 1\n1 x\n", ["stdin line 2: vertex 'x' is not a whole number"]),
    (["circuit", "-"], "0 1 2\n", ["stdin line 1: 3 columns"]),
    (["circuit", "-"], "0 1\n1 4294967296\n", ["vertex 4294967296 is above 2147483646"]),
    (["circuit", "-"], "# nothing\n", ["stdin has no edges"]),
    (["circuit", "-", "--source", "-1"], "0 1\n1 0\n", ["--source: -1 is negative"]),
    (["path", "-", "--source", "one"], "0 1\n1 0\n", ["--source: 'one' is not a vertex id"]),
    (["circuit", "-"], "0 1\n1 2\n2 0\n0 3\n", ["vertex 0 has 1 in-edges and 2 out-edges", "no Euler circuit"]),
    (["circuit", "-", "--undirected"], "0 1\n1 2\n", ["odd degree"]),
    (["debruijn", "2", "40"], None, ["B(2, 40) has k^n = 1099511627776 edges", "at most 2147483646"]),
    (["debruijn", "1", "3"], None, ["alphabet size k = 1"]),
    (["pin", "--digits", "0"], None, ["--digits 0"]),
    (["assemble", "-"], "ACG\nCΓT\n", ["k-mer 1 ('CΓT') has the character 'Γ' (U+0393)"]),
    (["assemble", "-"], "ACG\nCGTA\n", ["k-mer 1 ('CGTA') has length 4"]),
    (["assemble", "-"], ">r1\n>r2\nACG\n", ["stdin line 1: FASTA record without a sequence"]),
])
def test_bad_input_is_one_line_and_exit_2(tmp_path, args, stdin, fragments):
    assert_one_line_error(run(*args, stdin=stdin, cwd=tmp_path), *fragments)


def test_help_shows_exit_statuses_and_defaults(tmp_path):
    p = run("circuit", "--help", cwd=tmp_path)
    assert p.returncode == 0 and "exit status:" in p.stdout and "no such walk" in p.stdout, p.stdout
    assert "(default: edges" in p.stdout and "130  interrupted" in p.stdout, p.stdout


@pytest.mark.parametrize("bad", ["CGÉ", "CG\N{DNA DOUBLE HELIX}", "CG\udc80", "CGN"])
def test_assemble_names_a_kmer_outside_acgt(bad):
    """Non-ASCII k-mers (once a UnicodeEncodeError), lone surrogates and other letters alike: a
    GpulabError naming the k-mer and the character, before anything runs."""
    import gpulab.euler as eu
    from gpulab.errors import GpulabError

    with pytest.raises(GpulabError) as err:
        eu.assemble(["ACG", bad, "GTA"])
    assert f"k-mer 1 ({bad!r}) has the character {bad[-1]!r}" in str(err.value)


def test_progress_counts_the_stages_and_restores_the_switch_interval():
    from types import SimpleNamespace

    from gpulab.euler import host

    plan = SimpleNamespace(sim=True, on_stage=None)
    before = sys.getswitchinterval()
    seen = []
    with host.progress(plan, "test", 4, disable=False) as bar:
        assert sys.getswitchinterval() <= 0.001
        for stage in ("pairing", "labelling", "pairing", "labelling", "ranking"):  # more marks than stages
            plan.on_stage(stage)
            seen.append(bar.n)
    assert seen == [0, 1, 2, 3, 3] and bar.n == 4 and plan.on_stage is None
    assert sys.getswitchinterval() == before


def test_pin_has_every_pin_once(tmp_path):
    p = run("pin", "--digits", "2", "--json", cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    out = json.loads(p.stdout)
    seq = out["sequence"]
    assert out["length"] == len(seq) == 101 and out["pins"] == 100
    assert Counter(seq[i:i + 2] for i in range(100)) == Counter(f"{i:02d}" for i in range(100))
