"""Routing policies written in Python: registered by name, used like built-ins, deterministic."""

from __future__ import annotations

import pytest

import fleetsim


class LeastLoadedAffinity(fleetsim.RoutingPolicy):
    """Keeps a conversation on the pod that served its prefix unless that pod is `slack`
    requests busier than the least loaded one."""

    def __init__(self, slack: int = 2):
        super().__init__()
        self.slack = slack
        self.owner: dict[int, int] = {}
        self.dispatched = 0
        self.first_tokens = 0
        self.finished = 0
        self.setup_context = None

    def setup(self, context):
        self.setup_context = context

    def pick(self, request, candidates, ctx):
        least = min(candidates, key=lambda p: (p.inflight_requests, p.index))
        owner = self.owner.get(request.prefix_key)
        for p in candidates:
            if p.index == owner and p.inflight_requests <= least.inflight_requests + self.slack:
                return owner
        self.owner[request.prefix_key] = least.index
        return least.index

    def on_dispatched(self, request, pod):
        self.dispatched += 1

    def on_first_token(self, request, pod):
        self.first_tokens += 1

    def on_finished(self, request, pod):
        self.finished += 1

    def counters(self):
        return {"dispatched": self.dispatched, "first_tokens": self.first_tokens}


INSTANCES: list[LeastLoadedAffinity] = []


class Recorded(LeastLoadedAffinity):
    def __init__(self, slack: int = 2):
        super().__init__(slack)
        INSTANCES.append(self)


fleetsim.register_policy(
    "py_least_loaded_affinity", Recorded, "least loaded with prefix affinity (test)",
    params={"slack": (2, "extra in-flight requests tolerated on the owner pod")},
)


def with_policy(scenario, policy="py_least_loaded_affinity", **params):
    return fleetsim.load(scenario, {"arms.rr.policy": policy, "arms.rr.params": params or {}})


def test_a_python_policy_runs_like_a_builtin(flagship):
    INSTANCES.clear()
    result = fleetsim.run(with_policy(flagship, slack=3), threads=1)
    arm = result.arm("rr")
    assert arm.policy == "py_least_loaded_affinity"
    assert arm.summary["completed"] == 600 and arm.summary["failed"] == 0
    # Prefix affinity keeps most of the history cached, unlike round robin (~73%).
    assert arm.summary["prefix_cache_reuse"] > 0.85
    (policy,) = INSTANCES  # one instance per arm
    assert policy.slack == 3 and policy.params == {"slack": 3}
    assert policy.policy_name == "py_least_loaded_affinity"
    assert policy.context.pod_names == ["pod-0", "pod-1", "pod-2"]
    assert policy.setup_context.stream_name == "arm/rr/policy"
    assert policy.dispatched == policy.finished == policy.first_tokens == 600
    assert arm.summary["policy_counters"] == {"dispatched": 600, "first_tokens": 600}
    info = {p["name"]: p for p in fleetsim.policies()}["py_least_loaded_affinity"]
    assert info["python"] and info["params"][0]["name"] == "slack"
    assert not {p["name"]: p for p in fleetsim.policies()}["epp"]["python"]


def test_a_python_policy_is_deterministic(flagship):
    scenario = with_policy(flagship)
    first = fleetsim.run(scenario, threads=1).json
    assert fleetsim.run(scenario, threads=1).json == first
    assert fleetsim.run(scenario, threads=0).json == first  # arms on threads, GIL per call


def test_params_are_validated_like_a_builtins(flagship):
    with pytest.raises(fleetsim.ScenarioError, match="slack"):
        with_policy(flagship, slack="many")
    with pytest.raises(fleetsim.ScenarioError, match="unknown parameter; valid parameters: slack"):
        with_policy(flagship, nope=1)


