"""Exercise gp.1 — an RSI terminal, end to end. See README.md."""

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
