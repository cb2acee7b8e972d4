"""Exercise gp.3 — short selling in the trading loop.

Write `trade_with_shorts(buy, sell, close)` (plain Python): the paper's trading loop for one
stock, extended with short positions. Flat and buy ∧ ¬sell: buy the most shares the money allows
after the $1 fee, as in `gpulab.gp.reference.trade`. Flat and sell ∧ ¬buy: **sell short** the same
number of shares (n = ⌊(money − 1) / close⌋; receive n·close − 1, owe n shares). Long and
sell ∧ ¬buy: sell everything (flat). Short and buy ∧ ¬sell: buy the shares back (pay n·close + 1;
flat). An order for 0 shares is not placed. After the last day, close any position at the last
close (with the fee). Return `(money, actions)` with actions per day: 0 nothing, 1 bought,
2 sold, 3 sold short, 4 covered.
"""


def trade_with_shorts(buy, sell, close):
    """(final money, actions per day) with long and short positions."""
    raise NotImplementedError("exercise gp.3: write trade_with_shorts")