def test_pick_can_be_unit_tested_without_a_run():
    class FakeRequest:
        prefix_key = 42

    policy = LeastLoadedAffinity(slack=1)
    assert policy.context is None and policy.params == {}
    pods = [fleetsim.PodState(index=i, name=f"pod-{i}", inflight_requests=n)
            for i, n in enumerate([3, 1, 2])]
    assert pods[1].inflight_requests == 1 and pods[2].name == "pod-2"
    ctx = fleetsim.RouteContext(now_ns=5_000_000_000)
    assert ctx.now_s == 5.0
    assert policy.pick(FakeRequest(), pods, ctx) == 1  # least loaded, becomes the owner
    pods[1] = fleetsim.PodState(index=1, name="pod-1", inflight_requests=3)
    assert policy.pick(FakeRequest(), pods, ctx) == 1  # the owner, within the slack
    pods[1] = fleetsim.PodState(index=1, name="pod-1", inflight_requests=4)
    assert policy.pick(FakeRequest(), pods, ctx) == 2  # beyond the slack: moves


class Recorder(fleetsim.RoutingPolicy):
    seen: list = []

    def pick(self, request, candidates, ctx):
        Recorder.seen.append((request.id, request.conversation, request.turn, request.prompt_tokens,
                              request.num_block_hashes, len(request.block_hashes),
                              request.segments[0], ctx.now_ns, [p.index for p in candidates]))
        return candidates[request.id % len(candidates)].index


fleetsim.register_policy("py_recorder", Recorder, "records what it sees (test)")


def test_the_request_and_pods_a_policy_sees(small_yaml):
    Recorder.seen.clear()
    result = fleetsim.run(small_yaml, overrides={"arms.rr.policy": "py_recorder"}, threads=1)
    assert len(Recorder.seen) == result.arm("rr").summary["requests"]
    rid, conv, turn, prompt, nhash, nhash2, seg, now, pods = Recorder.seen[0]
    assert rid == 0 and turn == 1 and conv >= 0 and prompt > 0 and now >= 0
    assert nhash == nhash2 > 0 and seg[1] > 0 and pods == [0, 1, 2]


class Bad(fleetsim.RoutingPolicy):
    answer: object = 7

    def pick(self, request, candidates, ctx):
        return Bad.answer


class Raises(fleetsim.RoutingPolicy):
    def pick(self, request, candidates, ctx):
        raise RuntimeError("boom from pick")


class Refuses(fleetsim.RoutingPolicy):
    def pick(self, request, candidates, ctx):
        return -1


fleetsim.register_policy("py_bad", Bad, "returns a bad answer (test)")
fleetsim.register_policy("py_raises", Raises, "raises (test)")
fleetsim.register_policy("py_refuses", Refuses, "refuses every request (test)")


@pytest.mark.parametrize("threads", [1, 0])
def test_policy_errors_arrive_as_python_exceptions(small_yaml, threads):
    Bad.answer = 7
    with pytest.raises(ValueError, match="returned pod 7, which is not a candidate"):
        fleetsim.run(small_yaml, overrides={"arms.rr.policy": "py_bad"}, threads=threads)
    for answer in (None, True, "0"):
        Bad.answer = answer
        with pytest.raises(TypeError, match="must return a pod index"):
            fleetsim.run(small_yaml, overrides={"arms.rr.policy": "py_bad"}, threads=threads)
    Bad.answer = 2**70
    with pytest.raises(ValueError, match="pick\\(\\) returned 1180591620717411303424, beyond"):
        fleetsim.run(small_yaml, overrides={"arms.rr.policy": "py_bad"}, threads=threads)
    with pytest.raises(RuntimeError, match="boom from pick"):
        fleetsim.run(small_yaml, overrides={"arms.rr.policy": "py_raises"}, threads=threads)


def test_a_refused_request_is_a_503(small_yaml):
    result = fleetsim.run(small_yaml, overrides={"arms.rr.policy": "py_refuses"})
    arm = result.arm("rr")
    assert arm.summary["failed"] == arm.summary["requests"] > 0
    assert arm.summary["completed"] == 0
    assert set(arm.requests["status"].unique()) == {"http_503"}


