"""fleetsim.calibrate: the CLI's `fleetsim calibrate` from Python, and a scenario using its file."""

from __future__ import annotations

import pytest

import fleetsim

EXAMPLES = "examples/calibration"


def test_roofline_recovers_the_example_constants(source_dir, tmp_path):
    csv = source_dir / EXAMPLES / "a100-llama-3.1-8b-steps.csv"
    out = tmp_path / "cal" / "roofline.yaml"
    r = fleetsim.calibrate(csv, "roofline", gpu="A100-80GB-SXM", model="Llama-3.1-8B", out=out)
    assert r["form"] == "roofline"
    assert r["cost_model"]["type"] == "roofline"
    # The example was made with efficiencies 0.6 / 0.7 and a 2 ms overhead, plus 2% noise.
    assert r["params"]["compute_efficiency"]["value"] == pytest.approx(0.6, rel=0.02)
    assert r["params"]["bandwidth_efficiency"]["value"] == pytest.approx(0.7, rel=0.02)
    assert r["params"]["step_overhead_ms"]["value"] == pytest.approx(2.0, abs=0.3)
    assert r["quality"][0]["label"] == "all"
    assert r["quality"][0]["rows"] == 150
    assert out.read_text() == r["yaml"]
    assert "compute_efficiency" in r["table"]

    # A scenario referencing the file takes its values.
    scenario = fleetsim.load(source_dir / EXAMPLES / "scenario.yaml",
                             overrides={"fleet.cost_model.calibration": str(out)})
    assert scenario.cost_model["compute_efficiency"] == pytest.approx(
        r["params"]["compute_efficiency"]["value"], rel=1e-5)
    # The roofline's shape is held, and written into the file so a scenario runs with it.
    assert r["cost_model"]["unoverlapped_fraction"] == pytest.approx(0.62)
    assert scenario.cost_model["kernel_floor_us"] == pytest.approx(4.2)


def test_the_roofline_shape_is_held_as_given(source_dir):
    csv = source_dir / EXAMPLES / "a100-llama-3.1-8b-steps.csv"
    plain = fleetsim.calibrate(csv, "roofline", gpu="A100-80GB-SXM", model="Llama-3.1-8B",
                               unoverlapped_fraction=0.0, kernel_floor_us=0.0,
                               moe_routing_us=0.0, expert_parallel=True)
    assert plain["cost_model"]["unoverlapped_fraction"] == 0.0
    assert plain["target"]["kernel_floor_us"] == 0.0
    # A dense model has no routing kernels: recorded as given, not written as a setting.
    assert plain["target"]["moe_routing_us"] == 0.0
    assert plain["target"]["expert_parallel"] is True  # recorded; a dense model has no experts
    assert "moe_routing_us" not in plain["cost_model"]
    # The example was generated with the default shape: a plain max() fits it worse.
    shaped = fleetsim.calibrate(csv, "roofline", gpu="A100-80GB-SXM", model="Llama-3.1-8B")
    assert plain["quality"][0]["rmse_ms"] > shaped["quality"][0]["rmse_ms"]


def test_fitted_form_and_fixed_parameters(source_dir):
    csv = source_dir / EXAMPLES / "a100-llama-3.1-8b-requests.csv"
    with pytest.raises(fleetsim.Error, match="decode_c_ms_per_seq cannot be told apart"):
        fleetsim.calibrate(csv, "fitted")
    r = fleetsim.calibrate(csv, "fitted", fix={"decode_c_ms_per_seq": 0.0})
    assert r["layout"] == "requests"
    assert r["params"]["decode_c_ms_per_seq"] == {
        "value": 0.0, "std_error": 0.0, "fixed": True, "unit": "ms/request"}
    assert r["params"]["decode_a_ms"]["value"] > 0


def test_errors_map_to_their_python_classes(source_dir, tmp_path):
    bad = tmp_path / "bad.csv"
    bad.write_text("step_ms,batch\n12,1:30\nslow,1:40\n")
    with pytest.raises(fleetsim.TraceError, match=r"bad.csv:3: column 'step_ms'"):
        fleetsim.calibrate(bad, "fitted")
    csv = source_dir / EXAMPLES / "a100-llama-3.1-8b-steps.csv"
    with pytest.raises(fleetsim.UnknownNameError, match="valid GPUs"):
        fleetsim.calibrate(csv, "roofline", gpu="B300", model="Llama-3.1-8B")
    with pytest.raises(fleetsim.UnknownNameError, match="calibration form"):
        fleetsim.calibrate(csv, "spline")


FIGURES = f"{EXAMPLES}/h100-qwen3-14b-figures.yaml"


def test_against_measured_figures_fits_by_simulating_them(source_dir, tmp_path, monkeypatch):
    monkeypatch.chdir(source_dir)  # the figures' file names its scenario from the repository root
    out = tmp_path / "cal.yaml"
    r = fleetsim.calibrate_against([FIGURES], fit=["compute_efficiency"], out=out)
    assert r["form"] == "figures"
    assert r["gpu"] == "H100-SXM"
    p = r["params"]["compute_efficiency"]
    assert p["start"] == pytest.approx(0.73)
    # GPUStack's H100 runs its prefill at well under the roofline's 0.73 of peak.
    assert 0.3 < p["value"] < 0.5
    assert p["std_error"] > 0
    assert r["fitted_figures"] == 9
    assert r["rms_tolerances"]["after"] < r["rms_tolerances"]["before"]
    assert sum(f["ok"] for f in r["after"]["figures"]) > sum(f["ok"] for f in r["before"]["figures"])
    assert out.read_text() == r["yaml"]
    assert "compute_efficiency" in r["report"]
    # A scenario referencing the file takes the fitted value.
    scenario = fleetsim.load("scenarios/gpustack-qwen3-14b.yaml",
                             overrides={"fleet.cost_model.calibration": str(out)})
    assert scenario.cost_model["compute_efficiency"] == pytest.approx(p["value"], rel=1e-5)


def test_against_errors_map_to_their_python_classes(source_dir, monkeypatch):
    monkeypatch.chdir(source_dir)
    with pytest.raises(fleetsim.UnknownNameError, match="valid fittable cost_model parameters"):
        fleetsim.calibrate_against([FIGURES], fit=["speed"])
    with pytest.raises(fleetsim.Error, match="starts at 0"):
        fleetsim.calibrate_against([FIGURES], fit=["allreduce_latency_us"])
    with pytest.raises(ValueError, match="at least one file"):
        fleetsim.calibrate_against([])
