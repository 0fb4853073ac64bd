"""What a notebook user does that the happy path does not: numpy first touched by two arm threads,
a policy re-registered while runs build it, a worker that outlives a sweep, a frame edited in
place, values of the wrong type or size returned by a policy, paths and text mixed up."""

from __future__ import annotations

import importlib
import math
import os
import subprocess
import sys
import textwrap

import pytest

import fleetsim
sweep_module = importlib.import_module("fleetsim.sweep")


# Against a hang only: a busy machine may be many times slower than an idle one.
HANG_GUARD_S = 600


def run_fresh(code: str) -> subprocess.CompletedProcess:
    """`code` in a fresh interpreter (nothing imported yet), so a deadlock or a crash there fails
    this test instead of taking pytest down."""
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True,
                          text=True, timeout=HANG_GUARD_S, env=dict(os.environ))


def test_two_arm_threads_first_touching_numpy_do_not_deadlock(small_yaml):
    # numpy is not imported by the script: the module must set pybind11's numpy API up itself.
    done = run_fresh(f"""
        import sys, fleetsim
        class P(fleetsim.RoutingPolicy):
            def pick(self, request, candidates, ctx):
                request.block_hashes
                return candidates[0].index
            def on_kv_events(self, pod, events):
                pass
        fleetsim.register_policy("p", P, "")
        r = fleetsim.run({small_yaml!r}, threads=0,
                         overrides={{"arms.rr.policy": "p", "arms.chwbl.policy": "p"}})
        print(r.arm("rr").summary["completed"])
    """)
    assert done.returncode == 0, done.stderr
    assert int(done.stdout) > 0


def test_re_registering_a_policy_while_it_is_built_or_run_is_safe(small_yaml):
    done = run_fresh(f"""
        import threading, fleetsim
        class P(fleetsim.RoutingPolicy):
            def __init__(self):
                super().__init__()
                fleetsim.register_policy("q", P, "re-registered from its own constructor")
            def pick(self, request, candidates, ctx):
                return candidates[-1].index
        fleetsim.register_policy("q", P, "")
        fleetsim.run({small_yaml!r}, overrides={{"arms.rr.policy": "q"}})
        stop = False
        def runs():
            for _ in range(15):
                fleetsim.run({small_yaml!r}, threads=0,
                             overrides={{"arms.rr.policy": "q", "arms.chwbl.policy": "q"}})
        t = threading.Thread(target=runs)
        t.start()
        while t.is_alive():
            fleetsim.register_policy("q", P, "again")
        t.join()
        print("ok")
    """)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "ok"


class FirstPod(fleetsim.RoutingPolicy):
    def pick(self, request, candidates, ctx):
        return candidates[0].index


class LastPod(fleetsim.RoutingPolicy):
    def pick(self, request, candidates, ctx):
        return candidates[-1].index


def test_a_worker_that_outlives_a_sweep_runs_the_policy_registered_since(small_yaml):
    # What a Dask worker does for two sweeps in a row, in this process: the second ships the
    # class re-registered under the same name, and the worker must run that one.
    metric = sweep_module._pickled(lambda arm: {"max_pod": int(arm.requests["pod"].max())})
    rows = {}
    for cls in (FirstPod, LastPod):
        fleetsim.register_policy("py_shipped", cls, "shipped (test)")
        scenario = fleetsim.load(small_yaml, {"arms.rr.policy": "py_shipped"})
        payload = sweep_module._policy_payload()
        # The worker still holds the first sweep's class when the second one's payload arrives.
        fleetsim.register_policy("py_shipped", FirstPod, "the worker's stale registration")
        point = sweep_module.run_point(scenario.yaml, scenario.label, list(scenario.overrides),
                                       {"seed": 1}, 1, payload, metric)
        rows[cls.__name__] = next(r for r in point if r["arm"] == "rr")["max_pod"]
    assert rows == {"FirstPod": 0, "LastPod": 2}


def test_requests_is_a_copy_each_time(small_yaml):
    result = fleetsim.run(small_yaml)
    n = len(result.requests)
    edited = result.requests
    edited.drop(edited.index[:10], inplace=True)
    edited["ttft_ms"] = -1.0
    assert len(result.requests) == n
    assert (result.requests["ttft_ms"].dropna() >= 0).all()
    assert len(result.arm("rr").requests) == result.arm("rr").summary["requests"]


class BadCounters(fleetsim.RoutingPolicy):
    value: object = 1

    def pick(self, request, candidates, ctx):
        return candidates[0].index

    def counters(self):
        return {"c": BadCounters.value}


fleetsim.register_policy("py_bad_counters", BadCounters, "bad counters (test)")


@pytest.mark.parametrize("value, error, match", [
    ("x", TypeError, r"counters\(\)\['c'\] must be a number, got 'x'"),
    (None, TypeError, r"counters\(\)\['c'\] must be a number, got None"),
    (math.nan, ValueError, r"counters\(\)\['c'\] must be finite"),
])
def test_bad_counters_are_python_exceptions(small_yaml, value, error, match):
    BadCounters.value = value
    try:
        with pytest.raises(error, match=match):
            fleetsim.run(small_yaml, overrides={"arms.rr.policy": "py_bad_counters"})
    finally:
        BadCounters.value = 1