def test_registration_errors():
    with pytest.raises(ValueError, match="built-in"):
        fleetsim.register_policy("epp", Raises, "shadows the EPP")
    with pytest.raises(TypeError, match="subclass of fleetsim.RoutingPolicy"):
        fleetsim.register_policy("py_not_a_policy", dict, "not a policy")

    class NoPick(fleetsim.RoutingPolicy):
        pass

    with pytest.raises(TypeError, match="does not define pick"):
        fleetsim.register_policy("py_no_pick", NoPick, "no pick")
    with pytest.raises(TypeError, match="default must be"):
        fleetsim.register_policy("py_bad_params", Raises, "bad params", {"x": [1]})


def test_forgetting_super_init_is_an_error(small_yaml):
    class NoSuper(fleetsim.RoutingPolicy):
        def __init__(self):
            pass

        def pick(self, request, candidates, ctx):
            return candidates[0].index

    fleetsim.register_policy("py_no_super", NoSuper, "forgets super().__init__()")
    with pytest.raises(TypeError, match="__init__"):
        fleetsim.run(small_yaml, overrides={"arms.rr.policy": "py_no_super"})


POOLED_YAML = """\
name: pooled
seed: 7
fleet:
  server: {max_num_batched_tokens: 1024}
  pools:
    - {name: small, pods: 2, gpu: L40S, model: Qwen2.5-7B-Instruct}
    - {name: big, pods: 1, gpu: H100-SXM, model: Llama-3.1-8B}
workload:
  type: multi_turn_chat
  conversations: 8
  turns: 3
  concurrency: 4
  system_prompt_tokens: 400
  question_tokens: 50
  answer_tokens: 10
  tier_mix: 'small:0.5, big:0.5'
gateway: {replicas: 2}
arms:
  - name: mine
    policy: py_pool_recorder
"""


class PoolRecorder(fleetsim.RoutingPolicy):
    instances: list = []

    def __init__(self):
        super().__init__()
        self.picks: list = []
        PoolRecorder.instances.append(self)

    def pick(self, request, candidates, ctx):
        self.picks.append((request.tier, [(p.index, p.pool) for p in candidates]))
        want = self.context.pools.index(request.tier)
        return next(p.index for p in candidates if p.pool == want)


fleetsim.register_policy("py_pool_recorder", PoolRecorder, "routes by tier hint (test)")


def test_pools_and_gateway_replicas_as_a_python_policy_sees_them():
    PoolRecorder.instances.clear()
    result = fleetsim.run(POOLED_YAML, threads=1)
    assert len(PoolRecorder.instances) == 2  # one instance per gateway replica
    first = PoolRecorder.instances[0]
    assert first.context.pools == ["small", "big"]
    assert first.context.pod_pools == [0, 0, 1]
    assert PoolRecorder.instances[1].context.stream_name == "arm/mine/replica-1/policy"
    assert first.picks[0][1] == [(0, 0), (1, 0), (2, 1)]
    assert sum(len(p.picks) for p in PoolRecorder.instances) == 24
    summary = result.arm("mine").summary
    assert summary["completed"] == 24
    assert fleetsim.PodState(index=2, pool=1).pool == 1
    scenario = fleetsim.load(POOLED_YAML)
    assert [p["name"] for p in scenario.pools] == ["small", "big"]
    assert scenario.pools[1]["server"]["max_num_batched_tokens"] == 1024
    assert scenario.pools[0]["gpu_sharing"] == "time_slicing"
    assert scenario.pools[0]["mps_active_thread_percentage"] == 0


TIERS_AT_ZERO_YAML = """\
name: tiers0
seed: 5
fleet:
  pools:
    - {name: small, pods: 1, gpu: H100-SXM, model: Llama-3.1-8B}
    - {name: big, pods: 1, gpu: H100-SXM, model: Llama-3.1-8B}
workload:
  type: open_loop
  rate_schedule: '0:1, 600:1, 601:0, 1800:0, 1801:1, 2400:1'
  duration_s: 2400
  max_requests: 0
  prompt_tokens: {dist: uniform, low: 500, high: 2000}
  output_tokens: {dist: uniform, low: 100, high: 300}
gateway: {hold_for_endpoints_s: 300}
autoscaling:
  metric: request_rate
  target: 2
  provision_s: 60
  load_time_s: 60
  prestop_s: 5
  pools:
    small: {min_pods: 0, max_pods: 1}
    big: {min_pods: 0, max_pods: 1}
arms:
  - {name: a, policy: py_small_only}
"""


