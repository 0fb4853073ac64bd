"""fleetsim.validate(): the validation files' figures against the simulation, as the CLI's
`fleetsim validate` gives them, with overrides for every check."""

from __future__ import annotations

import json
import subprocess

import pytest

import fleetsim


@pytest.fixture()
def checks(tmp_path, small_yaml):
    scenario = tmp_path / "small.yaml"
    scenario.write_text(small_yaml)
    path = tmp_path / "checks.yaml"
    path.write_text(
        f"source: a test\nchecks:\n  - scenario: {scenario}\n    figures:\n"
        "      - {arm: rr, metric: ttft_p95_ms, measured: 100, rel: 1000}\n"
        "      - {arm: chwbl, metric: prefix_cache_reuse_pct, measured: 1, abs: 0.5}\n"
    )
    return path


def test_the_figures_are_the_clis(checks, cli):
    r = fleetsim.validate([checks])
    assert r["sources"] == ["a test"]
    assert [f["metric"] for f in r["figures"]] == ["ttft_p95_ms", "prefix_cache_reuse_pct"]
    assert r["figures"][0]["ok"] and not r["figures"][1]["ok"]
    assert not r["all_ok"]
    assert "1 of 2 figures inside their tolerance" in r["report"]
    # The same dict, but for the report, as `fleetsim validate --format json`.
    out = subprocess.run([str(cli), "validate", str(checks), "--format", "json"],
                         capture_output=True, text=True, check=False)
    assert out.returncode == 1
    del r["report"]
    assert json.loads(out.stdout) == r


def test_overrides_reach_every_check(checks):
    plain = fleetsim.validate([checks])["figures"][0]["simulated"]
    slower = fleetsim.validate([checks], {"fleet.cost_model.compute_efficiency": 0.2})
    assert slower["set"] == ["fleet.cost_model.compute_efficiency=0.2"]
    assert slower["figures"][0]["simulated"] > plain
    assert "every check with fleet.cost_model.compute_efficiency=0.2" in slower["report"]


def test_seeds_judge_the_mean(checks):
    r = fleetsim.validate([checks], seeds=2)
    assert r["seeds"] == 2
    assert len(r["figures"][0]["per_seed"]) == 2


def test_bad_input_is_a_python_exception(checks, tmp_path, monkeypatch):
    with pytest.raises(fleetsim.ScenarioError, match="compute_efficiency"):
        fleetsim.validate([checks], {"fleet.cost_model.compute_efficiency": 2})
    with pytest.raises(ValueError, match="seeds"):
        fleetsim.validate([checks], seeds=0)
    with pytest.raises(ValueError, match="empty list"):
        fleetsim.validate([])
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ValueError, match="none in ./validation"):
        fleetsim.validate()