PLAN_YAML_SET = {"slo": {"ttft_ms": 1000}}


def test_plan_arguments_of_the_wrong_type_are_type_errors(flagship):
    for bad in (None, 3):
        with pytest.raises(TypeError, match="pods_path: expected a path"):
            fleetsim.plan(flagship, PLAN_YAML_SET, pods_path=bad, max_pods=2)
    with pytest.raises(TypeError, match="pods_path: expected two pools' paths"):
        fleetsim.plan(flagship, PLAN_YAML_SET, pods_path=["a", 3], max_pods=2)
    with pytest.raises(TypeError, match="window_s: expected seconds"):
        fleetsim.plan(flagship, PLAN_YAML_SET, window_s="x", max_pods=2)
    with pytest.raises(fleetsim.ScenarioError, match="expected a percent in"):
        fleetsim.plan(flagship, PLAN_YAML_SET, target=math.nan, max_pods=2)


def test_yaml_text_where_a_file_is_expected_says_so(small_yaml):
    with pytest.raises(ValueError, match=r"plan\(\): expected the path of a scenario file, got YAML"):
        fleetsim.plan(small_yaml)
    with pytest.raises(ValueError, match=r"campaign\(\): expected the path of a scenario file"):
        fleetsim.campaign(small_yaml)


def test_a_missing_file_with_a_colon_in_its_name_is_a_missing_file(tmp_path):
    with pytest.raises(fleetsim.ScenarioError, match="a:b.yaml: cannot open the scenario file"):
        fleetsim.load(str(tmp_path / "a:b.yaml"))


def test_calibrate_refuses_bad_targets_and_unwritable_outputs(source_dir):
    csv = source_dir / "examples" / "calibration" / "a100-llama-3.1-8b-steps.csv"
    target = {"gpu": "A100-80GB-SXM", "model": "Llama-3.1-8B"}
    with pytest.raises(fleetsim.Error, match="all-reduce bandwidth must be in"):
        fleetsim.calibrate(csv, "roofline", **target, allreduce_bandwidth_gbs=-5)
    for unwritable in ("/proc/no/such/dir/cal.yaml", "/proc/cal.yaml"):  # a folder, then the file
        with pytest.raises(OSError):
            fleetsim.calibrate(csv, "roofline", **target, out=unwritable)


def test_ctrl_c_stops_a_run_and_raises_keyboard_interrupt(flagship):
    # A run of many minutes, interrupted after two seconds: KeyboardInterrupt comes back within the poll
    # of the simulation (milliseconds); had it not, the run would outlast the hang guard.
    done = run_fresh(f"""
        import os, signal, threading, fleetsim
        threading.Timer(2.0, lambda: os.kill(os.getpid(), signal.SIGINT)).start()
        try:
            fleetsim.run({str(flagship)!r}, threads=1,
                         overrides={{"workload.conversations": 200000}})
            print("ran to the end")
        except KeyboardInterrupt:
            r = fleetsim.run({str(flagship)!r}, overrides={{"workload.conversations": 4}})
            print("interrupted; the next run completes", r.arm("epp").summary["completed"])
    """)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "interrupted; the next run completes 60"


@pytest.mark.parametrize("threads", [1, 2])
def test_ctrl_c_interrupts_a_python_policy_that_blocks(flagship, threads):
    # A pick() that sleeps for an hour: Python's own calls run on the thread that started the
    # run, so Ctrl-C interrupts the sleep there (on a simulation thread nothing could). Had it
    # not, the run would outlast the hang guard.
    done = run_fresh(f"""
        import os, signal, threading, time, fleetsim
        class Sleepy(fleetsim.RoutingPolicy):
            def pick(self, request, candidates, ctx):
                time.sleep(3600)
                return candidates[0].index
        fleetsim.register_policy("sleepy", Sleepy, "blocks in pick (test)")
        threading.Timer(1.0, lambda: os.kill(os.getpid(), signal.SIGINT)).start()
        try:
            fleetsim.run({str(flagship)!r}, threads={threads},
                         overrides={{"arms.rr.policy": "sleepy"}})
            print("ran to the end")
        except KeyboardInterrupt:
            r = fleetsim.run({str(flagship)!r}, overrides={{"workload.conversations": 4}})
            print("interrupted; the next run completes", r.arm("epp").summary["completed"])
    """)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "interrupted; the next run completes 60"


