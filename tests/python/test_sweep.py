"""fleetsim.sweep: one DataFrame, identical whether the points ran here, in local processes or
on a Dask cluster."""

from __future__ import annotations

import pandas as pd
import pytest

import fleetsim

GRID = {"fleet.pods": [2, 3], "workload.concurrency": [4, 8]}


class FirstPod(fleetsim.RoutingPolicy):
    """Sends everything to the lowest-index candidate (a policy only Python knows)."""

    def pick(self, request, candidates, ctx):
        return candidates[0].index


fleetsim.register_policy("py_first_pod", FirstPod, "everything to the first pod (sweep test)")


class ExitsTheProcess(fleetsim.RoutingPolicy):
    """Ends its process on the first pick, as a crash or the OOM killer would."""

    def pick(self, request, candidates, ctx):
        import os

        os._exit(3)


fleetsim.register_policy("py_exits", ExitsTheProcess, "ends its process (sweep test)")


@pytest.fixture(scope="module")
def in_process(small_yaml):
    return fleetsim.sweep(small_yaml, GRID, max_workers=1)


def test_the_frame(in_process, small_yaml):
    df = in_process
    assert list(df.columns[:4]) == ["fleet.pods", "workload.concurrency", "arm", "policy"]
    assert len(df) == 4 * 2  # points x arms
    assert {"ttft_ms_p50", "ttft_ms_p95", "warm_ttft_ms_p99", "throughput_req_s",
            "prefix_cache_reuse", "completed"} <= set(df.columns)
    # Grid order, first path slowest, then arm order.
    assert df["fleet.pods"].tolist() == [2, 2, 2, 2, 3, 3, 3, 3]
    assert df["workload.concurrency"].tolist() == [4, 4, 8, 8, 4, 4, 8, 8]
    assert df["arm"].tolist() == ["rr", "chwbl"] * 4
    # Each row is what a single run of that point gives.
    one = fleetsim.run(small_yaml, overrides={"fleet.pods": 3, "workload.concurrency": 8})
    row = df[(df["fleet.pods"] == 3) & (df["workload.concurrency"] == 8) & (df["arm"] == "rr")]
    assert row["ttft_ms_p95"].item() == one.arm("rr").summary["ttft_ms"]["p95"]


def test_local_processes_give_the_same_frame(in_process, small_yaml, capsys):
    pd.testing.assert_frame_equal(fleetsim.sweep(small_yaml, GRID, max_workers=2), in_process)
    assert capsys.readouterr().err == ""  # no progress unless asked for


@pytest.mark.parametrize("max_workers", [1, 2])
def test_progress_counts_the_points_on_stderr(in_process, small_yaml, capsys, max_workers):
    df = fleetsim.sweep(small_yaml, GRID, max_workers=max_workers, progress=True)
    pd.testing.assert_frame_equal(df, in_process)  # the frame does not change
    err = capsys.readouterr().err
    lines = err.split("\r")[1:]
    assert [line.split(" of ")[0] for line in lines] == ["1", "2", "3", "4"], err
    assert lines[0].startswith("1 of 4 points finished, ") and "s left" in lines[0]
    assert lines[-1].startswith("4 of 4 points finished, ") and lines[-1].endswith(" s\n")


def test_arm_metrics_are_computed_where_the_point_ran(small_yaml):
    def ok_requests(arm):
        return {"ok_requests": int((arm.requests["status"] == "ok").sum())}

    here = fleetsim.sweep(small_yaml, {"fleet.pods": [1, 2]}, max_workers=1, arm_metrics=ok_requests)
    there = fleetsim.sweep(small_yaml, {"fleet.pods": [1, 2]}, max_workers=2,
                           arm_metrics=lambda arm: {"ok_requests": int((arm.requests["status"] == "ok").sum())})
    pd.testing.assert_frame_equal(here, there)
    assert (here["ok_requests"] == here["completed"]).all()


def test_a_policy_class_defined_in_a_function_travels_by_value(small_yaml):
    class LastPod(fleetsim.RoutingPolicy):  # not importable: pickled as its namespace
        picks = 0

        def pick(self, request, candidates, ctx):
            LastPod.picks += 1  # refers to its own class
            return candidates[-1].index

    fleetsim.register_policy("py_last_pod", LastPod, "everything to the last pod (sweep test)")
    overrides = {"arms.rr.policy": "py_last_pod"}
    here = fleetsim.sweep(small_yaml, {"fleet.pods": [2, 3]}, max_workers=1, overrides=overrides)
    there = fleetsim.sweep(small_yaml, {"fleet.pods": [2, 3]}, max_workers=2, overrides=overrides)
    pd.testing.assert_frame_equal(here, there)
    assert LastPod.picks == here[here["arm"] == "rr"]["requests"].sum()  # only here, in-process


