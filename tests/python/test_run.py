"""fleetsim.load / fleetsim.run: the same results as the CLI, in every shape Python reads them."""

from __future__ import annotations

import json
import subprocess
import threading
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import fleetsim


def test_cli_and_python_give_identical_json(cli, flagship, source_dir):
    out = subprocess.run(
        [str(cli), "run", str(flagship), "--format", "json"],
        cwd=source_dir, check=True, capture_output=True, text=True,
    ).stdout
    result = fleetsim.run(flagship)
    assert result.json == out  # byte for byte
    assert result.summary == json.loads(out)


SCENARIOS = sorted((Path(__file__).resolve().parents[2] / "scenarios").glob("*.yaml"))


@pytest.mark.parametrize("scenario", SCENARIOS, ids=lambda p: p.stem)
def test_every_scenario_gives_its_golden_result_through_python(scenario, source_dir, monkeypatch):
    # The CLI prints the same file (tests/golden_scenario.cmake), so the two agree on every
    # shipped scenario, wherever they run from (paths resolve against the scenario's folder).
    monkeypatch.chdir("/")
    golden = source_dir / "tests" / "golden" / f"{scenario.stem}.json"
    assert fleetsim.run(source_dir / "scenarios" / scenario.name).json == golden.read_text()


def test_a_hazard_is_a_python_warning_and_in_the_arm(source_dir):
    with pytest.warns(UserWarning, match="arm 'epp': pod-2 failed fast after its pod_kill"):
        result = fleetsim.run(source_dir / "scenarios" / "outlier-ejection.yaml")
    assert "refuses connections as idle" in result.arm("epp").warnings[0]
    assert result.arm("epp-ejection").warnings == []


def test_cli_and_python_agree_with_overrides(cli, flagship, source_dir):
    sets = {"fleet.pods": 4, "arms.epp.params.tie_break": "rotation", "seed": 3}
    args = [a for k, v in sets.items() for a in ("--set", f"{k}={v}")]
    out = subprocess.run(
        [str(cli), "run", str(flagship), "--format", "json", *args],
        cwd=source_dir, check=True, capture_output=True, text=True,
    ).stdout
    assert fleetsim.run(flagship, overrides=sets).json == out


def test_summary_names_come_from_the_json_schema(flagship):
    result = fleetsim.run(flagship)
    summary = result.summary
    assert set(summary) == {"scenario", "seed", "fleet", "arms"}
    arm = summary["arms"][0]
    assert arm["summary"] == result.arms[0].summary
    for key in ("requests", "completed", "failed", "unfinished", "prefix_cache_reuse", "ttft_ms",
                "warm_ttft_ms", "e2e_ms", "tpot_ms", "throughput_req_s", "per_pod"):
        assert key in arm["summary"]
    assert result.arms[0].measured == arm["measured"]
    rows = result.summary_rows()
    assert [r["arm"] for r in rows] == ["epp", "chwbl", "rr"]
    assert rows[0]["ttft_ms_p50"] == arm["summary"]["ttft_ms"]["p50"]


def test_requests_frame_matches_the_summary(flagship):
    result = fleetsim.run(flagship)
    df = result.requests
    assert isinstance(df, pd.DataFrame)
    assert list(df["arm"].cat.categories) == ["epp", "chwbl", "rr"]
    assert df["status"].dtype.name == "category"
    assert df["id"].dtype == np.int64 and df["arrival_ms"].dtype == np.float64
    for arm in result.arms:
        rows = df[(df["arm"] == arm.name) & df["measured"]]
        s = arm.summary
        assert len(rows) == s["requests"] == len(arm.requests) == len(rows[rows["attempts"] == 1])
        assert (rows["status"] == "ok").sum() == s["completed"]
        ok = rows[rows["status"] == "ok"]
        for col, key in (("ttft_ms", "ttft_ms"), ("e2e_ms", "e2e_ms"), ("tpot_ms", "tpot_ms")):
            values = ok[col].dropna().to_numpy()
            for q in (50, 95, 99):
                assert np.percentile(values, q) == pytest.approx(s[key][f"p{q}"], abs=1e-5)
        warm = ok[ok["turn"] >= 2]["ttft_ms"].to_numpy()
        assert np.percentile(warm, 50) == pytest.approx(s["warm_ttft_ms"]["p50"], abs=1e-5)
        per_pod = rows.groupby("pod").size()
        assert [int(per_pod.get(i, 0)) for i in range(3)] == [p["requests"] for p in s["per_pod"]]
        cols = result.request_columns()
        assert isinstance(cols["ttft_ms"], np.ndarray)


