"""Fuzz tests of the CLI: scenarios edited at random must be refused with a located error or
run, never crash or hang; well-formed scenarios composed at random from every registered
plug-in and every scenario section (pools, P/D, gateway, client retries, SLOs, autoscaling,
faults) must run, give the same bytes at any thread count, and report no negative figure.

Seeded, so a failure names a case that reproduces: the failing YAML is written to the
pytest tmp dir and its path is in the assertion message. FLEETSIM_FUZZ_SEEDS=N runs N seeds of
each test instead of the few CI runs (a wider hunt, by hand)."""

from __future__ import annotations

import copy
import json
import os
import random
import subprocess
from pathlib import Path

import pytest

yaml = pytest.importorskip("yaml")
fleetsim = pytest.importorskip("fleetsim")

# Scenarios that run in well under a second, over most features: P/D, faults, tiers,
# gateway replicas, scale to zero, speculative decoding, sliding-window models.
QUICK = [
    "loxilb-3pod-long", "loxilb-3pod-probe", "epp-outage", "epp-pod-deleted", "hrw-pod-kill",
    "node-loss", "pd-disaggregation", "slow-pod", "spec-decode", "gateway-replicas-failover",
    "scale-to-zero", "gpt-oss-gpus", "shared-prefix-burst",
]
# Replacement values: wrong types, out of range, edge numbers. Nothing that multiplies the work
# (a count of 10^5 is valid input that takes long), which a test cannot tell from a hang.
VALUES = [0, -1, -0.5, 0.5, 1, 2, 1e12, float("nan"), float("inf"), "", "abc", "-5", [], {},
          None, True, [1, 2], {"x": 1}]
CASE_TIMEOUT_S = 120
CRASH_MARKS = ("terminate called", "Assertion", "runtime error", "Sanitizer", "internal error",
               "Traceback", "std::")


def run_cli(cli: Path, path: Path, *extra: str) -> subprocess.CompletedProcess:
    return subprocess.run([str(cli), "run", str(path), "--format", "json", *extra],
                          capture_output=True, text=True, timeout=CASE_TIMEOUT_S)


def leaves(node, path=()):
    yield path
    children = node.items() if isinstance(node, dict) else (
        enumerate(node) if isinstance(node, list) else ())
    for key, value in children:
        yield from leaves(value, path + (key,))


def mutate(doc, rng: random.Random) -> str:
    path = rng.choice([p for p in leaves(doc) if p])
    parent = doc
    for key in path[:-1]:
        parent = parent[key]
    roll = rng.random()
    if roll < 0.15 and isinstance(parent, dict):
        del parent[path[-1]]
        return f"delete {'.'.join(map(str, path))}"
    if roll < 0.22 and isinstance(parent, dict):
        parent["zz_unknown"] = 1
        return f"unknown field beside {'.'.join(map(str, path))}"
    value = rng.choice(VALUES)
    parent[path[-1]] = value
    return f"{'.'.join(map(str, path))} = {value!r}"


def seeds(ci_count: int) -> range:
    return range(int(os.environ.get("FLEETSIM_FUZZ_SEEDS", ci_count)))


@pytest.mark.parametrize("seed", seeds(6))
def test_edited_scenarios_are_refused_with_a_located_error_or_run(cli, source_dir, tmp_path,
                                                                   seed, monkeypatch):
    monkeypatch.chdir(source_dir)  # scenarios name data files from the repository root
    rng = random.Random(seed)
    for i in range(20):
        name = rng.choice(QUICK)
        doc = yaml.safe_load((source_dir / "scenarios" / f"{name}.yaml").read_text())
        edit = mutate(doc, rng)
        case = tmp_path / f"case{i}.yaml"
        case.write_text(yaml.safe_dump(doc, sort_keys=False))
        where = f"{name}.yaml, {edit} ({case})"
        p = run_cli(cli, case, "--threads", "1")
        assert not any(m in p.stderr for m in CRASH_MARKS), f"{where}: {p.stderr[-500:]}"
        assert p.returncode in (0, 2), f"{where}: exit {p.returncode}: {p.stderr[-500:]}"
        if p.returncode == 2:
            # One line, naming the file (and so the line and field) the edit broke.
            assert p.stderr.startswith(f"error: {case}"), f"{where}: {p.stderr[-500:]}"
        else:
            json.loads(p.stdout)


