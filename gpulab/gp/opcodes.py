r"""The primitive set of chapter 3: 5 boolean functions and 31 terminals, each with its type.

Strongly typed GP (Montana 1995, as in the paper): every node has a type, **boolean** or
**float**, and a function only takes children of the types it declares. Here the only
float-valued nodes are the 17 float terminals, and the only functions that take floats are
``<`` and ``>``; so every comparison's two children are float terminals, and a tree is a
boolean formula over comparisons of indicators and boolean indicator readings.

Opcodes are one byte, numbered so that the interpreter needs no table:

=============  =======  ==========================================================
opcodes        type     meaning
=============  =======  ==========================================================
0 .. 16        float    float terminal ``k``: row ``k`` of the float indicators
17 .. 30       boolean  boolean terminal ``k - 17``: row ``k - 17`` of the readings
31 ``AND``     boolean  (boolean, boolean) → boolean
32 ``OR``      boolean  (boolean, boolean) → boolean
33 ``NOT``     boolean  boolean → boolean
34 ``<``       boolean  (float, float) → boolean
35 ``>``       boolean  (float, float) → boolean
=============  =======  ==========================================================
"""

from __future__ import annotations

from dataclasses import dataclass

# --8<-- [start:terminals]
FLOAT_TERMINALS = ("MA1", "MA5", "MA10", "MA15", "MA25", "MA50", "MA75", "MA100", "MA150", "MA200",
                   "EMA5", "EMA9", "EMA15", "EMA20", "EMA25", "CP", "TP")
BOOL_TERMINALS = ("NVIG", "NVIL", "PVIG", "PVIL", "MACDGZ", "MACDLZ", "MACDG", "MACDL",
                  "MFIG", "MFIL", "EOMG", "EOML", "CCIG", "CCIL")
FUNCTIONS = ("AND", "OR", "NOT", "<", ">")
# --8<-- [end:terminals]

NF = len(FLOAT_TERMINALS)  # 17 float terminals
NB = len(BOOL_TERMINALS)  # 14 boolean terminals
NT = NF + NB  # 31 terminals
OP_AND, OP_OR, OP_NOT, OP_LT, OP_GT = NT, NT + 1, NT + 2, NT + 3, NT + 4
NOPS = NT + len(FUNCTIONS)  # 36 opcodes
OP_CP = FLOAT_TERMINALS.index("CP")  # the close price: also what trades are executed at

BOOL, FLOAT = 0, 1
TYPE_NAMES = ("boolean", "float")


@dataclass(frozen=True)
class Primitive:
    """One row of the opcode table."""

    name: str
    opcode: int
    returns: int  # BOOL or FLOAT
    args: tuple[int, ...]  # argument types, left to right

    @property
    def arity(self) -> int:
        return len(self.args)

    @property
    def is_terminal(self) -> bool:
        return not self.args


# --8<-- [start:table]
TABLE: tuple[Primitive, ...] = (
    tuple(Primitive(n, k, FLOAT, ()) for k, n in enumerate(FLOAT_TERMINALS))
    + tuple(Primitive(n, NF + k, BOOL, ()) for k, n in enumerate(BOOL_TERMINALS))
    + (Primitive("AND", OP_AND, BOOL, (BOOL, BOOL)), Primitive("OR", OP_OR, BOOL, (BOOL, BOOL)),
       Primitive("NOT", OP_NOT, BOOL, (BOOL,)), Primitive("<", OP_LT, BOOL, (FLOAT, FLOAT)),
       Primitive(">", OP_GT, BOOL, (FLOAT, FLOAT)))
)
# --8<-- [end:table]

BY_NAME: dict[str, Primitive] = {p.name: p for p in TABLE}
BY_NAME.update({"LT": TABLE[OP_LT], "GT": TABLE[OP_GT]})  # spellings that need no quoting in a shell


def name(opcode: int) -> str:
    """The printed name of an opcode."""
    return TABLE[int(opcode)].name


def lookup(token: str) -> Primitive | None:
    """The primitive a token names (case-insensitive), or ``None``."""
    return BY_NAME.get(token.upper())
