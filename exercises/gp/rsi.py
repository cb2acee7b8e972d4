"""Exercise gp.1 — an RSI terminal, end to end.

Write `rsi(close, n=14)`: Wilder's relative strength index of a `[S, T]` float64 array of
closes, with TA-Lib's conventions (the first value at index `n`: the mean gain and mean loss of
the first `n` day-to-day changes; then each day `avg = (avg * (n - 1) + today) / n`;
RSI = 100 · gain / (gain + loss), and 50 when both are 0; NaN before index `n`). Then
`rsi_readings(close)` → `(close_rsi > 70, close_rsi < 30)` as two bool `[S, T]` arrays (NaN days
are False), and `with_rsi(market)`: the market whose boolean terminals MFIG and MFIL read
RSI > 70 and RSI < 30 instead (use `Market.with_booleans` and `market.ohlcv(window=False)`), so
every evolved rule that says MFIG now trades on your indicator — on every variant.
"""

import numpy as np  # noqa: F401


def rsi(close, n=14):
    """Wilder's RSI of ``close`` [S, T] (TA-Lib's seeding); NaN before index n."""
    raise NotImplementedError("exercise gp.1: write rsi")


def rsi_readings(close, n=14):
    """(RSI > 70, RSI < 30), bool [S, T]; False where the RSI is not defined."""
    raise NotImplementedError("exercise gp.1: write rsi_readings")


def with_rsi(market):
    """The market whose MFIG / MFIL terminals read RSI > 70 / RSI < 30."""
    raise NotImplementedError("exercise gp.1: write with_rsi")
