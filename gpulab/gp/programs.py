r"""Programs: trees as RPN byte code, parsing and printing, the typed validator, and populations.

A tree is stored the way the interpreter reads it: **reverse Polish notation**, one opcode
byte per node (`gpulab.gp.opcodes`), children before their parent. The paper's example

    (AND (> MA10 MA50) (OR (< EMA9 MA25) NVIG))   ⇄   MA10 MA50 > EMA9 MA25 < NVIG OR AND

parses from either form and prints to either. A **population** is two trees per individual
(buy, sell) in one flat ``uint8`` array, with ``int32`` offsets: tree ``t`` of individual ``i``
is ``code[offsets[2*i + t] : offsets[2*i + t + 1]]``. That is exactly what the kernels read,
and what the GP loop ([`gpulab.gp.loop`][gpulab.gp.loop]) breeds, without one Python object per node.

Every program reaching a kernel has passed [`analyze`][gpulab.gp.programs.analyze]: known opcodes, no stack underflow,
argument types that match, exactly one boolean left at the end. Errors name the individual,
the tree and the position (0-based, in RPN order).
"""

from __future__ import annotations

import hashlib
import weakref
from dataclasses import dataclass

import numpy as np
from numba import njit, prange

from gpulab.errors import GpulabError, LimitError
from gpulab.gp import opcodes as oc

MAX_TREE_NODES = 4096  # a longer tree is rejected ("too long"): kernels index trees with int32 offsets
TREES = ("buy", "sell")


class ProgramError(GpulabError, ValueError):
    """A malformed program: unknown token, stack underflow, type error, leftover values."""


class ProgramLimitError(ProgramError, LimitError):
    """A well-formed program that is too long or too deep for a limit (the message names it)."""


# ----------------------------------------------------------------------------- the validator

OK, UNKNOWN, UNDERFLOW, TYPE, LEFTOVER, RESULT = 0, 1, 2, 3, 4, 5
_KIND = {UNKNOWN: "unknown opcode", UNDERFLOW: "stack underflow", TYPE: "type error",
         LEFTOVER: "leftover values", RESULT: "the tree returns a float, not a boolean"}

NF, NT, NOPS = oc.NF, oc.NT, oc.NOPS  # opcodes, from the table (numba compiles them in as constants)
NOT, LT = oc.OP_NOT, oc.OP_LT
STAT_NODES, STAT_DEPTH, STAT_STACK, STAT_BOOLS, STAT_ERR, STAT_POS = range(6)