def test_ctrl_c_stops_only_the_run_of_the_thread_that_got_it(flagship):
    # The main thread's run is interrupted; a run another thread started at the same time goes on
    # to its end (the interrupt flag used to be one for the whole process).
    done = run_fresh(f"""
        import os, signal, threading, fleetsim
        other = {{}}
        def beside():
            r = fleetsim.run({str(flagship)!r}, threads=1,
                             overrides={{"workload.conversations": 2000}})
            other["completed"] = r.arm("epp").summary["completed"]
        t = threading.Thread(target=beside)
        t.start()
        threading.Timer(0.5, lambda: os.kill(os.getpid(), signal.SIGINT)).start()
        try:
            fleetsim.run({str(flagship)!r}, threads=1,
                         overrides={{"workload.conversations": 200000}})
        except KeyboardInterrupt:
            t.join()
            print("interrupted; the other thread's run completed", other.get("completed"))
    """)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "interrupted; the other thread's run completed 30000"


class FailsAtOnce(fleetsim.RoutingPolicy):
    def pick(self, request, candidates, ctx):
        raise RuntimeError("the failing arm's own error")


fleetsim.register_policy("py_fails_at_once", FailsAtOnce, "raises on its first pick (test)")


@pytest.mark.parametrize("threads", [1, 0])
def test_a_failing_arm_is_reported_not_the_arms_it_stopped(flagship, threads):
    # The failing arm is the last: with threads, the others were stopped mid-run by its failure.
    with pytest.raises(RuntimeError, match="the failing arm's own error"):
        fleetsim.run(flagship, threads=threads,
                     overrides={"arms.rr.policy": "py_fails_at_once",
                                "workload.conversations": 400})


def test_analysis_and_plot_arguments_are_checked(small_yaml):
    import numpy as np

    from fleetsim import plot

    result = fleetsim.run(small_yaml)
    by_string = fleetsim.goodput(result.requests, 1000, 50, by="arm")
    assert list(by_string["arm"]) == ["rr", "chwbl"]
    with pytest.raises(KeyError, match="no column"):
        fleetsim.goodput(result.requests, 1000, 50, by=["nope"])
    for bad in (None, 0, -5, math.nan, "1000"):
        with pytest.raises(ValueError, match="ttft_slo_ms must be a positive number"):
            fleetsim.goodput(result.requests, bad, 50)
    with pytest.raises(fleetsim.UnknownNameError, match="nope"):
        plot.ttft_ecdf(result, arms=["nope"])
    with pytest.raises(fleetsim.UnknownNameError, match="nope"):
        plot.pod_load(result, arms=["nope"])
    with pytest.raises(ValueError, match="bin_s must be a positive number"):
        plot.failure_timeline(result, bin_s=0)
    # numpy values in a scenario given as a dict are plain numbers.
    import yaml

    as_dict = yaml.safe_load(small_yaml)
    as_dict["workload"]["conversations"] = np.int64(3)
    assert fleetsim.load(as_dict).arms
    as_dict["workload"]["conversations"] = object()
    with pytest.raises(TypeError, match="expected YAML values"):
        fleetsim.load(as_dict)


def test_the_entry_points_pickle_by_name_for_dask(small_yaml):
    import pickle

    import cloudpickle

    for f in (fleetsim.run, fleetsim.load, fleetsim.plan, fleetsim.campaign, fleetsim.calibrate):
        for dumps in (pickle.dumps, cloudpickle.dumps):
            assert pickle.loads(dumps(f)) is f
    assert fleetsim.run.__doc__ == fleetsim._core.run.__doc__
    shipped = pickle.loads(cloudpickle.dumps(lambda: fleetsim.run(small_yaml).summary_rows()))
    assert shipped()[0]["arm"] == "rr"


@pytest.mark.parametrize("name", ["Arm", "Result", "Scenario", "Request"])
def test_objects_only_the_module_makes_refuse_a_bare_new(name):
    # pybind11's __new__ alone gives an object with no C++ value behind it: its repr crashed.
    cls = getattr(fleetsim, name)
    with pytest.raises(TypeError, match=f"fleetsim.{name} objects cannot be created from Python"):
        cls.__new__(cls)


@pytest.mark.parametrize("delay_s", [0.0, 0.05, 0.3])
def test_a_daemon_thread_running_at_exit_does_not_abort_the_process(delay_s):
    # At exit a daemon thread that takes the GIL back is ended by pthread_exit; unwinding through
    # a running simulation's thread aborted the process ("terminate called without an active
    # exception"). The module stops such runs and waits for them in an atexit hook.
    done = run_fresh(f"""
        import threading, time, fleetsim
        class P(fleetsim.RoutingPolicy):
            def pick(self, request, candidates, ctx):
                return candidates[request.id % len(candidates)].index
        fleetsim.register_policy("p", P, "")
        path = {os.path.join(os.environ["FLEETSIM_SOURCE_DIR"], "scenarios", "loxilb-3pod-long.yaml")!r}
        threading.Thread(target=lambda: fleetsim.run(path, overrides={{"arms.rr.policy": "p"}}),
                         daemon=True).start()
        time.sleep({delay_s})
        print("exiting")
        """)
    assert done.returncode == 0, done.stderr
    assert "exiting" in done.stdout
