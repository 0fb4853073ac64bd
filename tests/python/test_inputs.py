"""Bad input files are refused by name, with what was expected, before anything blocks or grows."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

import fleetsim

HANG_GUARD_S = 600


def run_cli(cli: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([str(cli), *args], capture_output=True, text=True, timeout=HANG_GUARD_S)


def test_a_fifo_scenario_is_refused_not_waited_on(cli, tmp_path):
    fifo = tmp_path / "f.yaml"
    os.mkfifo(fifo)
    done = run_cli(cli, "run", str(fifo))
    assert done.returncode == 2
    assert f"{fifo}: is not a regular file" in done.stderr
    with pytest.raises(fleetsim.ScenarioError, match="is not a regular file"):
        fleetsim.load(str(fifo))


def test_a_device_is_refused(cli):
    done = run_cli(cli, "run", "/dev/zero")
    assert done.returncode == 2
    assert "/dev/zero: is not a regular file" in done.stderr


def test_a_nul_byte_is_refused_with_its_line(cli, tmp_path):
    bad = tmp_path / "x.yaml"
    bad.write_bytes(b"name: x\n,\0")
    done = run_cli(cli, "run", str(bad))
    assert done.returncode == 2
    assert f"{bad}:2: a control byte (0x0)" in done.stderr


def test_a_number_no_double_holds_in_a_jsonl_trace_names_the_line(cli, tmp_path):
    trace = tmp_path / "t.jsonl"
    trace.write_text('{"timestamp_ms": 0, "prompt_tokens": 10, "output_tokens": 5}\n'
                     '{"timestamp_ms": 1e400, "prompt_tokens": 10, "output_tokens": 5}\n')
    scenario = tmp_path / "s.yaml"
    scenario.write_text(f"""name: t
fleet: {{pods: 1, gpu: H100-SXM, model: Llama-3.1-8B}}
workload: {{type: jsonl_trace, file: {trace}}}
arms: [{{name: rr, policy: round_robin}}]
""")
    done = run_cli(cli, "run", str(scenario))
    assert done.returncode == 2
    assert f"{trace}:2:" in done.stderr and "number overflow" in done.stderr


def test_an_empty_scenario_string_says_what_was_expected():
    with pytest.raises(fleetsim.ScenarioError, match="expected a file path, YAML text or a dict"):
        fleetsim.load("")