class SmallOnly(fleetsim.RoutingPolicy):
    """Serves every request from the 'small' pool and waits for it while it is at zero."""

    declares_pool = True

    def pick(self, request, candidates, ctx):
        small = self.context.pools.index("small")
        return next((p.index for p in candidates if p.pool == small), -1)

    def pool_for(self, request):
        return self.context.pools.index("small") if SmallOnly.declares_pool else None


fleetsim.register_policy("py_small_only", SmallOnly, "the small pool only (test)")


def wakes(timeline):
    """How often a pool came back from zero pods."""
    back, gone = 0, False
    for provisioned in timeline["provisioned"]:
        gone = gone or provisioned == 0
        if gone and provisioned > 0:
            back, gone = back + 1, False
    return back


def test_a_held_request_wakes_only_the_pool_the_policy_names():
    SmallOnly.declares_pool = True
    arm = fleetsim.run(TIERS_AT_ZERO_YAML).arm("a")
    assert arm.summary["failed"] == 0
    frame = arm.autoscaling
    assert wakes(frame[frame["pool"] == "small"]) == 1
    assert wakes(frame[frame["pool"] == "big"]) == 0
    # Without pool_for the held request may go to any pool, so both wake.
    SmallOnly.declares_pool = False
    try:
        frame = fleetsim.run(TIERS_AT_ZERO_YAML).arm("a").autoscaling
    finally:
        SmallOnly.declares_pool = True
    assert wakes(frame[frame["pool"] == "big"]) == 1


class Deliberates(LeastLoadedAffinity):
    delay_ns = 50_000_000

    def routing_delay_ns(self, request):
        return Deliberates.delay_ns


fleetsim.register_policy("py_deliberates", Deliberates, "thinks before it picks (test)")


def test_a_routing_delay_is_waited_before_the_pick(small_yaml):
    def ttft_ms(policy):
        arm = fleetsim.run(small_yaml, overrides={"arms.rr.policy": policy}).arm("rr")
        return arm.requests.sort_values("id")["ttft_ms"].reset_index(drop=True)

    added = ttft_ms("py_deliberates") - ttft_ms("py_least_loaded_affinity")
    # The first request meets an idle fleet: exactly the delay. Later ones shift with the steps
    # they join (a step of this 7B model on an L40S is ~20 ms), so only their median is about the
    # delay, within half a step.
    assert added.iloc[0] == pytest.approx(50.0)
    assert added.median() == pytest.approx(50.0, abs=10.0)


class BadPoolOrDelay(fleetsim.RoutingPolicy):
    """Refuses every pick, so the gateway holds the request and asks pool_for()."""

    pool: object = None
    delay: object = 0

    def pick(self, request, candidates, ctx):
        return -1

    def pool_for(self, request):
        return BadPoolOrDelay.pool

    def routing_delay_ns(self, request):
        return BadPoolOrDelay.delay


fleetsim.register_policy("py_bad_pool_or_delay", BadPoolOrDelay, "bad pool_for/delay (test)")


@pytest.mark.parametrize(
    "pool, delay, error, match",
    [
        (None, -1, ValueError, r"routing_delay_ns\(\) returned -1; expected 0 to 86400000000000"),
        (None, 2**62, ValueError, r"returned 4611686018427387904; expected 0 to 86400000000000"),
        (None, 2**70, ValueError, r"routing_delay_ns\(\) returned 1180591620717411303424, beyond"),
        (None, 0.5, TypeError, r"routing_delay_ns\(\) must return a number of nanoseconds"),
        (2, 0, ValueError, r"pool_for\(\) returned 2; a pool index is 0..1"),
        ("big", 0, TypeError, r"pool_for\(\) must return a pool index \(int\) or None"),
    ],
)
def test_bad_pool_or_delay_is_a_python_exception(pool, delay, error, match):
    BadPoolOrDelay.pool, BadPoolOrDelay.delay = pool, delay
    overrides = {"arms.a.policy": "py_bad_pool_or_delay"}
    try:
        with pytest.raises(error, match=match):
            fleetsim.run(TIERS_AT_ZERO_YAML, overrides=overrides)
    finally:
        BadPoolOrDelay.pool, BadPoolOrDelay.delay = None, 0


