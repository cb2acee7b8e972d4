"""Exercise gp.3 — short selling in the trading loop (solution)."""

import math


def trade_with_shorts(buy, sell, close):
    money, pos = 10000.0, 0  # pos > 0: shares held; pos < 0: shares owed
    actions = []
    for d in range(len(close)):
        c, b, s = float(close[d]), bool(buy[d]), bool(sell[d])
        act = 0
        if pos == 0 and b != s:
            avail = money - 1.0
            n = math.floor(avail / c) if avail >= c else 0
            if n * c > avail:
                n -= 1
            if n >= 1:
                if b:
                    money, pos, act = avail - n * c, n, 1
                else:
                    money, pos, act = money + n * c - 1.0, -n, 3
        elif pos > 0 and s and not b:
            money, pos, act = money + pos * c - 1.0, 0, 2
        elif pos < 0 and b and not s:
            money, pos, act = money - (-pos) * c - 1.0, 0, 4
        actions.append(act)
    c = float(close[-1])
    if pos > 0:
        money = money + pos * c - 1.0
    elif pos < 0:
        money = money - (-pos) * c - 1.0
    return money, actions
