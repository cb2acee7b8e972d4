"""Applications of Euler circuits: de Bruijn sequences (and the 4-digit PIN), genome assembly
from a k-mer spectrum."""

from __future__ import annotations

import re

import numpy as np

from gpulab.errors import LimitError, ShapeError
from gpulab.euler.reference import NotEulerian

INT32_MAX = 2**31 - 1
ALPHABET = "ACGT"


# --8<-- [start:de_bruijn]
def de_bruijn(k: int, n: int, *, linear: bool = False, variant: str | None = None, backend: str = "numba",
              device: bool = False, params: dict | None = None):
    """The de Bruijn sequence B(k, n) as symbols 0..k-1 (uint8), from the Euler circuit of the
    de Bruijn graph (vertices: the k^(n-1) words of length n - 1; edges: the k^n words of
    length n, from their prefix to their suffix).

    The cyclic sequence has k^n symbols and every word of length n occurs once among its
    cyclic windows; ``linear=True`` appends its first n - 1 symbols (k^n + n - 1 in all), so
    the plain windows contain every word once. On the GPU the graph is never stored: its
    pairing is a rotation of the n digits (see ``kernels_numba.debruijn_graph``). The circuit
    starts with the word 0...0, as the FKM sequence does. ``device=True`` returns a numba
    device array.
    """
    from numba import cuda

    from gpulab.euler.api import _resolve, plan_for
    from gpulab.euler.host import progress

    if isinstance(k, bool) or isinstance(n, bool) or int(k) != k or int(n) != n:
        raise TypeError("k and n must be integers")
    k, n = int(k), int(n)
    if not 2 <= k <= 256:
        raise LimitError(f"alphabet size k = {k}: symbols are uint8, so 2 <= k <= 256")
    if n < 1:
        raise LimitError(f"window n = {n}: n >= 1")
    N = k ** n
    if N > INT32_MAX - 1:
        raise LimitError(f"B({k}, {n}) has k^n = {N} edges; edge ids are int32 on the GPU (at most {INT32_MAX - 1})")
    v = _resolve(variant, backend)
    if v.backend == "cpu":
        from gpulab.euler.reference import de_bruijn_fkm

        seq = de_bruijn_fkm(k, n)
        seq = np.concatenate([seq, seq[: n - 1]]) if linear else seq
        return cuda.to_device(seq) if device else seq
    plan = plan_for(v, N, params)
    with progress(plan, f"B({k}, {n})", 7) as bar:  # the circuit's 6 stages, then the symbols
        circuit = plan.de_bruijn(k, n)
        bar.set_postfix_str("symbols", refresh=False)
        bar.update()
        seq = cuda.device_array(N + n - 1, np.uint8)
        plan.launch("debruijn_symbols", N, circuit, np.int32(N), np.int32(k ** (n - 1)), np.int32(n - 1), seq)
    seq = seq if linear else seq[:N]
    return seq if device else seq.copy_to_host()
# --8<-- [end:de_bruijn]


def pin_sequence(*, digits: int = 4, **kwargs) -> str:
    """The 10,003 digits that contain every 4-digit PIN exactly once: B(10, 4), linearised
    (``digits``: PINs of another length, 10^digits + digits - 1 digits). Other arguments go
    to `de_bruijn`."""
    return "".join(map(str, de_bruijn(10, digits, linear=True, **kwargs)))


# ----------------------------------------------------------------------------- genome assembly


def kmer_spectrum(sequence: str, k: int, rng: np.random.Generator | None = None) -> list[str]:
    """Every k-mer of ``sequence`` (with multiplicity), shuffled: what a perfect sequencer of
    error-free reads would report."""
    if not 2 <= k <= len(sequence):
        raise LimitError(f"k = {k} must lie in 2..len(sequence) = {len(sequence)}")
    kmers = [sequence[i:i + k] for i in range(len(sequence) - k + 1)]
    if rng is not None:
        kmers = [kmers[i] for i in rng.permutation(len(kmers))]
    return kmers


