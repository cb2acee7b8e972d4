"""Hypothesis strategies for typed GP trees (as S-expressions), shared by the chapter 3 tests."""

from hypothesis import strategies as st

from gpulab.gp import opcodes as oc

float_terminal = st.sampled_from(oc.FLOAT_TERMINALS)
bool_terminal = st.sampled_from(oc.BOOL_TERMINALS)
comparison = st.builds(lambda op, a, b: f"({op} {a} {b})", st.sampled_from(["<", ">"]), float_terminal, float_terminal)


def _extend(children):
    return st.one_of(
        st.builds(lambda a, b: f"(AND {a} {b})", children, children),
        st.builds(lambda a, b: f"(OR {a} {b})", children, children),
        st.builds(lambda a: f"(NOT {a})", children),
    )


tree = st.recursive(st.one_of(bool_terminal, comparison), _extend, max_leaves=12)
individual = st.tuples(tree, tree)