def test_every_way_of_loading_gives_the_same_scenario(flagship, small_yaml):
    import yaml

    from_file = fleetsim.load(flagship)
    from_str_path = fleetsim.load(str(flagship))
    from_text = fleetsim.load(flagship.read_text())
    from_dict = fleetsim.load(yaml.safe_load(flagship.read_text()))
    expected = fleetsim.run(from_file).json
    for s in (from_str_path, from_text, from_dict):
        assert fleetsim.run(s).json == expected
    assert from_file.label == str(flagship) and from_text.label == "<yaml>"
    assert from_dict.label == "<dict>"
    small = fleetsim.load(small_yaml)
    assert small.pods == 3 and small.gpu == "L40S" and [a["name"] for a in small.arms] == ["rr", "chwbl"]


def test_overrides_have_set_semantics(small_yaml):
    base = fleetsim.load(small_yaml)
    s = base.with_overrides({"fleet.pods": 2, "arms.chwbl.params.balance_factor": 1.5,
                             "workload.question_tokens": {"dist": "constant", "value": 50},
                             "fleet.server.enable_prefix_caching": False})
    assert s.pods == 2
    assert s.arms[1]["params"]["balance_factor"] == 1.5
    assert s.server["enable_prefix_caching"] is False
    assert s.overrides[0] == "fleet.pods=2"
    assert base.pods == 3  # immutable
    # A scenario rebuilt from its YAML text, label and overrides is the same scenario.
    again = fleetsim.Scenario.from_yaml(s.yaml, s.label, s.overrides)
    assert fleetsim.run(again).json == fleetsim.run(s).json


def test_a_scenario_pickles_as_its_yaml_and_overrides(small_yaml):
    import pickle

    s = fleetsim.load(small_yaml, {"fleet.pods": 2})
    again = pickle.loads(pickle.dumps(s))
    assert (again.yaml, again.label, again.overrides) == (s.yaml, s.label, s.overrides)
    assert fleetsim.run(again).json == fleetsim.run(s).json


def test_results_do_not_depend_on_threads(flagship):
    assert fleetsim.run(flagship, threads=1).json == fleetsim.run(flagship, threads=0).json


def test_unfinished_requests_when_the_horizon_cuts_the_run(small_yaml):
    result = fleetsim.run(small_yaml, overrides={"sim.horizon_s": 2})
    statuses = set(result.requests["status"].unique())
    assert "unfinished" in statuses
    unfinished = result.requests[result.requests["status"] == "unfinished"]
    assert unfinished["finished_ms"].isna().all()


def test_the_gil_is_released_while_a_run_runs(flagship):
    # Had the run held the GIL, this thread could not run a line between the run's start and its
    # end: it would see the run done at its first look after the start. Counting looks, not
    # seconds, keeps a busy machine from failing the test.
    scenario = fleetsim.load(flagship, {"workload.conversations": 2000})
    started, done = threading.Event(), threading.Event()

    def run():
        started.set()
        fleetsim.run(scenario, threads=1)
        done.set()

    thread = threading.Thread(target=run)
    thread.start()
    started.wait()
    looks_while_running = 0
    while not done.is_set() and looks_while_running < 20:
        looks_while_running += 1
        time.sleep(0.001)
    thread.join()
    assert looks_while_running == 20


def test_catalog(flagship):
    assert {"epp", "chwbl", "round_robin"} <= {p["name"] for p in fleetsim.policies()}
    assert "multi_turn_chat" in {w["name"] for w in fleetsim.workloads()}
    gpus = {g["name"]: g for g in fleetsim.gpus()}
    assert gpus["A100-80GB-PCIe"]["mig_slices"] == 7
    assert gpus["L40S"]["mig_slices"] == 0
    models = {m["name"]: m for m in fleetsim.models()}
    assert "Qwen3-32B-FP8" in models
    assert models["Qwen3-32B"]["num_experts"] == 0
    moe = models["Qwen3-30B-A3B"]
    assert (moe["num_experts"], moe["experts_per_token"]) == (128, 8)
    assert moe["active_params_b"] == pytest.approx(3.3, abs=0.05)  # the model card's figure
    ds, oss = models["DeepSeek-V3"], models["gpt-oss-120b"]
    assert (ds["kv_lora_rank"], ds["dense_layers"], ds["shared_expert_intermediate_size"]) == (
        512, 3, 2048)
    assert (oss["sliding_window"], oss["sliding_window_layers"]) == (128, 18)
    assert (oss["weight_dtype"], oss["quantized"]) == ("mxfp4", "experts")
    assert (models["Qwen3-32B"]["max_position_embeddings"], oss["max_position_embeddings"]) == (
        40960, 131072)
    assert (models["Qwen3-32B"]["qk_norm"], oss["qk_norm"]) == (True, False)
    assert "affinity_threshold" in fleetsim.describe("epp")
    assert "gpu_memory_utilization" in {p["name"] for p in fleetsim.server_params()}
    assert fleetsim.cost_model_params()
    assert fleetsim.__version__
    gateway = {p["name"] for p in fleetsim.section_params("gateway")}
    assert {"request_timeout_s", "replicas", "hold_for_endpoints_s"} <= gateway
    assert "gateway: the gateway" in fleetsim.describe("gateway")
    retry = next(p for p in fleetsim.section_params("client") if p["name"] == "retry")
    assert (retry["default"], retry["choices"]) == ("none", ["none", "fixed", "exponential"])
    assert fleetsim.section_params("server") == fleetsim.server_params()
    assert "mode" in {p["name"] for p in fleetsim.section_params("pod_kill")}
    with pytest.raises(fleetsim.UnknownNameError, match="valid sections: server, cost_model, "):
        fleetsim.section_params("epp")
    text = fleetsim.run(flagship).table()
    assert text.startswith("scenario loxilb-3pod-long") and "(93.3)" in text


