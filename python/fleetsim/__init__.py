"""fleetsim: a discrete-event simulator of LLM inference fleets, from Python.

    import fleetsim
    result = fleetsim.run("scenarios/loxilb-3pod-long.yaml", overrides={"fleet.pods": 4})
    result.summary        # dict, the names of the JSON schema (docs/scenarios.md)
    result.json           # the exact text `fleetsim run --format json` prints
    result.requests       # pandas DataFrame, one row per request
    fleetsim.sweep(scenario, {"fleet.pods": [2, 3, 4]})   # one DataFrame, local or on Dask

Routing policies written in Python subclass :class:`RoutingPolicy` and are registered with
:func:`register_policy`. Plots live in :mod:`fleetsim.plot` (matplotlib), goodput@SLO and other
request-level analysis in :mod:`fleetsim.analysis`. See docs/python.md.
"""

from __future__ import annotations

from ._core import (
    Arm,
    DeploymentError,
    Error,
    InternalError,
    PodState,
    PolicyContext,
    Request,
    Result,
    RouteContext,
    RoutingPolicy,
    Scenario,
    ScenarioError,
    TraceError,
    UnknownNameError,
    __version__,
    calibrate,
    campaign,
    cost_model_params,
    describe,
    gpus,
    load,
    models,
    plan,
    policies,
    register_policy,
    run,
    section_params,
    server_params,
    workloads,
)
from .analysis import goodput
from .sweep import sweep

__all__ = [
    "Arm",
    "DeploymentError",
    "Error",
    "InternalError",
    "PodState",
    "PolicyContext",
    "Request",
    "Result",
    "RouteContext",
    "RoutingPolicy",
    "Scenario",
    "ScenarioError",
    "TraceError",
    "UnknownNameError",
    "__version__",
    "calibrate",
    "campaign",
    "cost_model_params",
    "describe",
    "goodput",
    "gpus",
    "load",
    "models",
    "plan",
    "policies",
    "register_policy",
    "run",
    "section_params",
    "server_params",
    "sweep",
    "workloads",
]
