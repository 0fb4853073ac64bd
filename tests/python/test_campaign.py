"""fleetsim.campaign and fleetsim.plan: the CLI's `fleetsim campaign` and `fleetsim plan` from
Python, the same figures either way."""

from __future__ import annotations

import json
import subprocess

import pytest

import fleetsim


@pytest.fixture()
def small_file(tmp_path, small_yaml):
    path = tmp_path / "small.yaml"
    path.write_text(small_yaml + "campaign: {replicates: 3, ramp_steps: 4}\n")
    return path


def test_campaign_matches_the_cli(small_file, cli):
    r = fleetsim.campaign(small_file, threads=2)
    assert r["seeds"] == [7, 8, 9]
    assert r["baseline"] == "rr"
    assert [a["arm"] for a in r["arms"]] == ["rr", "chwbl"]
    reuse = r["arms"][1]["metrics"]["prefix_cache_reuse_pct"]
    assert len(reuse["values"]) == 3
    assert reuse["ci"][0] <= reuse["mean"] <= reuse["ci"][1]
    assert r["verdict"] in {"PUBLISHABLE", "ADD_REPLICATES", "UNSTABLE", "INVALID"}
    # Three replicates are fewer than the stability gate's five.
    assert r["verdict"] == "ADD_REPLICATES"
    assert "verdict: ADD_REPLICATES" in r["report"]
    out = subprocess.run([str(cli), "campaign", str(small_file), "--format", "json"],
                         check=True, capture_output=True, text=True).stdout
    from_cli = json.loads(out)
    r.pop("report")
    assert from_cli == r


def test_overrides_and_errors(small_file):
    r = fleetsim.campaign(small_file, {"fleet.pods": 2}, replicates=2)
    assert r["health"]["pods"] == 2
    assert len(r["seeds"]) == 2
    with pytest.raises(fleetsim.ScenarioError, match="campaign.metrics: unknown metric 'speed'"):
        fleetsim.campaign(small_file, {"campaign.metrics": "speed"})
    with pytest.raises(ValueError, match="at least 2"):
        fleetsim.campaign(small_file, replicates=1)


def test_plan_matches_the_cli(tmp_path, small_yaml, small_file, cli):
    path = tmp_path / "planned.yaml"
    path.write_text(small_yaml + "slo: {ttft_ms: 300}\n")
    r = fleetsim.plan(path, {"workload.concurrency": 24}, max_pods=16)
    assert [a["arm"] for a in r["arms"]] == ["rr", "chwbl"]
    for arm in r["arms"]:
        needed = arm["pods_needed"]
        assert needed is not None
        at = {p["pods"]: p["slo_attainment_pct"] for p in arm["evaluated"]}
        assert at[needed] >= 90
        assert needed == 1 or at.get(needed - 1, 0) < 90
    out = subprocess.run([str(cli), "plan", str(path), "--set", "workload.concurrency=24",
                          "--max-pods", "16", "--format", "json"],
                         check=True, capture_output=True, text=True).stdout
    r.pop("report")
    assert json.loads(out) == r
    with pytest.raises(fleetsim.ScenarioError, match="the plan needs an slo section"):
        fleetsim.plan(small_file)


def test_pair_plan_matches_the_cli(source_dir, cli):
    path = source_dir / "scenarios" / "pd-disaggregation.yaml"
    sets = {"slo": "{ttft_ms: 3000, tpot_ms: 50}", "workload.max_requests": 120}
    pools = ["fleet.pools.prefill.pods", "fleet.pools.decode.pods"]
    r = fleetsim.plan(path, sets, max_pods=4, pods_path=pools)
    assert r["paths"] == pools
    for arm in r["arms"]:
        cheapest = arm["cheapest"]
        assert cheapest is not None
        met = [p for p in arm["evaluated"] if p["slo_attainment_pct"] >= 90]
        assert min(p["gpus"] for p in met) == cheapest["gpus"]
        assert cheapest["pods"] in [f["pods"] for f in arm["frontier"]]
    args = [str(cli), "plan", str(path), "--max-pods", "4", "--format", "json"]
    for k, v in sets.items():
        args += ["--set", f"{k}={v}"]
    for p in pools:
        args += ["--path", p]
    out = subprocess.run(args, check=True, capture_output=True, text=True).stdout
    r.pop("report")
    assert json.loads(out) == r
    with pytest.raises(ValueError, match="a list of two pools' paths"):
        fleetsim.plan(path, sets, pods_path=pools[:1])


def test_window_plan_matches_the_cli(source_dir, cli):
    path = source_dir / "scenarios" / "scale-to-zero.yaml"
    sets = {"arms": "[{name: lo, policy: least_outstanding}]"}
    r = fleetsim.plan(path, sets, max_pods=4, window_s=600)
    (arm,) = r["arms"]
    # The pause's windows want no pod, and the schedule wakes the pool before traffic returns.
    assert [w["pods_needed"] for w in arm["windows"]] == [1, 1, 0, 0, 0, 0, 1, 1]
    assert arm["schedule"] == "0:1, 1200:0, 3435:1"
    assert arm["check"]["slo_attainment_pct"] == 100.0
    assert arm["check"]["pod_hours"] < arm["check"]["static_peak_pod_hours"]
    args = [str(cli), "plan", str(path), "--max-pods", "4", "--window", "600", "--format", "json",
            "--set", f"arms={sets['arms']}"]
    out = subprocess.run(args, check=True, capture_output=True, text=True).stdout
    assert r.pop("report").startswith("plan scale-to-zero: fewest fleet.pods per 600 s window")
    assert json.loads(out) == r
    with pytest.raises(ValueError, match="window_s plans one pod count"):
        fleetsim.plan(path, sets, window_s=600, pods_path=["fleet.pods", "fleet.pods"])
    with pytest.raises(fleetsim.ScenarioError, match="--window: expected seconds"):
        fleetsim.plan(path, sets, window_s=-5)


def test_a_percentile_target_reaches_python_and_a_class_cannot_hold_one(tmp_path, small_yaml):
    path = tmp_path / "p95.yaml"
    path.write_text(small_yaml + "slo: {p95_ttft_ms: 100000, p50_tpot_ms: 0.001}\n")
    goodput = fleetsim.run(path).arms[0].summary["goodput"]
    assert [(t["metric"], t["met"]) for t in goodput["percentile_targets"]] == [
        ("p95_ttft_ms", True), ("p50_tpot_ms", False)]
    assert goodput["percentile_targets_met"] is False
    path.write_text(small_yaml + "slo: {classes: {chat: {p95_ttft_ms: 300}}}\n")
    with pytest.raises(fleetsim.ScenarioError, match="set it at the top of the slo section"):
        fleetsim.run(path)
