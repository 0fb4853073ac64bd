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

import ast
import functools
import inspect
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
)
from .analysis import goodput
from .sweep import sweep


_F = TypeVar("_F", bound=Callable[..., Any])


def _default(node: ast.expr) -> Any:
    try:
        return ast.literal_eval(node)
    except ValueError:
        return ast.unparse(node)


def _signature(f: Callable[..., Any]) -> inspect.Signature | None:
    """The signature pybind11 writes as the first line of a C++ function's docstring
    ("run(scenario: object, threads: int = 0) -> object"), for ``inspect`` and IDEs; None when
    that line is not one (an overloaded function)."""
    first = (f.__doc__ or "").split("\n", 1)[0]
    try:
        tree = ast.parse(f"def {first}: pass")
    except SyntaxError:
        return None
    node = tree.body[0]
    assert isinstance(node, ast.FunctionDef)
    spec = node.args
    params = []
    for kind, args, defaults in (
        (inspect.Parameter.POSITIONAL_OR_KEYWORD, spec.args, spec.defaults),
        (inspect.Parameter.KEYWORD_ONLY, spec.kwonlyargs, spec.kw_defaults),
    ):
        padded = [None] * (len(args) - len(defaults)) + list(defaults)
        for arg, default in zip(args, padded):
            params.append(inspect.Parameter(
                arg.arg, kind,
                default=inspect.Parameter.empty if default is None else _default(default),
                annotation=ast.unparse(arg.annotation) if arg.annotation else inspect.Parameter.empty))
    returns = ast.unparse(node.returns) if node.returns else inspect.Signature.empty
    return inspect.Signature(params, return_annotation=returns)


def _exported(f: _F) -> _F:
    """``f``, a C++ function, behind a Python function of the same name, docstring and signature:
    ``inspect.signature`` cannot read a pybind11 function, and Dask and process pools ship a
    function by pickling it by name, which pybind11's functions refuse
    (``client.submit(fleetsim.run, path)``)."""

    @functools.wraps(f)
    def front(*args: Any, **kwargs: Any) -> Any:
        return f(*args, **kwargs)

    front.__module__ = __name__
    front.__qualname__ = f.__name__  # pybind11's is "PyCapsule.<name>"
    del front.__wrapped__  # inspect would follow it to the unreadable C++ function
    signature = _signature(f)
    if signature is not None:
        front.__signature__ = signature  # type: ignore[attr-defined]
    return cast(_F, front)


calibrate = _exported(_core.calibrate)
calibrate_against = _exported(_core.calibrate_against)
campaign = _exported(_core.campaign)
cost_model_params = _exported(_core.cost_model_params)
describe = _exported(_core.describe)
gpus = _exported(_core.gpus)
load = _exported(_core.load)
models = _exported(_core.models)
plan = _exported(_core.plan)
policies = _exported(_core.policies)
register_policy = _exported(_core.register_policy)
run = _exported(_core.run)
section_params = _exported(_core.section_params)
server_params = _exported(_core.server_params)
validate = _exported(_core.validate)
workloads = _exported(_core.workloads)


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
