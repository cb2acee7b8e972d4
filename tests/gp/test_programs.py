"""Chapter 3 programs: parsing and printing (both notations), the typed validator, populations,
and the limits each variant puts on them."""

import re

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import gpulab.gp as gp
from gpulab.errors import LimitError
from gpulab.gp import opcodes as oc
from gpulab.gp import programs as pr
from gpulab.gp.host import check_limits, constant_batches, constant_image
from gpulab.gp.variants import REGISTRY
from tests.gp.programs_strategy import individual, tree

PAPER_SEXPR = "(AND (> MA10 MA50) (OR (< EMA9 MA25) NVIG))"
PAPER_RPN = "MA10 MA50 > EMA9 MA25 < NVIG OR AND"


def test_the_papers_example_round_trips_both_ways():
    assert gp.to_rpn(PAPER_SEXPR) == PAPER_RPN
    assert gp.to_sexpr(PAPER_RPN) == PAPER_SEXPR
    assert gp.to_sexpr(gp.to_rpn(PAPER_SEXPR)) == PAPER_SEXPR
    t = gp.parse(PAPER_SEXPR)
    assert t == gp.parse(PAPER_RPN) and t.nodes == 9 and t.depth == 4
    # RPN stack: MA10 MA50 > (1) EMA9 MA25 (3) < (2) NVIG (3): 3 values, 3 of them boolean at most
    assert t.stack_depth == 3 and t.bool_depth == 3
    assert [oc.name(o) for o in t.ops] == PAPER_RPN.split()


def test_opcode_table_has_5_functions_and_31_typed_terminals():
    assert len(oc.TABLE) == 36 and oc.NF == 17 and oc.NB == 14
    assert [p.opcode for p in oc.TABLE] == list(range(36))
    assert all(p.returns == oc.FLOAT for p in oc.TABLE[:17]) and all(p.returns == oc.BOOL for p in oc.TABLE[17:])
    assert oc.TABLE[oc.OP_LT].args == (oc.FLOAT, oc.FLOAT) and oc.TABLE[oc.OP_AND].args == (oc.BOOL, oc.BOOL)
    assert gp.parse("MA1 MA5 LT") == gp.parse("(< MA1 MA5)")  # shell-friendly spellings


@settings(max_examples=200, deadline=None)
@given(tree)
def test_sexpr_and_rpn_round_trip_for_random_typed_trees(text):
    t = gp.parse(text)
    assert t.sexpr() == text
    assert gp.parse(t.rpn()) == t
    # the validator's depth/stack agree with a direct recursive computation
    def height(node):
        return 1 if not isinstance(node, tuple) else 1 + max(height(c) for c in node[1:])

    def nested(ops):
        stack = []
        for o in ops:
            p = oc.TABLE[int(o)]
            if p.is_terminal:
                stack.append(p.name)
            else:
                args = tuple(stack[-p.arity:])
                del stack[-p.arity:]
                stack.append((p.name,) + args)
        return stack[0]

    assert t.depth == height(nested(t.ops))
    assert t.stack_depth >= t.bool_depth >= 1


@pytest.mark.parametrize("text,kind,pos", [
    ("MA10 NVIG AND", "type error", 2),
    ("(AND MA10 NVIG)", "type error", 2),
    ("(< NVIG NVIL)", "type error", 2),
    ("(NOT MA5)", "type error", 1),
    ("AND", "stack underflow", 0),
    ("NVIG NOT AND", "stack underflow", 2),
    ("NVIG NVIL", "leftover values", 2),
    ("MA10", "returns a float", 1),
    ("MA10 MA20 <", "unknown token", 1),
    ("(AND NVIG)", "takes 2 argument", 1),
    ("(AND NVIG NVIL", "missing ')'", 4),
    ("(NVIG)", "terminal cannot be applied", 1),
    ("NVIG NVIL AND )", "parentheses in an RPN", 3),
    ("", "empty program", 0),
])
def test_malformed_programs_are_rejected_naming_the_position(text, kind, pos):
    with pytest.raises(gp.ProgramError, match=re.escape(kind)) as e:
        gp.parse(text)
    assert f"position {pos}" in str(e.value)


