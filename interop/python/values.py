"""Turns what pandas and polars hand back into plain Python values, so that
each client's results compare with typed.py's expectations."""

import datetime as dt
import math

import numpy as np
import pandas as pd
import pyarrow as pa


def plain(v):
    """The plain Python value of a pandas/numpy/pyarrow cell; None for any
    kind of missing value."""
    if v is None or v is pd.NA or v is pd.NaT:
        return None
    if isinstance(v, float) and math.isnan(v):
        return None
    if isinstance(v, pa.Scalar):
        return plain(v.as_py())
    if isinstance(v, pd.Timestamp):
        return v.to_pydatetime()
    if isinstance(v, pd.Timedelta):
        return v.to_pytimedelta()
    if isinstance(v, pd.DateOffset):
        kw = v.kwds
        return pa.MonthDayNano([kw.get("months", 0), kw.get("days", 0), kw.get("nanoseconds", 0)])
    if isinstance(v, np.ndarray):
        return [plain(x) for x in v.tolist()]
    if isinstance(v, np.generic):
        return plain(v.item())
    if isinstance(v, list):
        return [plain(x) for x in v]
    if isinstance(v, dict):
        return {k: plain(x) for k, x in v.items()}
    if isinstance(v, dt.datetime) and v.tzinfo is not None:
        return v.astimezone(dt.timezone.utc)
    return v


def frame_rows(df: pd.DataFrame):
    """Every row of df as a dict of plain values."""
    return [{c: plain(v) for c, v in zip(df.columns, row)} for row in df.itertuples(index=False, name=None)]
