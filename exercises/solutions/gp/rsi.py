"""Exercise gp.1 — an RSI terminal, end to end (solution)."""

import numpy as np


def rsi(close, n=14):
    """Wilder's RSI of ``close`` [S, T] (TA-Lib's seeding); NaN before index n."""
    close = np.atleast_2d(np.asarray(close, np.float64))
    S, T = close.shape
    out = np.full((S, T), np.nan)
    if T <= n:
        return out
    change = np.diff(close, axis=1)
    gain, loss = np.maximum(change, 0.0), np.maximum(-change, 0.0)
    g, l = gain[:, :n].mean(axis=1), loss[:, :n].mean(axis=1)
    for t in range(n, T):
        if t > n:
            g = (g * (n - 1) + gain[:, t - 1]) / n
            l = (l * (n - 1) + loss[:, t - 1]) / n
        total = g + l
        out[:, t] = np.where(total > 0, 100.0 * g / np.where(total > 0, total, 1.0), 50.0)
    return out


def rsi_readings(close, n=14):
    r = rsi(close, n)
    with np.errstate(invalid="ignore"):
        return r > 70, r < 30


def with_rsi(market):
    high, low = rsi_readings(market.ohlcv(window=False)["close"])
    return market.with_booleans(MFIG=high, MFIL=low)
