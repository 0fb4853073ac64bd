"""Plots of fleetsim results (matplotlib).

Every function builds a ``matplotlib.figure.Figure`` directly (no pyplot, no GUI), so it renders
with the Agg backend anywhere: ``fig.savefig("x.png")``. In a notebook, run ``%matplotlib inline``
once and a returned figure displays itself. Functions that draw one panel accept ``ax=`` to draw
into an existing Axes (and return its figure).

- :func:`ttft_ecdf`         TTFT distribution per arm (empirical CDF)
- :func:`reuse_bars`        prefix-cache reuse per arm, measured beside simulated when present
- :func:`pod_load`          in-flight requests per pod over time, one panel per arm
- :func:`sweep_curves`      throughput and TTFT p95 (or any summary columns) vs a swept parameter
- :func:`failure_timeline`  request outcomes over time per arm, for whatever statuses exist
- :func:`campaign_intervals` a campaign's differences from its baseline, with their intervals
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Sequence

import numpy as np
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.ticker import FuncFormatter, NullFormatter

if TYPE_CHECKING:
    import pandas as pd

    from . import Result

# Status colours: ok green, anything else from a fixed cycle, so a new status still gets one.
_STATUS_COLOURS = {"ok": "#4c9a2a", "ok after retry": "#f2b134", "unfinished": "#9e9e9e"}
_OTHER_COLOURS = ["#d62728", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#17becf"]


def _panel(ax: Axes | None, figsize: tuple[float, float] = (6.4, 4.0)) -> tuple[Figure, Axes]:
    if ax is not None:
        return ax.figure, ax  # type: ignore[return-value]
    fig = Figure(figsize=figsize, layout="constrained")
    return fig, fig.add_subplot()


def _arm_names(result: "Result", arms: Sequence[str] | None) -> list[str]:
    """The arms to draw: all, or the ones named, each checked (UnknownNameError lists the valid
    names rather than drawing an empty panel)."""
    if arms is None:
        return [a.name for a in result.arms]
    if isinstance(arms, str):
        raise TypeError(f"arms must be a list of arm names, got the string {arms!r}")
    for name in arms:
        result.arm(name)
    return list(arms)


def _plain_log_axis(axis) -> None:
    """A log axis labelled 10, 100, 1000 (or 0.5, 2, 30 where those are the ticks), never
    3x10^1: the decade labels as plain numbers, the minor ticks unlabelled."""
    axis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
    axis.set_minor_formatter(NullFormatter())


def ttft_ecdf(
    result: "Result",
    *,
    warm: bool = False,
    arms: Sequence[str] | None = None,
    log_x: bool = True,
    ax: Axes | None = None,
) -> Figure:
    """Empirical CDF of TTFT per arm (completed requests; ``warm=True``: turns 2 and later).

    The p50 and p95 of each arm are marked; they equal the summary's percentiles.
    """
    fig, ax = _panel(ax)
    df = result.requests
    for name in _arm_names(result, arms):
        sel = df[(df["arm"] == name) & df["ttft_ms"].notna()]
        if warm:
            sel = sel[sel["turn"] >= 2]
        x = np.sort(sel["ttft_ms"].to_numpy())
        if len(x) == 0:
            continue
        y = np.arange(1, len(x) + 1) / len(x)
        (line,) = ax.step(x, y, where="post", label=f"{name} (p50 {np.percentile(x, 50):.0f} ms)")
        ax.plot(np.percentile(x, [50, 95]), [0.50, 0.95], "o", color=line.get_color(), ms=4)
    if log_x:
        ax.set_xscale("log")
        _plain_log_axis(ax.xaxis)
    ax.set_xlabel(("warm " if warm else "") + "TTFT (ms)")
    ax.set_ylabel("fraction of requests")
    ax.set_ylim(0, 1.01)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(loc="lower right")
    ax.set_title(f"{result.scenario.name}: {'warm ' if warm else ''}TTFT distribution")
    return fig


def reuse_bars(result: "Result", *, ax: Axes | None = None) -> Figure:
    """Prefix-cache reuse (hits / queries, %) per arm, with the measured figure beside it when
    the scenario has one (``measured: {arm: {prefix_cache_reuse_pct: ...}}``)."""
    fig, ax = _panel(ax)
    names = [a.name for a in result.arms]
    sim = [100.0 * a.summary["prefix_cache_reuse"] for a in result.arms]
    meas = [(a.measured or {}).get("prefix_cache_reuse_pct") for a in result.arms]
    x = np.arange(len(names))
    has_meas = any(m is not None for m in meas)
    width = 0.38 if has_meas else 0.6
    bars = ax.bar(x - (width / 2 if has_meas else 0), sim, width, label="simulated")
    ax.bar_label(bars, fmt="%.1f")
    if has_meas:
        mvals = [m if m is not None else np.nan for m in meas]
        mbars = ax.bar(x + width / 2, mvals, width, label="measured", color="#999999")
        ax.bar_label(mbars, labels=["" if m is None else f"{m:.1f}" for m in meas])
    ax.set_xticks(x, names)
    ax.set_ylabel("prefix-cache reuse (%)")
    ax.set_ylim(0, 105)
    ax.legend(loc="lower right")
    ax.set_title(f"{result.scenario.name}: prefix-cache reuse")
    return fig


def inflight_series(requests: "pd.DataFrame", pod: int) -> tuple[np.ndarray, np.ndarray]:
    """(times in s, in-flight count) steps for one pod: +1 at dispatch, -1 at finish (requests
    still in flight at the end are counted until the last event)."""
    sel = requests[requests["pod"] == pod]
    starts = sel["dispatched_ms"].dropna().to_numpy()
    ends = sel["finished_ms"].dropna().to_numpy()
    t = np.concatenate([starts, ends]) / 1000.0
    d = np.concatenate([np.ones(len(starts)), -np.ones(len(ends))])
    order = np.lexsort((d, t))  # at equal times, finishes (-1) before dispatches
    return t[order], np.cumsum(d[order])


def pod_load(
    result: "Result", *, arms: Sequence[str] | None = None, sharey: bool = True
) -> Figure:
    """In-flight requests per pod over time, from the request records: one panel per arm, one
    line per pod. An even spread means the router balanced the load; a pod far above the others
    queues (and its requests' TTFT grows)."""
    names = _arm_names(result, arms)
    fig = Figure(figsize=(6.4, 2.2 * len(names) + 0.6), layout="constrained")
    axes = fig.subplots(len(names), 1, sharex=True, sharey=sharey, squeeze=False)[:, 0]
    df = result.requests
    for ax, name in zip(axes, names):
        arm_df = df[df["arm"] == name]
        for pod in sorted(p for p in arm_df["pod"].unique() if p >= 0):
            t, n = inflight_series(arm_df, int(pod))
            ax.step(t, n, where="post", lw=0.9, label=f"pod-{pod}")
        ax.set_ylabel("in flight")
        ax.set_title(f"{name}", loc="left", fontsize="medium")
        ax.grid(True, alpha=0.3)
    axes[0].legend(loc="upper right", ncol=4, fontsize="small")
    axes[-1].set_xlabel("simulated time (s)")
    fig.suptitle(f"{result.scenario.name}: in-flight requests per pod")
    return fig


def sweep_curves(
    df: "pd.DataFrame",
    x: str,
    metrics: Sequence[str] = ("throughput_req_s", "ttft_ms_p95"),
    *,
    hue: str = "arm",
    log_y: Sequence[str] = (),
) -> Figure:
    """Summary metrics vs a varied parameter, one line per ``hue`` value (default: per arm).

    ``df`` is what :func:`fleetsim.sweep` returns (or any frame with those columns); other varied
    columns should be fixed by filtering first. Throughput and TTFT p95 by default.
    """
    fig = Figure(figsize=(4.2 * len(metrics), 3.6), layout="constrained")
    axes = fig.subplots(1, len(metrics), squeeze=False)[0]
    groups = df.groupby(hue, sort=False) if hue in df.columns else [(None, df)]
    for ax, metric in zip(axes, metrics):
        for key, g in groups:
            g = g.sort_values(x)
            ax.plot(g[x], g[metric], "o-", label=str(key) if key is not None else metric)
        ax.set_xlabel(x)
        ax.set_ylabel(metric)
        if metric in log_y:
            ax.set_yscale("log")
            _plain_log_axis(ax.yaxis)
        ax.grid(True, alpha=0.3)
    axes[0].legend()
    return fig


def _mark_fault_phases(ax: Axes, fault: dict) -> None:
    """When the gateway marked the fault's pod down (detection) and when it served again
    (recovery), as dotted lines, where they happened."""
    phases = [("detected", fault["at_s"], fault.get("detection_latency_s"), "#1f77b4")]
    if fault.get("back_at_s") is not None:
        phases.append(("recovered", fault["back_at_s"], fault.get("recovery_s"), "#2ca02c"))
    for label, start, after, colour in phases:
        if after is None:
            continue
        t = start + after
        ax.axvline(t, color=colour, ls=":", lw=1.0)
        ax.annotate(f" {label}", (t, 0.88), xycoords=("data", "axes fraction"), va="top",
                    fontsize="x-small", color=colour)


def _healthy_pods(ax: Axes, timeline: list, span: float) -> None:
    """The pods every gateway replica believes healthy, a step line on a right-hand axis."""
    t = [row["t_s"] for row in timeline] + [span]
    up = [row["healthy_pods"] for row in timeline]
    right = ax.twinx()
    right.step(t, up + up[-1:], where="post", color="#555555", lw=1.0, label="healthy pods")
    right.set_ylim(0, max(up) * 1.15 + 0.5)
    right.set_ylabel("healthy pods", fontsize="small")


def failure_timeline(
    result: "Result",
    *,
    bin_s: float | None = None,
    arms: Sequence[str] | None = None,
    split_retried: bool = True,
) -> Figure:
    """Request outcomes over time, per arm: stacked counts of each final status per time bin (by
    the time each request ended, or arrived if it never did). Works with whatever statuses the run
    produced ('ok', 'http_503', 'http_502', 'timeout', ..., 'unfinished').

    ``split_retried``: requests that succeeded only after a retry are drawn apart ('ok after
    retry'). When the scenario has faults or health probes (``Arm.failures``), the gateway's failed
    attempts per bin are drawn as a line (retries hide them from the final statuses), each fault's
    time is marked with its detection (the gateway marked the pod down) and recovery (the pod
    served again), the pods believed healthy are a step line on a right-hand axis, and the
    failure window (first to last failed attempt) is shaded; otherwise the window of failed
    requests is shaded.
    """
    names = _arm_names(result, arms)
    if bin_s is not None and not (bin_s > 0 and np.isfinite(bin_s)):
        raise ValueError(f"bin_s must be a positive number of seconds (or None), got {bin_s!r}")
    df = result.requests
    if split_retried and "attempts" in df.columns:
        retried = (df["status"] == "ok") & (df["attempts"] > 1)
        if retried.any():
            status = df["status"].cat.add_categories(["ok after retry"])
            status[retried.to_numpy()] = "ok after retry"
            df = df.assign(status=status)
    t_end = df["finished_ms"].fillna(df["arrival_ms"]) / 1000.0
    span = float(t_end.max()) if len(df) else 1.0
    if bin_s is None:  # about 60 bins, of a round width
        nice = [m * 10.0**e for e in range(-3, 5) for m in (1, 2, 5)]
        bin_s = next((b for b in nice if b >= span / 60.0), nice[-1])
    edges = np.arange(0.0, span + bin_s, bin_s)
    if len(edges) < 2:
        edges = np.array([0.0, bin_s])
    statuses = [s for s in df["status"].cat.categories if (df["status"] == s).any()]
    others = iter(_OTHER_COLOURS * 4)
    colours = {s: _STATUS_COLOURS.get(s) or next(others) for s in statuses}
    fig = Figure(figsize=(8.0, 2.0 * len(names) + 0.6), layout="constrained")
    axes = fig.subplots(len(names), 1, sharex=True, squeeze=False)[:, 0]
    for ax, name in zip(axes, names):
        mask = (df["arm"] == name).to_numpy()
        bottom = np.zeros(len(edges) - 1)
        for status in statuses:
            sel = mask & (df["status"] == status).to_numpy()
            counts, _ = np.histogram(t_end[sel], bins=edges)
            if counts.sum() == 0:
                continue
            ax.bar(edges[:-1], counts, width=bin_s, bottom=bottom, align="edge",
                   color=colours[status], label=f"{status} ({counts.sum()})")
            bottom += counts
        failures = result.arm(name).failures
        window = None
        if failures:
            timeline = failures.get("timeline") or []
            if timeline:
                t = np.array([row["t_s"] for row in timeline], dtype=float)
                errors = np.array([row["errors"] for row in timeline], dtype=float)
                per_bin, _ = np.histogram(t, bins=edges, weights=errors)
                if per_bin.sum() > 0:
                    ax.step(edges[:-1], per_bin, where="post", color="#8b0000", lw=1.4, zorder=3,
                            label=f"failed attempts ({int(per_bin.sum())})")
            for fault in failures.get("faults", []):
                ax.axvline(fault["at_s"], color="black", ls="--", lw=0.8)
                ax.annotate(f" {fault['kind']} {fault['target']}", (fault["at_s"], 1.0),
                            xycoords=("data", "axes fraction"), va="top", fontsize="x-small")
                _mark_fault_phases(ax, fault)
            if timeline:
                _healthy_pods(ax, timeline, span)
            w = failures.get("failure_window")
            if w:
                window = (w["first_s"], w["last_s"])
        else:
            failed = mask & ~df["status"].isin(["ok", "ok after retry", "unfinished"]).to_numpy()
            if failed.any():
                window = (float(t_end[failed].min()), float(t_end[failed].max()))
        if window is not None:
            ax.axvspan(window[0], window[1] + bin_s, color="#d62728", alpha=0.08)
        ax.set_ylabel(f"requests / {bin_s:g} s")
        ax.set_title(f"{name}", loc="left", fontsize="medium")
        ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize="small")
    axes[-1].set_xlabel("simulated time (s)")
    fig.suptitle(f"{result.scenario.name}: request outcomes over time")
    return fig