class PrecisePrefix(fleetsim.RoutingPolicy):
    """Mirrors every pod's prefix cache from its KV events and sends a request to the pod that
    holds the longest prefix of it; ties go to the least loaded."""

    def setup(self, context):
        self.cached = [set() for _ in context.pod_names]
        self.seen = {"stored": 0, "removed": 0, "cleared": 0}

    def on_kv_events(self, pod, events):
        for kind, hashes in events:
            self.seen[kind] += len(hashes) if kind != "cleared" else 1
            if kind == "stored":
                self.cached[pod].update(hashes.tolist())
            elif kind == "removed":
                self.cached[pod].difference_update(hashes.tolist())
            else:
                self.cached[pod].clear()

    def pick(self, request, candidates, ctx):
        hashes = request.block_hashes.tolist()

        def held(pod):
            n = 0
            while n < len(hashes) and hashes[n] in self.cached[pod.index]:
                n += 1
            return n

        return max(candidates, key=lambda p: (held(p), -p.inflight_requests, -p.index)).index

    def counters(self):
        return {**self.seen, "largest_mirror": max(len(c) for c in self.cached)}


class RaisesOnKvEvents(LeastLoadedAffinity):
    def on_kv_events(self, pod, events):
        raise RuntimeError("boom from on_kv_events")


fleetsim.register_policy("py_precise_prefix", PrecisePrefix, "KV-event prefix router (test)")
fleetsim.register_policy("py_raises_on_kv_events", RaisesOnKvEvents, "raises (test)")


def test_a_python_policy_reads_the_pods_kv_events(flagship):
    scenario = fleetsim.load(flagship, {
        # A KV cache of a quarter of what vLLM would give, so blocks are evicted too.
        "fleet.server.num_gpu_blocks_override": 2400,
        "arms.chwbl.policy": "py_precise_prefix", "arms.chwbl.params": {},
        "arms.epp.params": {"prefix_source": "precise"},
    })
    result = fleetsim.run(scenario, threads=0)
    mine, epp, rr = (result.arm(a).summary for a in ("chwbl", "epp", "rr"))
    seen = mine["policy_counters"]
    assert seen["stored"] > 0 and seen["removed"] > 0 and seen["cleared"] == 0
    # The mirror holds no more than a pod's cache does.
    assert 0 < seen["largest_mirror"] <= 2400
    # The same information as the built-in precise scorer, so about the same reuse, far above
    # round robin's.
    assert mine["prefix_cache_reuse"] == pytest.approx(epp["prefix_cache_reuse"], abs=0.03)
    assert mine["prefix_cache_reuse"] > rr["prefix_cache_reuse"] + 0.1
    assert fleetsim.run(scenario, threads=1).json == result.json


def test_a_restarted_pod_clears_its_mirror(small_yaml, tmp_path):
    path = tmp_path / "restart.yaml"
    path.write_text(small_yaml + """faults:
  - {kind: pod_restart, target: pod-1, at_s: 4, load_time_s: 2}
""")
    seen = fleetsim.run(fleetsim.load(str(path), {"arms.rr.policy": "py_precise_prefix"})).arm(
        "rr").summary["policy_counters"]
    assert seen["cleared"] == 1 and seen["stored"] > 0


def test_an_error_in_on_kv_events_is_a_python_exception(small_yaml):
    with pytest.raises(RuntimeError, match="boom from on_kv_events"):
        fleetsim.run(small_yaml, overrides={"arms.rr.policy": "py_raises_on_kv_events"})
