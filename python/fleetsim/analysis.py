"""Request-level analysis of a :class:`fleetsim.Result` (pandas).

goodput@SLO as DistServe defines it: a request is good iff TTFT <= SLO_ttft AND TPOT <= SLO_tpot;
failed (and unfinished) requests count as misses in the denominator. A request with a single
output token has no TPOT and is judged on its TTFT alone.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Sequence

if TYPE_CHECKING:
    import pandas as pd


def good_mask(requests: "pd.DataFrame", ttft_slo_ms: float, tpot_slo_ms: float) -> "pd.Series":
    """Boolean Series: which rows of ``Result.requests`` meet both SLOs (and completed)."""
    ok = requests["status"] == "ok"
    ttft_ok = requests["ttft_ms"] <= ttft_slo_ms
    tpot_ok = requests["tpot_ms"].isna() | (requests["tpot_ms"] <= tpot_slo_ms)
    return ok & ttft_ok & tpot_ok


def goodput(
    requests: "pd.DataFrame",
    ttft_slo_ms: float,
    tpot_slo_ms: float,
    by: Sequence[str] = ("arm",),
) -> "pd.DataFrame":
    """goodput@SLO per group of ``Result.requests`` (default: per arm).

    Returns one row per group with: requests, good, good_fraction (good / all requests, failed
    ones included) and goodput_req_s (good requests per second over the group's span, first
    arrival to last finish). Warm-up requests (``measured`` False) are left out, as the
    summaries leave them out, so with the scenario's own targets these equal its
    ``summary["goodput"]`` (docs/scenarios.md).
    """
    import math

    import pandas as pd

    for name, slo in (("ttft_slo_ms", ttft_slo_ms), ("tpot_slo_ms", tpot_slo_ms)):
        if isinstance(slo, bool) or not isinstance(slo, (int, float)) or not math.isfinite(slo) or slo <= 0:
            raise ValueError(f"{name} must be a positive number of ms, got {slo!r}")
    if isinstance(by, str):  # by="arm": one column, not the letters a, r, m
        by = [by]
    by = list(by)
    missing = [c for c in by if c not in requests.columns]
    if missing:
        raise KeyError(f"by: no column {missing} in the requests; columns: {list(requests.columns)}")
    if "measured" in requests:
        requests = requests[requests["measured"]]
    df = requests.assign(_good=good_mask(requests, ttft_slo_ms, tpot_slo_ms))
    rows = []
    for key, g in df.groupby(by if len(by) > 1 else by[0], observed=True, sort=False):
        key = key if isinstance(key, tuple) else (key,)
        span_s = (g["finished_ms"].max() - g["arrival_ms"].min()) / 1000.0
        good = int(g["_good"].sum())
        rows.append(
            {
                **dict(zip(by, key)),
                "requests": len(g),
                "good": good,
                "good_fraction": good / len(g) if len(g) else float("nan"),
                "goodput_req_s": good / span_s if span_s > 0 else float("nan"),
            }
        )
    return pd.DataFrame(rows)