def test_the_scenarios_own_grid_and_the_cli_sweep_agree(cli, source_dir):
    import json
    import subprocess

    path = source_dir / "scenarios" / "loxilb-3pod-sweep.yaml"
    if not path.exists():
        pytest.skip("no scenario with a sweep: section")
    quick = {"workload.duration_s": 10, "workload.warmup_s": 5}
    vary = {"workload.streams": [2, 8]}
    df = fleetsim.sweep(path, vary, max_workers=1, overrides=quick)
    args = [a for k, v in quick.items() for a in ("--set", f"{k}={v}")]
    out = subprocess.run(
        [str(cli), "sweep", str(path), "--vary", "workload.streams=2,8", "--format", "json", *args],
        cwd=source_dir, check=True, capture_output=True, text=True,
    ).stdout
    rows = iter(df.to_dict("records"))
    for point in json.loads(out)["points"]:
        for arm in point["arms"]:
            row = next(rows)
            assert str(row["workload.streams"]) == point["vary"]["workload.streams"]
            assert row["arm"] == arm["name"]
            assert row["ttft_ms_p95"] == arm["summary"]["ttft_ms"]["p95"]
            assert row["throughput_req_s"] == arm["summary"]["throughput_req_s"]
    own = fleetsim.load(path, quick)
    assert list(own.sweep) == ["workload.streams"]
    first = fleetsim.sweep(own.with_overrides({"sweep.vary": {"workload.streams": [2]}}), max_workers=1)
    assert first["workload.streams"].tolist() == [2] * len(own.arms)


def test_a_bad_point_fails_before_anything_runs(small_yaml):
    with pytest.raises(fleetsim.ScenarioError, match="fleet.pods"):
        fleetsim.sweep(small_yaml, {"fleet.pods": [2, 0]})
    with pytest.raises(ValueError, match="non-empty list"):
        fleetsim.sweep(small_yaml, {"fleet.pods": []})
    with pytest.raises(ValueError, match="no sweep: section"):
        fleetsim.sweep(small_yaml)


@pytest.mark.parametrize("kwargs, error, message", [
    ({"grid": {"fleet.pods": 3}}, ValueError, r"grid\['fleet.pods'\] must be a non-empty list"),
    ({"grid": {"fleet.pods": "2,3"}}, ValueError, "must be a non-empty list of values, got '2,3'"),
    ({"grid": [("fleet.pods", [2])]}, TypeError, "grid must be a dict"),
    ({"grid": GRID, "client": "x"}, TypeError, "client must be a dask.distributed.Client"),
    ({"grid": GRID, "max_workers": -1}, ValueError, "max_workers must be an integer >= 1 or None"),
    ({"grid": GRID, "max_workers": 2.5}, ValueError, "max_workers must be an integer"),
    ({"grid": GRID, "threads": -1}, ValueError, "threads must be an integer >= 0, got -1"),
])
def test_arguments_of_the_wrong_kind_are_refused_by_name(small_yaml, kwargs, error, message):
    with pytest.raises(error, match=message):
        fleetsim.sweep(small_yaml, **kwargs)


def test_a_worker_that_dies_names_the_points_and_the_main_guard(small_yaml):
    # A policy whose pick kills its worker process: the pool breaks, and the error says what
    # to look at instead of concurrent.futures' bare BrokenProcessPool.
    with pytest.raises(RuntimeError, match=r"ended abruptly .* __name__ == '__main__'"):
        fleetsim.sweep(small_yaml, {"fleet.pods": [2, 3]}, max_workers=2,
                       overrides={"arms.rr.policy": "py_exits"})


def test_dask_cluster_gives_the_same_frame(in_process, small_yaml):
    distributed = pytest.importorskip("distributed")
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  dashboard_address=None) as cluster, \
            distributed.Client(cluster) as client:
        on_dask = fleetsim.sweep(small_yaml, GRID, client=client)
        pd.testing.assert_frame_equal(on_dask, in_process)
        # Dask's own progress bar (text outside a notebook) leaves the frame as it is.
        with_bar = fleetsim.sweep(small_yaml, GRID, client=client, progress=True)
        pd.testing.assert_frame_equal(with_bar, in_process)
        # Per-arm metrics from the request records, computed on the workers.
        with_metrics = fleetsim.sweep(small_yaml, GRID, client=client,
                                      arm_metrics=lambda arm: {"rows": len(arm.requests)})
        assert (with_metrics["rows"] == in_process["requests"]).all()
        # A policy registered only in this process is shipped to the workers.
        grid = {"fleet.pods": [2, 3]}
        overrides = {"arms.rr.policy": "py_first_pod"}
        here = fleetsim.sweep(small_yaml, grid, max_workers=1, overrides=overrides)
        there = fleetsim.sweep(small_yaml, grid, client=client, overrides=overrides)
        pd.testing.assert_frame_equal(there, here)
        assert set(here["policy"]) == {"py_first_pod", "chwbl"}