def test_malformed_population_names_individual_tree_and_position():
    good = gp.Population.from_individuals([(PAPER_SEXPR, "NVIL")])
    code = np.concatenate([good.code, good.code])
    offs = np.concatenate([good.offsets, good.offsets[1:] + good.code.size]).astype(np.int32)
    code[good.code.size + 9] = oc.OP_AND  # individual 1, sell tree, position 0: AND with an empty stack
    with pytest.raises(gp.ProgramError, match=r"individual 1, sell tree, position 0 \('AND'\): stack underflow"):
        gp.Population(code, offs)
    code[good.code.size + 9] = 200
    with pytest.raises(gp.ProgramError, match="individual 1, sell tree, position 0.*unknown opcode"):
        gp.Population(code, offs)
    with pytest.raises(gp.ProgramError, match="offsets"):
        gp.Population(good.code, good.offsets[:-1])


def test_too_long_trees_are_rejected():
    with pytest.raises(gp.ProgramLimitError, match="too long"):
        gp.Tree(np.array([oc.NF] + [oc.OP_NOT] * pr.MAX_TREE_NODES, np.uint8))


def test_population_encoding_and_decoding():
    inds = [(PAPER_SEXPR, "(NOT (OR MACDL CCIG))"), ("NVIG", "(< CP TP)")]
    pop = gp.Population.from_individuals(inds)
    assert len(pop) == 2 and pop.code.dtype == np.uint8 and pop.offsets.dtype == np.int32
    assert list(pop.offsets) == [0, 9, 13, 14, 17]
    assert pop.nodes.tolist() == [[9, 4], [1, 3]] and pop.total_nodes == 17
    assert [str(x) for x in pop] == [str(gp.Individual(*i)) for i in inds]
    assert pop[1].sell == gp.parse("CP TP <")


def _chain(n, op="AND", terminal="NVIG"):
    """A right-deep chain of n terminals: all n are pushed before the first AND pops (stack n)."""
    text = terminal
    for _ in range(n - 1):
        text = f"({op} {terminal} {text})"
    return text


@pytest.mark.parametrize("variant", [v for v in REGISTRY.select(backend="numba")], ids=lambda v: v.name)
def test_each_variant_rejects_programs_too_deep_for_its_stack(variant):
    p = variant.params
    limit = {"register": 32}.get(variant.name, p.get("STACK", p.get("BSTACK")))
    if limit is None:  # compiled: no stack at all
        return
    ok = gp.Population.from_individuals([(_chain(limit), "NVIL")])
    check_limits(variant, ok, p)
    deep = gp.Population.from_individuals([("NVIL", _chain(limit + 1))])
    with pytest.raises(gp.ProgramLimitError, match=rf"individual 0, sell tree, position {limit}.*too deep.*{limit}"):
        check_limits(variant, deep, p)
    assert issubclass(gp.ProgramLimitError, LimitError)


def test_shared_memory_variants_reject_programs_longer_than_their_buffer():
    p = {"STACK": 16, "CODE": 16}
    long = gp.Population.from_individuals([("NVIL", "(NOT " * 16 + "NVIG" + ")" * 16), ("(NOT " * 20 + "NVIG" + ")" * 20, "NVIG")])
    with pytest.raises(gp.ProgramLimitError, match="individual 0, sell tree, position 15: too long for the shared"):
        check_limits(REGISTRY.get("shared"), long, p)
    with pytest.raises(gp.ProgramLimitError, match="individual 1, buy tree, position 16: too long for the register"):
        check_limits(REGISTRY.get("register"), gp.Population.from_individuals([("NVIL", "NVIL"), long[1]]), p)


@settings(max_examples=30, deadline=None)
@given(st.lists(individual, min_size=1, max_size=40))
def test_constant_batches_hold_whole_individuals_and_decode_back(st_inds):
    pop = gp.Population.from_individuals(st_inds)
    batches = constant_batches(pop)
    assert sum(nb for _, nb in batches) == len(pop) and batches[0][0] == 0
    for i0, nb in batches:
        img = constant_image(pop, i0, nb)
        offs = img[:2 * (2 * nb + 1)].view("<u2")
        code = img[2 * (2 * nb + 1):]
        for j in range(nb):
            for t in range(2):
                assert np.array_equal(code[offs[2 * j + t]:offs[2 * j + t + 1]], pop.tree(i0 + j, t))
