"""Autoscaled arms from Python: the HPA's timeline as a DataFrame, its totals in the summary and
the summary rows, the same figures as the CLI's JSON, and a bad setting as a Python exception."""

from __future__ import annotations

import json
import subprocess

import pytest

import fleetsim

YAML = """\
name: hpa
seed: 3
fleet: {pods: 2, gpu: H100-SXM, model: Llama-3.1-8B}
workload:
  type: open_loop
  rate_schedule: "0:4, 100:4, 101:30, 400:30, 401:4"
  duration_s: 700
  max_requests: 0
  prompt_tokens: {dist: uniform, low: 500, high: 3000}
  output_tokens: {dist: uniform, low: 100, high: 400}
autoscaling: {metric: request_rate, target: 6, min_pods: 2, max_pods: 8, load_time_s: 30,
              scale_down_stabilization_s: 60}
arms:
  - {name: hpa, policy: least_outstanding}
  - {name: static, policy: least_outstanding, autoscaling: {metric: none}}
"""


@pytest.fixture()
def scenario(tmp_path):
    path = tmp_path / "hpa.yaml"
    path.write_text(YAML)
    return path


def test_timeline_and_totals(scenario, cli):
    result = fleetsim.run(scenario)
    hpa = result.arm("hpa")
    frame = hpa.autoscaling
    assert list(frame.columns) == ["pool", "t_s", "metric", "recommended", "desired", "ready",
                                   "provisioned"]
    assert set(frame["pool"]) == {"default"}
    assert frame["t_s"].diff().dropna().eq(15.0).all()
    assert frame["provisioned"].max() == hpa.summary["autoscaling"]["peak_pods"]
    assert hpa.summary["autoscaling"]["pools"][0]["metric"] == "request_rate"
    assert frame["provisioned"].max() > 2
    assert frame["provisioned"].iloc[-1] == 2
    static = result.arm("static")
    assert static.autoscaling.empty
    assert static.summary["autoscaling"]["mean_pods"] == 2
    rows = {row["arm"]: row for row in result.summary_rows()}
    assert rows["hpa"]["autoscaling_pod_hours"] > rows["static"]["autoscaling_pod_hours"]
    assert rows["hpa"]["autoscaling_gpu_hours"] == rows["hpa"]["autoscaling_pod_hours"]
    out = subprocess.run([str(cli), "run", str(scenario), "--format", "json"], check=True,
                         capture_output=True, text=True).stdout
    assert json.loads(out)["arms"][0]["summary"]["autoscaling"] == hpa.summary["autoscaling"]


def test_no_autoscaling_no_timeline(scenario):
    result = fleetsim.run(scenario, overrides={"autoscaling.metric": "none"})
    assert result.arm("hpa").autoscaling is None
    assert "autoscaling" not in result.arm("hpa").summary


def test_a_schedule_alone_or_beside_the_metric(scenario):
    over = {"autoscaling.schedule": "0:2, 150:6, 450:3"}
    # Alone (metric none): the pods follow the steps, down once the stabilization window (60 s)
    # holds only the lower step's recommendations.
    result = fleetsim.run(scenario, overrides={**over, "autoscaling.metric": "none"})
    arm = result.arm("hpa")
    frame = arm.autoscaling
    desired = frame.set_index("t_s")["desired"]
    assert (desired[desired.index < 150] == 2).all()
    assert (desired[(desired.index >= 150) & (desired.index < 495)] == 6).all()
    assert (desired[desired.index >= 495] == 3).all()
    assert frame["metric"].isna().all()
    assert arm.summary["autoscaling"]["pools"][0]["schedule"] == "0:2, 150:6, 450:3"
    # The static arm overrides metric only; the schedule still scales it.
    assert result.arm("static").autoscaling["desired"].max() == 6
    # Beside the metric: never below the schedule, above it when the load asks.
    both = fleetsim.run(scenario, overrides=over).arm("hpa").autoscaling.set_index("t_s")
    floor = [2 if t < 150 else 6 if t < 450 else 3 for t in both.index]
    assert (both["desired"] >= floor).all()
    assert (both["desired"] > floor).any()


def test_bad_setting_is_a_scenario_error(scenario):
    with pytest.raises(fleetsim.ScenarioError, match=r"min_pods 9 is above max_pods 8"):
        fleetsim.run(scenario, overrides={"autoscaling.min_pods": 9})
    with pytest.raises(fleetsim.ScenarioError,
                       match=r"hpa.yaml:\d+: autoscaling.schedule: the pods of '60:9' are outside"):
        fleetsim.run(scenario, overrides={"autoscaling.schedule": "0:2, 60:9"})


PD_YAML = """\
name: pd-hpa
seed: 9
fleet:
  gpu: H100-SXM
  model: Llama-3.1-8B
  pools:
    - {name: prefill, role: prefill, pods: 1}
    - {name: decode, role: decode, pods: 1}
workload:
  type: open_loop
  rate_schedule: "0:2, 100:2, 101:12, 400:12, 401:2"
  duration_s: 600
  max_requests: 0
  prompt_tokens: {dist: uniform, low: 3000, high: 6000}
  output_tokens: {dist: uniform, low: 100, high: 300}
autoscaling:
  load_time_s: 30
  prestop_s: 5
  scale_down_stabilization_s: 60
  pools:
    prefill: {metric: request_rate, target: 3, min_pods: 1, max_pods: 4}
    decode: {metric: running, target: 16, min_pods: 1, max_pods: 4}
arms:
  - {name: both, policy: least_outstanding}
"""


def test_one_hpa_per_pool(tmp_path):
    path = tmp_path / "pd.yaml"
    path.write_text(PD_YAML)
    arm = fleetsim.run(path).arm("both")
    frame = arm.autoscaling
    assert list(frame["pool"].unique()) == ["prefill", "decode"]
    pools = {p["pool"]: p for p in arm.summary["autoscaling"]["pools"]}
    for name, part in frame.groupby("pool"):
        assert part["provisioned"].max() == pools[name]["peak_pods"]
        assert pools[name]["pods_added"] > 0
    assert arm.summary["autoscaling"]["pod_hours"] == pytest.approx(
        sum(p["pod_hours"] for p in pools.values()), abs=2e-3)
    with pytest.raises(fleetsim.ScenarioError, match=r"no pool named 'nope'"):
        fleetsim.run(path, overrides={"autoscaling.pools.nope.metric": "waiting"})
