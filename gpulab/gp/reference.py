r"""The CPU reference: the paper's Algorithms 1 and 2 in plain Python and numpy — the oracle of
every test.

[`tree_values`][gpulab.gp.reference.tree_values] is the stack interpreter of Algorithm 2, read literally: opcodes left to
right, a terminal pushes its value, a function pops its arguments and pushes its result, the
one value left is the tree's value. Here a "value" is a whole ``[S, D]`` array (one entry per
stock and day), so one pass over the program evaluates it on every stock-day at once — the
same operations in the same order as every kernel does for one stock-day, on float32 inputs.

[`trade`][gpulab.gp.reference.trade] is Algorithm 1's day loop for one stock, in Python floats (IEEE float64) and
Python ints, with the decision matrix spelled out; [`fitness`][gpulab.gp.reference.fitness] is the mean over stocks of
ROI minus buy-and-hold ROI, summed in stock order (the order every backend uses).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from gpulab.errors import LimitError
from gpulab.gp import opcodes as oc
from gpulab.gp import trading


@dataclass
class Evaluation:
    """What evaluating a population on a market produces.

    Attributes:
        fitness: float64 ``[P]``: mean over stocks of (ROI − buy-and-hold ROI).
        money: float64 ``[P, S]``: money after the last day (positions sold).
        trace: uint8 ``[P, S, D]`` or ``None``: per day, bit 0 the buy signal, bit 1 the sell
            signal, bit 2 "bought", bit 3 "sold" (`gpulab.gp.trading.TRACE_BUY` ...).
    """

    fitness: np.ndarray
    money: np.ndarray
    trace: np.ndarray | None = None


# --8<-- [start:interpreter]
def tree_values(ops, floats, bools) -> np.ndarray:
    """Algorithm 2 on every stock-day at once: ``floats`` float32 ``[S, 17, D]``, ``bools``
    uint8 ``[S, 14, D]`` → bool ``[S, D]``."""
    stack = []
    for op in ops:
        op = int(op)
        if op < oc.NF:  # float terminal: push the indicator's value
            stack.append(floats[:, op, :])
        elif op < oc.NT:  # boolean terminal: push the reading
            stack.append(bools[:, op - oc.NF, :] != 0)
        elif op == oc.OP_NOT:
            stack.append(~stack.pop())
        else:  # binary: the right argument is on top
            b = stack.pop()
            a = stack.pop()
            if op == oc.OP_AND:
                stack.append(a & b)
            elif op == oc.OP_OR:
                stack.append(a | b)
            elif op == oc.OP_LT:
                stack.append(a < b)
            else:
                stack.append(a > b)
    (value,) = stack  # the validator guarantees exactly one boolean
    return value
# --8<-- [end:interpreter]


# --8<-- [start:trade]
def trade(buy, sell, close) -> tuple[float, list[int]]:
    """Algorithm 1's day loop for one stock: the decision matrix, $10,000, $1 per trade.
    ``close`` holds float32 prices. Returns the final money and the action of every day."""
    money, shares = trading.START_MONEY, 0
    actions = []
    for d in range(len(close)):
        c = float(close[d])  # a float32 is exactly a float64
        b, s = bool(buy[d]), bool(sell[d])
        action = trading.NONE
        if b and not s and shares == 0:  # buy the most shares the money allows after the fee
            avail = money - trading.FEE
            q = avail / c
            if q >= trading.SHARE_LIMIT:
                raise LimitError(f"a buy of {math.floor(q)} shares at {c} (day {d}) reaches the limit of 2**29 "
                                 "shares, beyond which shares * close is not exact in float64")
            n = math.floor(q) if q >= 1.0 else 0
            if n * c > avail:  # q was rounded up to an integer the money does not reach
                n -= 1
            if n >= 1:  # an order for 0 shares is not placed and costs nothing
                money, shares, action = avail - n * c, n, trading.BOUGHT
        elif s and not b and shares > 0:  # sell everything
            money, shares, action = money + shares * c - trading.FEE, 0, trading.SOLD
        actions.append(action)
    if shares > 0:  # liquidate after the last day
        money = money + shares * float(close[-1]) - trading.FEE
    return money, actions
# --8<-- [end:trade]


# --8<-- [start:fitness]
def fitness(money_row, bh_roi) -> float:
    """Mean over stocks of (ROI − buy-and-hold ROI), summed in stock order."""
    acc = 0.0
    for s in range(len(money_row)):
        acc += (float(money_row[s]) - trading.START_MONEY) / trading.START_MONEY - float(bh_roi[s])
    return acc / len(money_row)
# --8<-- [end:fitness]


def evaluate(population, market, trace: bool = False) -> Evaluation:
    """Evaluate every individual on every stock of ``market`` (the tests' oracle)."""
    floats, bools = market.floats("sid"), market.bools("sid")
    close = market.close32()
    bh = market.buy_and_hold()
    P, S, D = len(population), market.stocks, market.days
    money = np.empty((P, S))
    out_trace = np.zeros((P, S, D), np.uint8) if trace else None
    fit = np.empty(P)
    for i in range(P):
        buy = tree_values(population.tree(i, 0), floats, bools)
        sell = tree_values(population.tree(i, 1), floats, bools)
        for s in range(S):
            money[i, s], actions = trade(buy[s], sell[s], close[s])
            if trace:
                out_trace[i, s] = (buy[s] * trading.TRACE_BUY + sell[s] * trading.TRACE_SELL
                                   + np.array(actions, np.uint8) * trading.TRACE_BOUGHT)
        fit[i] = fitness(money[i], bh)
    return Evaluation(fit, money, out_trace)
