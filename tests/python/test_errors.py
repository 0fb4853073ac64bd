"""C++ errors arrive as the Python classes of one hierarchy, with messages naming what to fix."""

from __future__ import annotations

import pytest

import fleetsim


def test_the_hierarchy():
    for cls in (fleetsim.ScenarioError, fleetsim.TraceError, fleetsim.UnknownNameError,
                fleetsim.InternalError):
        assert issubclass(cls, fleetsim.Error)
    assert issubclass(fleetsim.Error, Exception)
    assert issubclass(fleetsim.DeploymentError, fleetsim.ScenarioError)  # valid input, no start
    assert fleetsim.ScenarioError.__module__ == "fleetsim"
    assert "file, the line" in fleetsim.ScenarioError.__doc__


def test_a_bad_field_names_the_file_line_and_field(tmp_path, small_yaml):
    path = tmp_path / "bad.yaml"
    path.write_text(small_yaml.replace("pods: 3", "pods: three"))
    with pytest.raises(fleetsim.ScenarioError) as e:
        fleetsim.load(path)
    msg = str(e.value)
    assert str(path) in msg and "fleet.pods" in msg and ":4:" in msg


def test_an_unknown_field_lists_the_valid_ones(small_yaml):
    with pytest.raises(fleetsim.ScenarioError, match=r"<yaml>:\d+: fleet.gpu_type: unknown field"):
        fleetsim.load(small_yaml.replace("gpu: L40S", "gpu_type: L40S"))


def test_an_override_error_names_the_field(flagship):
    with pytest.raises(fleetsim.ScenarioError, match=r"fleet.gpu.*unknown GPU 'H900'"):
        fleetsim.load(flagship, {"fleet.gpu": "H900"})
    with pytest.raises(fleetsim.ScenarioError, match=r"fleet.pods: expected an integer in"):
        fleetsim.run(flagship, overrides={"fleet.pods": -2})


def test_an_unknown_policy(flagship):
    # In a scenario, the error names the field and lists the policies.
    with pytest.raises(fleetsim.ScenarioError, match=r"arms.2.policy: unknown policy 'nope'.*round_robin"):
        fleetsim.load(flagship, {"arms.rr.policy": "nope"})
    # Asked by name, it is an UnknownNameError listing every describable name, policies too.
    with pytest.raises(fleetsim.UnknownNameError,
                       match=r"unknown name 'nope'; valid names: server, .*gateway.*round_robin"):
        fleetsim.describe("nope")
    with pytest.raises(fleetsim.Error):
        fleetsim.describe("nope")


def test_an_unknown_arm():
    result = fleetsim.run("""
fleet: {pods: 1, gpu: L40S, model: Qwen2.5-7B-Instruct}
workload: {type: multi_turn_chat, conversations: 1, turns: 1, concurrency: 1}
arms: [{name: only, policy: round_robin}]
""")
    with pytest.raises(fleetsim.UnknownNameError, match="valid arms: only"):
        result.arm("other")


def test_file_and_yaml_errors(tmp_path):
    with pytest.raises(fleetsim.ScenarioError, match="cannot open the scenario file"):
        fleetsim.load("no/such.yaml")
    with pytest.raises(fleetsim.ScenarioError, match="cannot open the scenario file"):
        fleetsim.run(tmp_path / "missing.yaml")
    with pytest.raises(fleetsim.ScenarioError, match="invalid YAML"):
        fleetsim.load("name: [unclosed\nfleet: {")
    with pytest.raises(fleetsim.ScenarioError, match="expected a YAML map"):
        fleetsim.load("- a\n- b\n")


def test_argument_errors_are_python_errors(flagship):
    with pytest.raises(TypeError, match="a scenario is"):
        fleetsim.load(42)
    with pytest.raises(TypeError, match="overrides must be a dict"):
        fleetsim.load(flagship, ["fleet.pods=2"])
    with pytest.raises(ValueError, match="threads"):
        fleetsim.run(flagship, threads=-1)


def test_the_interpreter_survives_many_errors(flagship):
    for _ in range(50):
        with pytest.raises(fleetsim.Error):
            fleetsim.load(flagship, {"fleet.model": "nope"})
    assert fleetsim.run(flagship).arms[0].summary["failed"] == 0
