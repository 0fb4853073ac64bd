"""Result files are written whole or not at all, and a failed write is a failed run."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

HANG_GUARD_S = 600


def run_cli(cli: Path, *args: str, **kwargs) -> subprocess.CompletedProcess:
    return subprocess.run([str(cli), *args], capture_output=True, text=True,
                          timeout=HANG_GUARD_S, **kwargs)


@pytest.fixture()
def small_file(tmp_path, small_yaml) -> Path:
    path = tmp_path / "small.yaml"
    path.write_text(small_yaml)
    return path


def test_a_result_printed_to_a_full_device_fails_the_run(cli, small_file):
    with open("/dev/full", "w") as full:
        done = subprocess.run([str(cli), "run", str(small_file), "--format", "json"], stdout=full,
                              stderr=subprocess.PIPE, text=True, timeout=HANG_GUARD_S)
    assert done.returncode == 2
    assert "cannot write the output to standard output" in done.stderr


def test_a_set_that_cannot_be_written_whole_leaves_the_previous_set(cli, small_file, tmp_path):
    out = tmp_path / "out"
    assert run_cli(cli, "run", str(small_file), "--out", str(out)).returncode == 0
    before = {p.name: p.read_bytes() for p in out.iterdir()}
    assert set(before) == {"result.json", "summary.csv", "requests.csv"}
    (out / "requests.csv").unlink()
    (out / "requests.csv").mkdir()  # the last file of the set cannot be replaced
    done = run_cli(cli, "run", str(small_file), "--out", str(out), "--seed", "8")
    assert done.returncode == 2
    assert "requests.csv" in done.stderr and "Is a directory" in done.stderr
    assert (out / "result.json").read_bytes() == before["result.json"]
    assert (out / "summary.csv").read_bytes() == before["summary.csv"]
    assert sorted(p.name for p in out.iterdir()) == ["requests.csv", "result.json", "summary.csv"]


def test_a_sweep_value_holding_a_comma_stays_one_csv_field(cli, small_file):
    done = run_cli(cli, "sweep", str(small_file), "--format", "csv",
                   "--vary", "workload.tenants=[\"a:1, b:1\", \"c:1\"]")
    assert done.returncode == 0, done.stderr
    rows = [line for line in done.stdout.splitlines() if line]
    assert rows[0].startswith("workload.tenants,arm,")
    assert rows[1].startswith('"a:1, b:1",rr,')
    assert rows[-1].startswith("c:1,chwbl,")


@pytest.mark.parametrize("signal_name, code", [("SIGINT", 130), ("SIGTERM", 143)])
def test_an_interrupted_run_writes_nothing_and_exits_128_plus_the_signal(
        cli, flagship, tmp_path, signal_name, code):
    import signal
    out = tmp_path / "out"
    # A run of hours: only the signal can end it before the hang guard. Its first log line says
    # the run has begun, so the handlers are in place when the signal comes.
    proc = subprocess.Popen([str(cli), "--log-level", "info", "run", str(flagship), "--out",
                             str(out), "--set", "workload.conversations=200000"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    first = proc.stderr.readline()
    assert "running" in first, first
    proc.send_signal(getattr(signal, signal_name))
    _, stderr = proc.communicate(timeout=HANG_GUARD_S)
    assert proc.returncode == code
    assert f"interrupted ({signal_name})" in stderr and "no result was written" in stderr
    assert not out.exists()


def test_requests_csv_has_the_dataframes_latency_columns(cli, small_file, tmp_path):
    import numpy as np
    import pandas as pd

    import fleetsim

    out = tmp_path / "out"
    assert run_cli(cli, "run", str(small_file), "--out", str(out)).returncode == 0
    csv = pd.read_csv(out / "requests.csv")
    frame = fleetsim.run(small_file).requests
    assert len(csv) == len(frame)
    for column in ("ttft_ms", "e2e_ms", "tpot_ms", "max_itl_ms"):
        # The CSV keeps 6 significant digits; undefined figures are empty there and NaN here.
        np.testing.assert_allclose(csv[column].to_numpy(), frame[column].to_numpy(),
                                   rtol=1e-5, equal_nan=True, err_msg=column)
    arm = fleetsim.run(small_file).arms[0]
    measured = csv[(csv["measured"] == 1) & (csv["arm"] == arm.name)]
    summary = arm.summary
    assert measured["ttft_ms"].quantile(0.95) == pytest.approx(summary["ttft_ms"]["p95"], rel=1e-5)
