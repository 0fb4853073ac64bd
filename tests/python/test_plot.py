"""fleetsim.plot: every plot renders (Agg) from real results."""

from __future__ import annotations

import numpy as np
import pytest
from matplotlib.figure import Figure

import fleetsim
from fleetsim import plot


@pytest.fixture(scope="module")
def result(flagship):
    return fleetsim.run(flagship)


def _renders(fig: Figure, tmp_path, name: str) -> None:
    assert isinstance(fig, Figure)
    out = tmp_path / f"{name}.png"
    fig.savefig(out, dpi=50)
    assert out.stat().st_size > 1000


def test_ttft_ecdf(result, tmp_path):
    _renders(plot.ttft_ecdf(result), tmp_path, "ecdf")
    _renders(plot.ttft_ecdf(result, warm=True, arms=["epp"]), tmp_path, "ecdf_warm")


def test_reuse_bars_show_measured_beside_simulated(result, tmp_path):
    fig = plot.reuse_bars(result)
    _renders(fig, tmp_path, "reuse")
    labels = {t.get_text() for t in fig.axes[0].get_legend().get_texts()}
    assert labels == {"simulated", "measured"}


def test_pod_load(result, tmp_path):
    fig = plot.pod_load(result)
    assert len(fig.axes) == 3
    _renders(fig, tmp_path, "load")
    t, n = plot.inflight_series(result.arm("rr").requests, 0)
    assert n.min() >= 0 and n[-1] == 0 and np.all(np.diff(t) >= 0)


def test_sweep_curves(small_yaml, tmp_path):
    df = fleetsim.sweep(small_yaml, {"fleet.pods": [1, 2, 3]}, max_workers=1)
    fig = plot.sweep_curves(df, "fleet.pods")
    assert len(fig.axes) == 2
    _renders(fig, tmp_path, "sweep")


def test_failure_timeline_with_whatever_statuses_exist(result, small_yaml, tmp_path):
    _renders(plot.failure_timeline(result), tmp_path, "fail_ok")
    cut = fleetsim.run(small_yaml, overrides={"sim.horizon_s": 2})
    fig = plot.failure_timeline(cut)
    labels = {t.get_text().split(" ")[0] for t in fig.axes[0].get_legend().get_texts()}
    assert "unfinished" in labels
    _renders(fig, tmp_path, "fail_cut")


def test_failure_timeline_with_faults(source_dir, tmp_path):
    path = source_dir / "scenarios" / "node-loss.yaml"
    if not path.exists():
        pytest.skip("no fault scenario in scenarios/")
    result = fleetsim.run(path)
    fig = plot.failure_timeline(result, bin_s=2)
    labels = " ".join(t.get_text() for t in fig.axes[0].get_legend().get_texts())
    assert "failed attempts" in labels and "ok after retry" in labels
    assert "detected" in {t.get_text().strip() for t in fig.axes[0].texts}
    healthy = [ax for ax in fig.axes if ax.get_ylabel() == "healthy pods"]
    assert healthy and healthy[0].lines[0].get_ydata().min() == 4  # two of six pods down a while
    _renders(fig, tmp_path, "fail_faults")


def test_failure_timeline_marks_recovery(source_dir):
    result = fleetsim.run(source_dir / "scenarios" / "hrw-pod-kill.yaml")
    fig = plot.failure_timeline(result)
    assert {"detected", "recovered"} <= {t.get_text().strip() for t in fig.axes[0].texts}


def test_log_axes_read_as_plain_numbers(result):
    fig = plot.ttft_ecdf(result, log_x=True)
    fig.canvas.draw()
    labels = [t.get_text() for t in fig.axes[0].get_xticklabels() if t.get_text()]
    assert labels and all("10^" not in s and "times" not in s for s in labels), labels


def test_plot_does_not_touch_pyplot():
    import subprocess
    import sys

    code = "import fleetsim.plot, sys; assert 'matplotlib.pyplot' not in sys.modules"
    subprocess.run([sys.executable, "-c", code], check=True)


def test_campaign_intervals_draw_each_comparison(flagship, tmp_path):
    campaign = fleetsim.campaign(flagship, {"workload.conversations": 12}, replicates=3)
    fig = plot.campaign_intervals(campaign)
    _renders(fig, tmp_path, "campaign")
    metrics = {c["metric"] for c in campaign["comparisons"]}
    assert len(fig.axes) == len(metrics)
    labels = [t.get_text() for ax in fig.axes for t in ax.texts]
    assert len(labels) == len(campaign["comparisons"])
    assert all(label.split(",")[0] in {"higher", "lower", "equivalent", "inconclusive"}
               for label in labels)
    with pytest.raises(ValueError, match="no defined comparison"):
        plot.campaign_intervals({**campaign, "comparisons": []})