SKIP_PARAMS = {"seed", "file", "python_module", "max_requests", "conversations", "duration_s",
               "rate", "turns", "streams", "concurrency", "sessions", "groups",
               # a replica count is valid up to 64 but multiplies each run's policy instances
               "replicas"}
SMALL_WORKLOAD = {"max_requests": 120, "conversations": 10, "turns": 4, "streams": 6,
                  "concurrency": 6, "duration_s": 30, "rate": 4, "sessions": 6, "groups": 4}
FAULTS = [
    {"kind": "pod_kill", "target": "pod-0", "at_s": 5},
    {"kind": "pod_kill", "target": "pod-0", "at_s": 3, "mode": "black_hole",
     "restart_after_s": 5, "load_time_s": 2},
    {"kind": "pod_delete", "target": "pod-0", "at_s": 3, "recreate_after_s": 2,
     "load_time_s": 3},
    {"kind": "slow_pod", "target": "pod-0", "at_s": 2, "factor": 5, "duration_s": 5},
    {"kind": "picker_outage", "at_s": 2, "duration_s": 5},
    {"kind": "network_delay", "target": "pod-0", "at_s": 2, "duration_s": 3, "extra_ms": 200},
]


def random_value(rng: random.Random, d: dict):
    if d["choices"]:
        return rng.choice(d["choices"])
    if d["type"] == "bool":
        return rng.random() < 0.5
    if d["type"] not in ("int", "float"):
        return None
    lo, hi, default = d["min"], d["max"], d["default"]
    base = default if isinstance(default, (int, float)) and default else (
        lo if lo is not None and lo > 0 else 1)
    value = rng.choice([base, base * 2, base * 0.5, base * 4] + ([lo] if lo is not None else []))
    value = max(value, lo) if lo is not None else value
    value = min(value, hi) if hi is not None else value
    return int(round(value)) if d["type"] == "int" else float(value)


def random_params(rng: random.Random, spec: list, most: int) -> dict:
    defs = [d for d in spec if d["name"] not in SKIP_PARAMS]
    chosen = rng.sample(defs, min(rng.randint(0, most), len(defs)))
    return {d["name"]: v for d in chosen if (v := random_value(rng, d)) is not None}


def composed_scenario(rng: random.Random, name: str) -> dict:
    workloads = {w["name"]: w for w in fleetsim.workloads() if w["name"] in (
        "multi_turn_chat", "open_loop", "shared_prefix", "prefix_burst", "concurrency_streams",
        "agent_sessions")}
    kind = rng.choice(sorted(workloads))
    spec = workloads[kind]["params"]
    workload = {"type": kind, **random_params(rng, spec, 3)}
    workload.update({k: v for k, v in SMALL_WORKLOAD.items()
                     if any(d["name"] == k for d in spec)})
    policies = [p for p in fleetsim.policies() if not p["python"]]
    arms = []
    for j, p in enumerate(rng.sample(policies, rng.randint(1, 3))):
        arm = {"name": f"a{j}", "policy": p["name"]}
        if params := random_params(rng, p["params"], 3):
            arm["params"] = params
        arms.append(arm)
    doc = {
        "name": name, "seed": rng.randint(0, 1000),
        "fleet": {"pods": rng.randint(1, 4),
                  "gpu": rng.choice(["A100-80GB-PCIe", "H100-SXM", "H200", "L40S"]),
                  "model": rng.choice(["Llama-3.1-8B", "Qwen2.5-7B-Instruct", "gpt-oss-20b",
                                       "Qwen3-32B-FP8"]),
                  "server": random_params(rng, fleetsim.server_params(), 4)},
        "workload": workload,
        "arms": arms,
    }
    if rng.random() < 0.4:
        doc["faults"] = [copy.deepcopy(rng.choice(FAULTS))]
    if rng.random() < 0.25:  # two pods a GPU, shared one of the three ways
        colocate(rng, doc["fleet"])
    return doc