def test_goodput_of_the_summary_equals_the_one_from_the_requests(flagship):
    sets = {"slo.ttft_ms": 300, "slo.tpot_ms": 50}
    result = fleetsim.run(flagship, overrides=sets)
    assert result.summary["slo"]["ttft_ms"] == 300
    mine = fleetsim.goodput(result.requests, ttft_slo_ms=300, tpot_slo_ms=50).set_index("arm")
    for arm in result.arms:
        g = arm.summary["goodput"]
        assert 0 < g["good"] < g["requests"]  # the targets bind
        assert g["good"] == mine.loc[arm.name, "good"]
        assert g["requests"] == mine.loc[arm.name, "requests"]
        assert g["goodput_req_s"] == pytest.approx(mine.loc[arm.name, "goodput_req_s"], rel=1e-6)
        assert g["per_class"] == []


def test_max_model_len_answers_longer_requests_400_and_can_stop_a_pod_starting(small_yaml):
    # Prompts of 300-900 tokens growing by up to 260 a turn, answers of 5-60: some pass 1,200.
    result = fleetsim.run(fleetsim.load(small_yaml, overrides={"fleet.server.max_model_len": 1200}))
    df = result.requests
    ok, refused = df[df["status"] == "ok"], df[df["status"] == "http_400"]
    assert len(ok) and len(refused) and len(ok) + len(refused) == len(df)
    assert (ok["prompt_tokens"] + ok["output_tokens"] <= 1200).all()
    assert (refused["prompt_tokens"] + 60 > 1200).all()
    assert (refused["attempts"] == 1).all() and refused["ttft_ms"].isna().all()
    with pytest.raises(fleetsim.DeploymentError, match=r"vLLM would not start: one request of "
                       r"max_model_len 40960 tokens needs 10\.00 GiB"):
        fleetsim.run(fleetsim.load(small_yaml, overrides={"fleet.model": "Qwen3-32B-FP8"}))


def test_prefill_decode_disaggregation_from_python(source_dir):
    scenario = fleetsim.load(source_dir / "scenarios" / "pd-disaggregation.yaml",
                             overrides={"workload.max_requests": 40})
    result = fleetsim.run(scenario)
    pd, agg = result.arms
    assert pd.summary["gateway_counters"]["prefill_legs"] == 40
    assert "prefill_legs" not in agg.summary["gateway_counters"]
    df = result.requests
    assert (df[df["arm"] == "pd"]["pod"] == 4).all()  # the decode pod serves every request
    assert df[df["arm"] == "pd"]["prefill_pod"].between(0, 3).all()
    assert (df[df["arm"] == "agg"]["prefill_pod"] == -1).all()
    prefill = next(p for p in pd.summary["per_pool"] if p["pool"] == "prefill")
    assert prefill["requests"] == 40  # the requests whose prompts the pool computed


def test_a_timeline_from_python_is_the_trace_the_cli_writes(cli, small_yaml, tmp_path):
    result = fleetsim.run(small_yaml, timeline=True, timeline_window=(0, 5))
    trace = json.loads(result.timeline_json())
    steps = [e for e in trace["traceEvents"] if e["ph"] == "X"]
    assert steps and all(e["ts"] <= 5e6 for e in steps)
    scenario = tmp_path / "small.yaml"
    scenario.write_text(small_yaml)
    written = tmp_path / "tl.json"
    subprocess.run([cli, "run", str(scenario), "--timeline", str(written),
                    "--timeline-window", "0:5"], check=True, capture_output=True)
    assert written.read_text() == result.timeline_json()


def test_a_timeline_needs_asking_for_and_a_window_that_makes_sense(small_yaml):
    with pytest.raises(ValueError, match="recorded no timeline"):
        fleetsim.run(small_yaml).timeline_json()
    with pytest.raises(ValueError, match=r"timeline_window: expected \(from_s, to_s\)"):
        fleetsim.run(small_yaml, timeline=True, timeline_window=(5, 1))