def _encode(kmers: list[str]) -> tuple[np.ndarray, int]:
    """The k-mers as an (m, k) array of codes 0..3 (A, C, G, T in either case); a k-mer of
    another length or with another character (non-ASCII included) is named in the error."""
    if not kmers:
        raise ShapeError("no k-mers to assemble")
    bad = next((i for i, x in enumerate(kmers) if not isinstance(x, str)), None)
    if bad is not None:
        raise ShapeError(f"k-mer {bad} is a {type(kmers[bad]).__name__}, not a str")
    k = len(kmers[0])
    if k < 2:
        raise ShapeError(f"k-mer 0 ({kmers[0]!r}) has length {k}: k-mers need k >= 2")
    bad = next((i for i, x in enumerate(kmers) if len(x) != k), None)
    if bad is not None:
        raise ShapeError(f"k-mer {bad} ({kmers[bad]!r}) has length {len(kmers[bad])}, k-mer 0 has {k}: "
                         "every k-mer must have the same length")
    table = np.full(256, 255, np.uint8)
    for i, c in enumerate(ALPHABET):
        table[ord(c)] = i
        table[ord(c.lower())] = i
    # one code point per character (lone surrogates too, so that they are named, not a UnicodeEncodeError)
    points = np.frombuffer("".join(kmers).encode("utf-32-le", "surrogatepass"), np.uint32)
    codes = table[np.minimum(points, 255)]
    codes[points > 255] = 255
    if (codes == 255).any():
        i = int(np.argmax(codes == 255))
        c = chr(points[i])
        raise ShapeError(f"k-mer {i // k} ({kmers[i // k]!r}) has the character {c!r} (U+{ord(c):04X}) at "
                         f"position {i % k}: k-mers are written in {ALPHABET} (either case)")
    return codes.reshape(len(kmers), k), k


# --8<-- [start:assemble]
def assemble(kmers: list[str], *, variant: str | None = None, backend: str = "numba") -> str:
    """A sequence whose k-mer multiset is exactly ``kmers``: the Euler path (or circuit) of
    their de Bruijn multigraph — vertices are (k-1)-mers, every k-mer is an edge from its
    prefix to its suffix — spelled as the first k-mer followed by the last letter of each next
    one. Repeats make several such sequences possible; any one is returned.

    (k-1)-mers are numbered on the host (``numpy.unique`` of their base-4 codes, k <= 32).
    Raises ``NotEulerian`` when no single sequence has this spectrum (e.g. reads from two
    unrelated sequences).
    """
    from gpulab.euler.api import euler_path

    codes, k = _encode(list(kmers))
    if k > 32:
        raise LimitError(f"k = {k}: (k-1)-mers are encoded in 64 bits, so k <= 32")
    weights = 4 ** np.arange(k - 2, -1, -1, dtype=np.uint64)
    prefix = (codes[:, :-1].astype(np.uint64) * weights).sum(axis=1)
    suffix = (codes[:, 1:].astype(np.uint64) * weights).sum(axis=1)
    uniq, inv = np.unique(np.concatenate([prefix, suffix]), return_inverse=True)
    m = len(kmers)
    src, dst = inv[:m].astype(np.int32), inv[m:].astype(np.int32)
    try:
        edges = euler_path(src, dst, variant=variant, backend=backend)
    except NotEulerian as exc:  # its vertices are (k-1)-mers here: name them
        def word(v):
            code = int(uniq[int(v)])
            return "".join(ALPHABET[(code >> (2 * j)) & 3] for j in range(k - 2, -1, -1))

        msg = re.sub(r"\bvertices (\d+) and (\d+)", lambda m: f"(k-1)-mers {word(m[1])} and {word(m[2])}", str(exc))
        msg = re.sub(r"\bvertex (\d+)", lambda m: f"(k-1)-mer {word(m[1])}", msg)
        raise NotEulerian(f"no single sequence has exactly these k-mers: {msg}") from None
    first = kmers[int(edges[0])]
    last_letters = codes[edges[1:], -1]
    return first.upper() + "".join(np.array(list(ALPHABET))[last_letters])
# --8<-- [end:assemble]
