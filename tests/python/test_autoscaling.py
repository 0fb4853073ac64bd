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
    assert list(frame.columns) == ["t_s", "metric", "recommended", "desired", "ready",
                                   "provisioned"]
    assert frame["t_s"].diff().dropna().eq(15.0).all()
    assert frame["provisioned"].max() == hpa.summary["autoscaling"]["peak_pods"]
    assert frame["provisioned"].max() > 2
    assert frame["provisioned"].iloc[-1] == 2
    static = result.arm("static")
    assert static.autoscaling.empty
    assert static.summary["autoscaling"]["mean_pods"] == 2
    rows = {row["arm"]: row for row in result.summary_rows()}
    assert rows["hpa"]["autoscaling_pod_hours"] > rows["static"]["autoscaling_pod_hours"]
    out = subprocess.run([str(cli), "run", str(scenario), "--format", "json"], check=True,
                         capture_output=True, text=True).stdout
    assert json.loads(out)["arms"][0]["summary"]["autoscaling"] == hpa.summary["autoscaling"]


def test_no_autoscaling_no_timeline(scenario):
    result = fleetsim.run(scenario, overrides={"autoscaling.metric": "none"})
    assert result.arm("hpa").autoscaling is None
    assert "autoscaling" not in result.arm("hpa").summary


def test_bad_setting_is_a_scenario_error(scenario):
    with pytest.raises(fleetsim.ScenarioError, match=r"min_pods 9 is above max_pods 8"):
        fleetsim.run(scenario, overrides={"autoscaling.min_pods": 9})
