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

import functools
from typing import Any, Callable, TypeVar, cast

from . import _core
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
    calibrate_against,
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
    validate,
    workloads,
)
from .analysis import goodput
from .sweep import sweep


_F = TypeVar("_F", bound=Callable[..., Any])


def _picklable(f: _F) -> _F:
    """``f``, a C++ function, behind a Python function of the same name and docstring: Dask and
    process pools ship a function by pickling it by name, which pybind11's functions refuse
    (``client.submit(fleetsim.run, path)``)."""

    @functools.wraps(f)
    def front(*args: Any, **kwargs: Any) -> Any:
        return f(*args, **kwargs)

    front.__module__ = __name__
    front.__qualname__ = f.__name__  # pybind11's is "PyCapsule.<name>"
    return cast(_F, front)


calibrate = _picklable(_core.calibrate)
calibrate_against = _picklable(_core.calibrate_against)
campaign = _picklable(_core.campaign)
load = _picklable(_core.load)
plan = _picklable(_core.plan)
run = _picklable(_core.run)
validate = _picklable(_core.validate)


def _scenario_from_yaml(yaml_text: str, label: str, overrides: list[str]) -> Scenario:
    """Rebuilds a pickled Scenario (Scenario.__reduce__ names this function)."""
    return _core.Scenario.from_yaml(yaml_text, label, overrides)

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
    "calibrate_against",
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
    "validate",
    "workloads",
]
