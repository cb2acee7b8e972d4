"""Chapter 3: the bit-sliced variant's fused programs (``FUSE = 1``). The decoder of each backend
(numba's on the simulator, CUDA C's compiled for the host's CPU) against an independent model
of the fused form, on programs built to contain every fusion (a leaf on the right, on the left,
on both sides, under NOT, under NOT twice, a chain of left leaves) and on random ones, where
the fused program must also be shorter; then the evaluation with and without fusion against the
reference, trace and money bit for bit."""

import ctypes

import numpy as np
import pytest
from numba import cuda, uint16, uint64

import gpulab.gp as gp
from gpulab.gp import kernels_numba as kn
from gpulab.gp import opcodes as oc
from gpulab.gp import reference
from gpulab.gp.market import NPAIR
from gpulab.gp.variants import REGISTRY
from tests.gp.host_cxx import compile_for_host, ptr
from tests.gp.test_variants import assert_same, random_population

PUSH, ANDM, ORM, AND, OR, NOT = 0, 2, 4, 6, 7, 8
CODE, BSTACK = 512, 12

CASES = [
    ("(AND (OR NVIG PVIL) MFIG)", "(AND MFIG (OR NVIG PVIL))"),  # a leaf on the right; on the left
    ("(OR NVIG (< MA5 EMA20))", "(NOT (> CP TP))"),  # leaves on both sides; NOT of a comparison
    ("(AND (OR NVIG PVIL) (NOT MACDG))", "(OR (NOT (NOT CCIL)) (AND (OR NVIG PVIL) (OR EOMG MFIL)))"),
    ("(AND NVIG (AND PVIG (AND MFIG (AND CCIG (OR EOML (NOT NVIL))))))", "(NOT (AND NVIG PVIL))"),
    ("(NOT (OR (AND NVIG PVIL) (NOT MACDL)))", "(OR (AND NVIG PVIL) (AND EOMG MFIL))"),
    ("MACDGZ", "(NOT NVIG)"),  # a single leaf; a negated one
    ("(OR (NOT MACDG) (AND (> MA10 MA50) (OR (< EMA9 MA25) NVIG)))", "(NOT (NOT (NOT PVIG)))"),
]


def fused_model(code) -> list[int]:
    """The fused entries of one tree's RPN, from its tree: an independent statement of the form
    (recursive, where the kernels scan once with a stack)."""
    stack = []
    pc = 0
    while pc < len(code):
        op = int(code[pc])
        if op < oc.NF:
            rhs = int(code[pc + 1])
            e = op * oc.NF + rhs if int(code[pc + 2]) == oc.OP_LT else rhs * oc.NF + op
            stack.append(("leaf", e, False))
            pc += 3
            continue
        pc += 1
        if op < oc.NT:
            stack.append(("leaf", NPAIR + op - oc.NF, False))
        elif op == oc.OP_NOT:
            stack.append(("not", stack.pop()))
        else:
            r, l = stack.pop(), stack.pop()
            stack.append(("and" if op == oc.OP_AND else "or", l, r))
    (root,) = stack

    def leaf(node):  # (mask, negated) for a leaf under any number of NOTs, else None
        neg = False
        while node[0] == "not":
            node, neg = node[1], not neg
        return (node[1], neg) if node[0] == "leaf" else None

    def emit(node) -> list[int]:
        if (lf := leaf(node)) is not None:
            return [(PUSH + lf[1]) << 9 | lf[0]]
        if node[0] == "not":
            return emit(node[1]) + [NOT << 9]
        fused, plain = (ANDM, AND) if node[0] == "and" else (ORM, OR)
        _, l, r = node
        for other, lf in ((l, leaf(r)), (r, leaf(l))):
            if lf is not None:
                return emit(other) + [(fused + lf[1]) << 9 | lf[0]]
        return emit(l) + emit(r) + [plain << 9]

    return emit(root)


@cuda.jit
def _decode_numba(code, offs, out, ends):
    i = cuda.grid(1)
    if i < ends.shape[0]:
        seg = cuda.local.array(BSTACK, uint16)
        a, mid, b = uint64(offs[2 * i]), uint64(offs[2 * i + 1]), uint64(offs[2 * i + 2])
        nbuy = kn.decode_fused(code, a, mid, out, uint64(i), uint64(0), seg)
        ends[i, 0] = nbuy
        ends[i, 1] = kn.decode_fused(code, mid, b, out, uint64(i), nbuy, seg)