# Finding colours: better green, worse red, no difference grey, undecided amber.
_READING_COLOURS = {"better": "#4c9a2a", "worse": "#d62728", "equivalent": "#7f7f7f",
                    "inconclusive": "#f2b134"}


def campaign_intervals(campaign: dict) -> Figure:
    """A campaign's comparisons (``fleetsim.campaign(...)``): per metric, each arm's difference
    from the baseline in percent of the baseline's mean, with its BCa interval as a bar, the
    equivalence margin shaded, and the finding as the marker's colour (better, worse,
    equivalent, inconclusive) and label. Undefined comparisons are left out."""
    comparisons = [c for c in campaign.get("comparisons", []) if c["finding"] != "undefined"]
    if not comparisons:
        raise ValueError("the campaign has no defined comparison to draw (one arm, or every "
                         "metric undefined)")
    metrics = list(dict.fromkeys(c["metric"] for c in comparisons))
    fig = Figure(figsize=(7.0, 1.2 + 1.1 * len(comparisons)), layout="constrained")
    axes = fig.subplots(len(metrics), 1, squeeze=False)[:, 0]
    margin = campaign["equivalence_margin_pct"]
    for ax, metric in zip(axes, metrics):
        rows = [c for c in comparisons if c["metric"] == metric]
        ax.axvspan(-margin, margin, color="#dddddd", zorder=0)
        ax.axvline(0, color="black", lw=0.8)
        for y, c in enumerate(rows):
            scale = 100.0 / abs(c["baseline_mean"]) if c["baseline_mean"] else 0.0
            low, high = (v * scale for v in c["ci"])
            mid = c["diff"] * scale
            label = c.get("reading") or c["finding"]
            colour = _READING_COLOURS.get(label, "#1f77b4")
            ax.errorbar(mid, y, xerr=[[mid - low], [high - mid]], fmt="o", color=colour,
                        capsize=3)
            ax.annotate(f"{c['finding']}" + (f", {c['reading']}" if c.get("reading") else ""),
                        (mid, y), xytext=(0, 7), textcoords="offset points", ha="center",
                        fontsize="small", color=colour)
        ax.set_yticks(range(len(rows)), [c["arm"] for c in rows])
        ax.set_ylim(-0.7, len(rows) - 0.3)
        ax.set_title(metric, loc="left", fontsize="medium")
        ax.set_xlabel(f"difference from {campaign['baseline']} (% of its mean)")
    fig.suptitle(f"{campaign['scenario']}: {len(campaign['seeds'])} replicates, "
                 f"{100 * campaign['confidence']:.0f}% intervals, margin ±{margin:g}% shaded")
    return fig