def colocate(rng: random.Random, fleet: dict) -> None:
    sharing = rng.choice(["time_slicing", "mps", "mig"])
    fleet.update({"pods_per_gpu": 2, "gpu_sharing": sharing})
    if sharing == "mig":
        fleet["gpu"] = rng.choice(["A100-80GB-PCIe", "H100-SXM", "RTX-PRO-6000"])
    else:
        fleet["server"]["gpu_memory_utilization"] = 0.45
    if sharing == "mps" and rng.random() < 0.5:
        fleet["mps_active_thread_percentage"] = rng.choice([30, 100])


def pools(rng: random.Random, fleet: dict) -> list[dict]:
    """Two pools: prefill and decode (P/D), or two tiers of whole-request pods."""
    if rng.random() < 0.5:
        roles = [("prefill", "prefill"), ("decode", "decode")]
    else:
        roles = [("small", "both"), ("big", "both")]
    out = []
    for name, role in roles:
        pool = {"name": name, "pods": rng.randint(1, 2), "role": role}
        if rng.random() < 0.3:
            pool["gpu"] = rng.choice(["H100-SXM", "H200", "L40S"])
        out.append(pool)
    del fleet["pods"]
    return out


def rich_scenario(rng: random.Random, name: str) -> dict:
    """composed_scenario() with every other section drawn too."""
    doc = composed_scenario(rng, name)
    if rng.random() < 0.4:
        doc["fleet"]["pools"] = pools(rng, doc["fleet"])
        doc.pop("faults", None)  # faults name pods (pod-0), which pools rename
    for section in ("gateway", "client", "slo"):
        if rng.random() < 0.6:
            doc[section] = random_params(rng, fleetsim.section_params(section), 4)
    if "slo" in doc:
        doc["slo"].setdefault(rng.choice(["ttft_ms", "tpot_ms", "e2e_ms"]), 2000)
    if rng.random() < 0.4:
        scaling = random_params(rng, fleetsim.section_params("autoscaling"), 5)
        scaling.setdefault("metric", rng.choice(["running", "waiting", "request_rate"]))
        if rng.random() < 0.3:  # KEDA's cron scaler, alone or beside the metric
            scaling["schedule"] = (f"0:{rng.randint(0, 2)}, {rng.randint(5, 30)}:"
                                   f"{rng.randint(1, 3)}")
        if "pools" in doc["fleet"]:
            scaling["pool"] = rng.choice(doc["fleet"]["pools"])["name"]
        doc["autoscaling"] = scaling
    if rng.random() < 0.3:
        doc["gateway"] = {**doc.get("gateway", {}), "replicas": rng.randint(2, 3)}
    return doc


def negative_figures(result: dict) -> list[str]:
    out = []
    for arm in result["arms"]:
        for key, value in arm["summary"].items():
            if isinstance(value, (int, float)) and not isinstance(value, bool) and (
                    value != value or value < 0):
                out.append(f"{arm['name']}.{key} = {value}")
    return out


@pytest.mark.parametrize("compose, seed", [(compose, seed) for compose in ("plain", "rich")
                                           for seed in seeds(2 if compose == "rich" else 4)])
def test_composed_scenarios_run_deterministically_at_any_thread_count(cli, tmp_path, compose,
                                                                      seed):
    rng = random.Random((1000 if compose == "plain" else 2000) + seed)
    make = composed_scenario if compose == "plain" else rich_scenario
    ran = 0
    for i in range(12):
        case = tmp_path / f"composed{i}.yaml"
        case.write_text(yaml.safe_dump(make(rng, f"composed-{seed}-{i}"), sort_keys=False))
        one = run_cli(cli, case, "--threads", "1")
        assert not any(m in one.stderr for m in CRASH_MARKS), f"{case}: {one.stderr[-500:]}"
        # A combination vLLM refuses (the model does not fit, speculation without a method) is
        # a located error, as any bad input.
        assert one.returncode in (0, 2), f"{case}: exit {one.returncode}: {one.stderr[-500:]}"
        if one.returncode == 2:
            assert one.stderr.startswith(f"error: {case}"), f"{case}: {one.stderr[-500:]}"
            continue
        ran += 1
        many = run_cli(cli, case, "--threads", "0")
        assert many.stdout == one.stdout, f"{case}: output differs with --threads 0"
        assert negative_figures(json.loads(one.stdout)) == [], case
    assert ran >= 6, "most composed scenarios should run"