def decode_numba(pop):
    P = len(pop)
    out = cuda.to_device(np.full((P, CODE), 0xFFFF, np.uint16))
    ends = cuda.to_device(np.zeros((P, 2), np.int64))
    _decode_numba[(P + 31) // 32, 32](cuda.to_device(pop.code), cuda.to_device(pop.offsets), out, ends)
    return out.copy_to_host(), ends.copy_to_host()


_HARNESS = r"""
struct dim { unsigned x; };
static dim blockIdx, blockDim = {32}, threadIdx = {0}, gridDim = {1};
#define __device__
#define __forceinline__ inline
#define __global__
#define __shared__ static
#define __constant__ static
#define __restrict__
#define __syncthreads()
static int __ffsll(long long x) { return __builtin_ffsll(x); }
#include "kernels.cu"
extern "C" void run_decode(const unsigned char *code, const int *offs, long long P, unsigned short *out,
                           long long *ends) {
  for (long long i = 0; i < P; i++) {
    u64 a = offs[2 * i], mid = offs[2 * i + 1], b = offs[2 * i + 2];
    ends[2 * i] = (long long)decode_fused(code, a, mid, out + i * CODE, 0);
    ends[2 * i + 1] = (long long)decode_fused(code, mid, b, out + i * CODE, (u64)ends[2 * i]);
  }
}
"""


def decode_cuda_c(pop, tmp_path):
    lib = compile_for_host(tmp_path, "kernels.cu", dict(CODE=CODE, BSTACK=BSTACK, WPB=1), _HARNESS)
    P = len(pop)
    out = np.full((P, CODE), 0xFFFF, np.uint16)
    ends = np.zeros((P, 2), np.int64)
    lib.run_decode(ptr(pop.code), ptr(pop.offsets), ctypes.c_longlong(P), ptr(out), ptr(ends))
    return out, ends


def check_decoded(pop, out, ends, what):
    for i in range(len(pop)):
        want = [fused_model(pop.code[pop.offsets[2 * i + t]:pop.offsets[2 * i + t + 1]]) for t in (0, 1)]
        assert ends[i, 0] == len(want[0]) and ends[i, 1] == len(want[0]) + len(want[1]), (what, i)
        assert out[i, :ends[i, 1]].tolist() == want[0] + want[1], (what, i, pop[i].buy.sexpr(), pop[i].sell.sexpr())


@pytest.mark.parametrize("backend", ["numba", "cuda-c"])
def test_decoder_equals_the_model(backend, rng, tmp_path):
    """Every fusion the hand-made programs contain, and random programs: the decoder's entries
    are the model's, entry for entry; on the random programs fusion must shorten the programs
    (the premise that the random ones fuse at all is asserted)."""
    pop = random_population(rng, 40)
    pop = gp.Population.from_individuals(CASES + list(pop))
    out, ends = decode_numba(pop) if backend == "numba" else decode_cuda_c(pop, tmp_path)
    check_decoded(pop, out, ends, backend)
    plain = sum(1 for i in range(len(pop)) for t in (0, 1)
                for _ in _entries(pop.code[pop.offsets[2 * i + t]:pop.offsets[2 * i + t + 1]]))
    assert ends[:, 1].sum() < plain
    # each kind of entry appears among the hand-made cases
    kinds = {int(x) >> 9 for i in range(len(CASES)) for x in out[i, :ends[i, 1]]}
    assert kinds == {0, 1, 2, 3, 4, 5, 6, 7, 8}, kinds


def _entries(code):
    pc = 0
    while pc < len(code):
        yield pc
        pc += 3 if code[pc] < oc.NF else 1


@pytest.mark.parametrize("fuse", [0, 1])
def test_fused_and_plain_evaluate_like_the_reference(fuse, rng):
    """The bit-sliced variant with and without fusion against the reference on the hand-made
    programs and random ones: 33 stocks, 330 days (5 words and 10 days), trace and money bit for
    bit."""
    market = gp.synthetic_market(33, 330, seed=int(rng.integers(2**31)))
    pop = gp.Population.from_individuals(CASES + list(random_population(rng, 3)))
    ref = reference.evaluate(pop, market, trace=True)
    p = REGISTRY.get("bitsliced", "numba").launch_params({"FUSE": fuse})
    got = gp.evaluate_detail(pop, market, "bitsliced", "numba", params=p, poison=True)
    assert_same(got, ref, f"bitsliced FUSE={fuse}")