# --8<-- [start:analyze]
@njit(parallel=True, cache=True)
def analyze(code, offsets):
    """Scan every tree once with a typed stack (trees in parallel). Returns int32
    ``[ntrees, 6]``: nodes, depth (height of the tree), general stack depth (values of any type
    on the stack, at most), boolean stack depth, error kind (0 = none) and the error's position
    in the tree."""
    ntrees = offsets.size - 1
    out = np.zeros((ntrees, 6), np.int32)
    longest = 1
    for t in range(ntrees):
        longest = max(longest, offsets[t + 1] - offsets[t])
    chunk = 256
    for task in prange((ntrees + chunk - 1) // chunk):
        types = np.empty(longest + 1, np.int8)  # type of each stack entry
        heights = np.empty(longest + 1, np.int32)  # height of the subtree each entry came from
        for t in range(task * chunk, min(ntrees, (task + 1) * chunk)):
            _analyze_tree(code, offsets[t], offsets[t + 1], types, heights, out[t])
    return out


@njit(cache=True)
def analyze_one(ops):
    """[`analyze`][gpulab.gp.programs.analyze] of one tree, without a parallel region: a `Tree`
    checks itself this way (waking numba's thread pool for one tree cost ~17 ms a tree on a busy
    16-core machine, which made building 300 individuals take 10 s)."""
    out = np.zeros(6, np.int32)
    types = np.empty(ops.size + 1, np.int8)
    heights = np.empty(ops.size + 1, np.int32)
    _analyze_tree(ops, np.int32(0), np.int32(ops.size), types, heights, out)
    return out


@njit(parallel=True, cache=True)
def analyze_bred(code, offsets, parent_stats, src):
    """`analyze` for a bred population: tree ``t`` with ``src[t] >= 0`` is a byte-for-byte
    copy of the parent tree ``src[t]`` and takes its row of ``parent_stats`` (checked: same
    length); every other tree is scanned. Returns the stats and how many copies had the wrong
    length (0, unless breeding is broken)."""
    ntrees = offsets.size - 1
    out = np.zeros((ntrees, 6), np.int32)
    longest = 1
    for t in range(ntrees):
        longest = max(longest, offsets[t + 1] - offsets[t])
    chunk = 256
    ntasks = (ntrees + chunk - 1) // chunk
    bad = np.zeros(ntasks, np.int64)
    for task in prange(ntasks):
        types = np.empty(longest + 1, np.int8)
        heights = np.empty(longest + 1, np.int32)
        for t in range(task * chunk, min(ntrees, (task + 1) * chunk)):
            if src[t] >= 0:
                out[t] = parent_stats[src[t]]
                bad[task] += out[t, 0] != offsets[t + 1] - offsets[t]
            else:
                _analyze_tree(code, offsets[t], offsets[t + 1], types, heights, out[t])
    return out, bad.sum()


@njit(inline="always")
def _analyze_tree(code, a, b, types, heights, row):
    sp, nbool, max_sp, max_bool, max_h = 0, 0, 0, 0, 0
    err, pos = 0, 0
    for pc in range(a, b):
        op = np.int32(code[pc])
        if op >= NOPS:
            err, pos = 1, pc - a
            break
        if op < NT:  # terminal: push its type
            types[sp] = 1 if op < NF else 0
            heights[sp] = 1
            nbool += types[sp] == 0
            sp += 1
        elif op == NOT:  # NOT: boolean -> boolean
            if sp < 1:
                err, pos = 2, pc - a
                break
            if types[sp - 1] != 0:
                err, pos = 3, pc - a
                break
            heights[sp - 1] += 1
        else:  # binary: AND, OR (boolean) or <, > (float)
            if sp < 2:
                err, pos = 2, pc - a
                break
            want = 1 if op >= LT else 0
            if types[sp - 1] != want or types[sp - 2] != want:
                err, pos = 3, pc - a
                break
            h = max(heights[sp - 1], heights[sp - 2]) + 1
            sp -= 1
            if want == 0:
                nbool -= 1
            else:
                nbool += 1  # two floats become one boolean
            types[sp - 1] = 0
            heights[sp - 1] = h
        max_sp = max(max_sp, sp)
        max_bool = max(max_bool, nbool)
    if err == 0:
        if sp != 1:
            err, pos = 4, b - a
        elif types[0] != 0:
            err, pos = 5, b - a
        else:
            max_h = heights[0]
    row[0] = b - a
    row[1] = max_h
    row[2] = max_sp
    row[3] = max_bool
    row[4] = err
    row[5] = pos
# --8<-- [end:analyze]


def _where(individual: int | None, tree: int | None, pos: int, ops=None) -> str:
    parts = []
    if individual is not None:
        parts.append(f"individual {individual}")
    if tree is not None:
        parts.append(f"{TREES[tree]} tree")
    tok = ""
    if ops is not None and 0 <= pos < len(ops):
        op = int(ops[pos])
        tok = f" ({oc.name(op)!r})" if op < oc.NOPS else f" (opcode {op})"
    parts.append(f"position {pos}{tok}")
    return ", ".join(parts)


def _type_detail(ops, pos) -> str:
    """Argument types an operator got, for a type-error message (re-scans one tree in Python)."""
    types = []
    for op in ops[:pos]:
        op = int(op)
        if op < oc.NT:
            types.append(oc.FLOAT if op < oc.NF else oc.BOOL)
        elif op == oc.OP_NOT:
            pass
        else:
            types.pop()
            types[-1] = oc.BOOL
    p = oc.TABLE[int(ops[pos])]
    got = types[-p.arity:]
    want = ", ".join(oc.TYPE_NAMES[x] for x in p.args)
    have = ", ".join(oc.TYPE_NAMES[x] for x in got)
    return f"{p.name} takes ({want}), got ({have})"


def error_message(stats_row, ops, individual=None, tree=None) -> str:
    kind, pos = int(stats_row[STAT_ERR]), int(stats_row[STAT_POS])
    where = _where(individual, tree, pos, ops)
    if kind == TYPE:
        return f"{where}: type error: {_type_detail(ops, pos)}"
    if kind == UNDERFLOW:
        p = oc.TABLE[int(ops[pos])]
        return f"{where}: stack underflow: {p.name} needs {p.arity} argument(s)"
    if kind == LEFTOVER:
        return f"{where}: leftover values: a tree must leave exactly one value on the stack"
    return f"{where}: {_KIND[kind]}"


def check_stats(stats, offsets, code, ntrees_per=2) -> None:
    """Raise `ProgramError` for the first malformed tree, naming individual/tree/position."""
    nodes = stats[:, STAT_NODES]
    long = np.flatnonzero(nodes > MAX_TREE_NODES)
    bad = np.flatnonzero(stats[:, STAT_ERR] != OK)
    if bad.size and (not long.size or bad[0] < long[0]):
        t = int(bad[0])
        ops = code[offsets[t]:offsets[t + 1]]
        raise ProgramError(error_message(stats[t], ops, t // ntrees_per, t % ntrees_per))
    if long.size:
        t = int(long[0])
        raise ProgramLimitError(f"individual {t // ntrees_per}, {TREES[t % ntrees_per]} tree, position "
                                f"{MAX_TREE_NODES}: too long: {int(nodes[t])} nodes, over the limit of "
                                f"{MAX_TREE_NODES} nodes per tree")


def first_position_over(ops, limit: int, bools_only: bool) -> int:
    """The position at which a valid tree's stack (or its boolean part) first exceeds ``limit``."""
    depth = 0
    for pc, op in enumerate(ops):
        op = int(op)
        if op < oc.NT:
            depth += 1 if (not bools_only or op >= oc.NF) else 0
        elif op in (oc.OP_AND, oc.OP_OR):
            depth -= 1
        elif op in (oc.OP_LT, oc.OP_GT):
            depth += 1 if bools_only else -1
        if depth > limit:
            return pc
    return len(ops)


# ----------------------------------------------------------------------------- text


def _tokens(text: str) -> list[str]:
    return text.replace("(", " ( ").replace(")", " ) ").split()


def _opcode(token: str, index: int) -> int:
    p = oc.lookup(token)
    if p is None:
        raise ProgramError(f"position {index} ({token!r}): unknown token; known: "
                           f"{', '.join(q.name for q in oc.TABLE)}")
    return p.opcode


def _parse_sexpr(toks: list[str]) -> list[int]:
    out: list[int] = []
    pos = 0

    def expr():
        nonlocal pos
        if pos >= len(toks):
            raise ProgramError(f"position {pos}: unexpected end of the S-expression")
        tok = toks[pos]
        if tok == ")":
            raise ProgramError(f"position {pos}: unexpected ')'")
        if tok != "(":
            out.append(_opcode(tok, pos))
            pos += 1
            return
        pos += 1
        if pos >= len(toks) or toks[pos] in "()":
            raise ProgramError(f"position {pos}: '(' must be followed by a function name")
        head, head_pos = toks[pos], pos
        op = _opcode(head, pos)
        p = oc.TABLE[op]
        if p.is_terminal:
            raise ProgramError(f"position {head_pos} ({head!r}): a terminal cannot be applied to arguments")
        pos += 1
        nargs = 0
        while pos < len(toks) and toks[pos] != ")":
            expr()
            nargs += 1
        if pos >= len(toks):
            raise ProgramError(f"position {pos}: missing ')' for the '(' of {head!r} at position {head_pos - 1}")
        if nargs != p.arity:
            raise ProgramError(f"position {head_pos} ({head!r}): {p.name} takes {p.arity} argument(s), got {nargs}")
        pos += 1
        out.append(op)

    expr()
    if pos != len(toks):
        raise ProgramError(f"position {pos} ({toks[pos]!r}): text after the end of the S-expression")
    return out


# --8<-- [start:tree]
@dataclass(frozen=True, eq=False)
class Tree:
    """One boolean tree, as RPN opcodes (``uint8``). Build it with [`parse`][gpulab.gp.programs.parse]."""

    ops: np.ndarray

    def __post_init__(self):
        ops = np.ascontiguousarray(self.ops, dtype=np.uint8)
        object.__setattr__(self, "ops", ops)
        stats = analyze_one(ops)
        if stats[STAT_ERR] != OK:
            raise ProgramError(error_message(stats, ops))
        if ops.size > MAX_TREE_NODES:
            raise ProgramLimitError(f"position {MAX_TREE_NODES}: too long: {ops.size} nodes, over the limit "
                                    f"of {MAX_TREE_NODES} nodes per tree")
        object.__setattr__(self, "stats", stats)

    @property
    def nodes(self) -> int:
        return int(self.ops.size)

    @property
    def depth(self) -> int:
        """Height of the tree (a single terminal has depth 1)."""
        return int(self.stats[STAT_DEPTH])

    @property
    def stack_depth(self) -> int:
        """Values on the interpreter's stack at most (floats and booleans)."""
        return int(self.stats[STAT_STACK])

    @property
    def bool_depth(self) -> int:
        """Booleans on the stack at most (the register variant's bit-stack)."""
        return int(self.stats[STAT_BOOLS])

    def rpn(self) -> str:
        return " ".join(oc.name(o) for o in self.ops)

    def sexpr(self) -> str:
        stack: list[str] = []
        for o in self.ops:
            p = oc.TABLE[int(o)]
            if p.is_terminal:
                stack.append(p.name)
            else:
                args = stack[-p.arity:]
                del stack[-p.arity:]
                stack.append(f"({p.name} {' '.join(args)})")
        return stack[0]

    def __str__(self) -> str:
        return self.sexpr()

    def __repr__(self) -> str:
        return f"Tree({self.sexpr()!r})"

    def __eq__(self, other) -> bool:
        return isinstance(other, Tree) and np.array_equal(self.ops, other.ops)

    def __hash__(self) -> int:
        return hash(self.ops.tobytes())
# --8<-- [end:tree]


def parse(text) -> Tree:
    """Parse a tree written as an S-expression (``(AND (> MA10 MA50) NVIG)``) or in RPN
    (``MA10 MA50 > NVIG AND``). A [`Tree`][gpulab.gp.programs.Tree] is returned as it is.

    Raises:
        ProgramError: unknown token, unbalanced parentheses, wrong number of arguments, stack
            underflow, a type error or leftover values; the message names the token position.
    """
    if isinstance(text, Tree):
        return text
    if not isinstance(text, str):
        raise ProgramError(f"expected a tree as text or a Tree, got {type(text).__name__}")
    toks = _tokens(text)
    if not toks:
        raise ProgramError("position 0: empty program")
    if toks[0] == "(":
        ops = _parse_sexpr(toks)
    else:
        if "(" in toks or ")" in toks:
            i = next(i for i, t in enumerate(toks) if t in "()")
            raise ProgramError(f"position {i} ({toks[i]!r}): parentheses in an RPN program")
        ops = [_opcode(t, i) for i, t in enumerate(toks)]
    return Tree(np.array(ops, np.uint8))


def to_rpn(tree) -> str:
    """RPN text of a tree (given as a [`Tree`][gpulab.gp.programs.Tree] or as text in either notation)."""
    return parse(tree).rpn()


def to_sexpr(tree) -> str:
    """S-expression text of a tree (given as a [`Tree`][gpulab.gp.programs.Tree] or as text in either notation)."""
    return parse(tree).sexpr()


# ----------------------------------------------------------------------------- individuals


@dataclass(frozen=True)
class Individual:
    """A trading rule: a buy tree and a sell tree (see the decision matrix in the chapter)."""

    buy: Tree
    sell: Tree

    def __init__(self, buy, sell):
        object.__setattr__(self, "buy", parse(buy))
        object.__setattr__(self, "sell", parse(sell))

    @property
    def nodes(self) -> int:
        return self.buy.nodes + self.sell.nodes

    def __str__(self) -> str:
        return f"buy: {self.buy.sexpr()}  sell: {self.sell.sexpr()}"


# --8<-- [start:population]
class Population:
    """Individuals as flat byte code: what the kernels read and the GP loop breeds.

    Attributes:
        code: ``uint8`` opcodes of every tree, back to back.
        offsets: ``int32 [2P + 1]``: tree ``t`` (0 = buy, 1 = sell) of individual ``i`` is
            ``code[offsets[2i + t] : offsets[2i + t + 1]]``.
        nodes, depth, stack_depth, bool_depth: ``int32 [P, 2]`` per tree (from [`analyze`][gpulab.gp.programs.analyze]).
    """

    _lineage = None  # a bred population's (weak reference to its parents, src): see copies_of

    def copies_of(self, parents: "Population"):
        """``src`` (``int64 [2P]``, host or device: the tree of ``parents`` each of this
        population's trees copies byte for byte, or -1) when this population was bred from
        ``parents`` (that object, still alive); otherwise ``None``. An individual whose two
        trees copy one parent's, in order, is that parent: its fitness on a market is the
        parent's, which the evaluators can reuse instead of interpreting it again."""
        lineage = self._lineage
        if lineage is None or lineage[0]() is not parents:
            return None
        return lineage[1]

    def _bred_from(self, parents: "Population", src) -> "Population":
        self._lineage = (weakref.ref(parents), src)
        return self

    def __init__(self, code, offsets, *, stats=None):
        code = np.ascontiguousarray(code, dtype=np.uint8)
        offsets = np.ascontiguousarray(offsets, dtype=np.int32)
        if offsets.ndim != 1 or offsets.size < 3 or offsets.size % 2 != 1:
            raise ProgramError(f"offsets must be 1-D with 2P + 1 entries (P >= 1), got shape {offsets.shape}")
        if offsets[0] != 0 or offsets[-1] != code.size or np.any(np.diff(offsets) < 0):
            raise ProgramError(f"offsets must rise from 0 to len(code) = {code.size}")
        if stats is None:
            stats = analyze(code, offsets)
            check_stats(stats, offsets, code)
        self.code, self.offsets, self.stats = code, offsets, stats
        P = (offsets.size - 1) // 2
        self.nodes = stats[:, STAT_NODES].reshape(P, 2)
        self.depth = stats[:, STAT_DEPTH].reshape(P, 2)
        self.stack_depth = stats[:, STAT_STACK].reshape(P, 2)
        self.bool_depth = stats[:, STAT_BOOLS].reshape(P, 2)
        # the maxima every evaluation checks against a variant's limits, computed once here: a
        # population is immutable, so checking it before each launch is O(1)
        top = stats.max(axis=0)
        self.max_stack_depth, self.max_bool_depth = int(top[STAT_STACK]), int(top[STAT_BOOLS])
        self.max_tree_nodes = int(top[STAT_NODES])
        self.max_program_nodes = int((offsets[2::2] - offsets[:-2:2]).max())

    @classmethod
    def bred(cls, code, offsets, parents: "Population", src) -> "Population":
        """Children from [`gpulab.gp.breeding.breed`][gpulab.gp.breeding.breed]: a tree that is a byte-for-byte copy of
        a parent's (``src[t] >= 0``) takes that parent's stats, already validated; every
        changed tree goes through the typed scan. So every tree has been validated once.
        ``src`` must say what the breeding did: the evaluators give an individual whose two
        trees ``src`` names as one parent's, in order, that parent's fitness without reading
        its code (their ``reuse``)."""
        code = np.ascontiguousarray(code, dtype=np.uint8)
        offsets = np.ascontiguousarray(offsets, dtype=np.int32)
        stats, bad = analyze_bred(code, offsets, parents.stats, np.ascontiguousarray(src, np.int64))
        if bad:
            raise ProgramError(f"bred population: {bad} copied tree(s) differ in length from their parent tree")
        check_stats(stats, offsets, code)
        return cls(code, offsets, stats=stats)._bred_from(parents, np.ascontiguousarray(src, np.int64))

    @classmethod
    def from_individuals(cls, individuals) -> "Population":
        """Encode individuals (or ``(buy, sell)`` pairs of trees/text) as one population."""
        trees = []
        for x in individuals:
            ind = x if isinstance(x, Individual) else Individual(*x)
            trees += [ind.buy.ops, ind.sell.ops]
        if not trees:
            raise ProgramError("a population needs at least one individual")
        offsets = np.zeros(len(trees) + 1, np.int32)
        offsets[1:] = np.cumsum([t.size for t in trees])
        return cls(np.concatenate(trees), offsets)

    def __len__(self) -> int:
        return (self.offsets.size - 1) // 2

    @property
    def size(self) -> int:
        return len(self)

    def tree(self, i: int, t: int) -> np.ndarray:
        return self.code[self.offsets[2 * i + t]:self.offsets[2 * i + t + 1]]

    def __getitem__(self, i: int) -> Individual:
        if not -len(self) <= i < len(self):
            raise IndexError(f"individual {i} of a population of {len(self)}")
        i %= len(self)
        return Individual(Tree(self.tree(i, 0).copy()), Tree(self.tree(i, 1).copy()))

    def __iter__(self):
        return (self[i] for i in range(len(self)))

    def select(self, index) -> "Population":
        """The individuals at ``index`` (an array of positions), as a new population."""
        index = np.asarray(index, np.int64)
        return Population.from_individuals([self[int(i)] for i in index])

    @property
    def total_nodes(self) -> int:
        """Tree nodes of all individuals, both trees: per stock-day, the GP operations."""
        return int(self.nodes.sum())

    def check_limits(self, *, stack: int | None = None, bools: int | None = None,
                     tree_nodes: int | None = None, variant: str = "") -> None:
        """Raise [`ProgramLimitError`][gpulab.gp.programs.ProgramLimitError] naming the first tree deeper or longer than a limit."""
        what = f"the {variant} variant's" if variant else "the"
        checks = [("stack_depth", self.max_stack_depth, stack, False, "stack depth", "stack of STACK = {} values"),
                  ("bool_depth", self.max_bool_depth, bools, True, "boolean stack depth", "limit of {} booleans")]
        for name, top, limit, bools_only, label, desc in checks:
            if limit is None or top <= limit:  # the common case: O(1), no array read
                continue
            arr = getattr(self, name)
            over = np.flatnonzero(arr.ravel() > limit)
            if over.size:
                t = int(over[0])
                i, k = divmod(t, 2)
                pos = first_position_over(self.tree(i, k), limit, bools_only)
                raise ProgramLimitError(f"{_where(i, k, pos, self.tree(i, k))}: too deep: {label} "
                                        f"{int(arr.ravel()[t])} exceeds {what} {desc.format(limit)}")
        if tree_nodes is not None and self.max_tree_nodes > tree_nodes:
            over = np.flatnonzero(self.nodes.ravel() > tree_nodes)
            if over.size:
                t = int(over[0])
                i, k = divmod(t, 2)
                raise ProgramLimitError(f"individual {i}, {TREES[k]} tree, position {tree_nodes}: too long: "
                                        f"{int(self.nodes.ravel()[t])} nodes, over {what} limit of "
                                        f"{tree_nodes} nodes per tree")
# --8<-- [end:population]


PAPER_EXAMPLE = "(AND (> MA10 MA50) (OR (< EMA9 MA25) NVIG))"
PAPER_EXAMPLE_RPN = "MA10 MA50 > EMA9 MA25 < NVIG OR AND"


def population_key(pop: Population) -> str:
    """A hash of a population's byte code (the key of the kernels generated for it)."""
    h = hashlib.sha1(pop.code.tobytes())
    h.update(pop.offsets.tobytes())
    return h.hexdigest()


# --8<-- [start:device_population]
class DevicePopulation(Population):
    """A population whose byte code lives on the GPU: what the GPU breeding
    ([`gpulab.gp.breeding_gpu.breed_resident`][gpulab.gp.breeding_gpu.breed_resident]) returns,
    so that the next evaluation and the next breeding read it where it is.

    It is a [`Population`][gpulab.gp.programs.Population]: the maxima the evaluators check
    (`max_stack_depth`, `max_bool_depth`, `max_tree_nodes`, `max_program_nodes`) and
    `total_nodes` are on the host (the device validation reduced them); the arrays (`code`,
    `offsets`, `stats` and the per-tree views `nodes`, `depth`, ...) are downloaded on first use
    (a CPU evaluator, a variant that compiles or copies the programs to constant memory, an
    error message) and kept; `pop[i]` downloads only individual ``i``'s two trees.

    Its device buffers are the GPU breeding's kept buffers (two sets, used in turn): the
    breeding after the one that reads this population as parents writes its children over them.
    After that, a read of its device buffers raises a [`GpulabError`][gpulab.errors.GpulabError]
    (never stale code): call [`to_host`][gpulab.gp.programs.DevicePopulation.to_host] first to
    keep it longer. One that has a host copy is then evaluated (and bred, and uploaded again by
    `breeding_gpu.to_device`) from that copy."""

    def __init__(self, slot, P: int, total: int, maxima: dict, host: Population | None = None,
                 epoch: int | None = None):
        self._slot, self._epoch = slot, slot.epoch if epoch is None else epoch  # (epoch: when it was written)
        self._P, self._total = int(P), int(total)
        self._host: Population | None = host  # (a population uploaded from the host keeps it: nothing to download)
        self.max_stack_depth, self.max_bool_depth = int(maxima["stack"]), int(maxima["bools"])
        self.max_tree_nodes, self.max_program_nodes = int(maxima["tree_nodes"]), int(maxima["program_nodes"])

    @property
    def on_device(self) -> bool:
        """Whether its device buffers still hold it (no later breeding has written over them)."""
        return self._slot.epoch == self._epoch

    def device_or_host(self) -> "DevicePopulation | Population":
        """What a reader should use: itself while [`on_device`][gpulab.gp.programs.DevicePopulation.on_device],
        else its host copy where it has one (downloaded by `to_host`, or the population it was
        uploaded from). Overwritten without a host copy: itself, whose device reads raise."""
        return self if self.on_device or self._host is None else self._host

    def _check_fresh(self) -> None:
        if not self.on_device:
            raise GpulabError("this GPU-bred population's device buffers were overwritten by a later breeding "
                              "(a population bred on the GPU lives until the breeding after the one it parents); "
                              "call .to_host() on it before breeding again to keep it")

    def copies_of(self, parents: Population):
        """As [`Population.copies_of`][gpulab.gp.programs.Population.copies_of], with ``src`` on
        the device, while [`on_device`][gpulab.gp.programs.DevicePopulation.on_device]."""
        return super().copies_of(parents) if self.on_device else None

    def device_arrays(self):
        """``(code, offsets)``: the device arrays the evaluation kernels read (the code buffer
        may be longer than `total_nodes`; the offsets say where each tree is)."""
        self._check_fresh()
        return self._slot.code, self._slot.offsets

    def device_stats(self):
        """``int32 [6, 2P]`` on the device: `analyze`'s columns as rows (row ``STAT_DEPTH`` is
        the trees' heights the next breeding reads)."""
        self._check_fresh()
        return self._slot.stats

    def to_host(self) -> Population:
        """The same population as host arrays (downloaded once, then kept)."""
        if self._host is None:
            self._check_fresh()
            s = self._slot
            code = s.code[:self._total].copy_to_host() if self._total else np.zeros(0, np.uint8)
            self._host = Population(code, s.offsets.copy_to_host(), stats=np.ascontiguousarray(s.stats.copy_to_host().T))
        return self._host

    def __len__(self) -> int:
        return self._P

    @property
    def total_nodes(self) -> int:
        return self._total

    def __getitem__(self, i: int) -> Individual:
        if self._host is not None:
            return self._host[i]
        if not -len(self) <= i < len(self):
            raise IndexError(f"individual {i} of a population of {len(self)}")
        i %= len(self)
        self._check_fresh()
        o = self._slot.offsets[2 * i:2 * i + 3].copy_to_host()
        ops = self._slot.code[int(o[0]):int(o[2])].copy_to_host() if o[2] > o[0] else np.zeros(0, np.uint8)
        a = int(o[1] - o[0])
        return Individual(Tree(ops[:a].copy()), Tree(ops[a:].copy()))


def _from_host(name: str):
    return property(lambda self: getattr(self.to_host(), name),
                    doc=f"`{name}` of [`to_host`][gpulab.gp.programs.DevicePopulation.to_host] (downloaded once).")


for _name in ("code", "offsets", "stats", "nodes", "depth", "stack_depth", "bool_depth"):
    setattr(DevicePopulation, _name, _from_host(_name))
del _name
# --8<-- [end:device_population]
