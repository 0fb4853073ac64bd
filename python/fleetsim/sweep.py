"""Parameter sweeps: every point of a grid of overrides, run locally or on a Dask cluster.

Each task receives the scenario as YAML text plus overrides (never a C++ object), runs it and
returns plain dict rows, so the result is the same wherever the tasks ran.
"""

from __future__ import annotations

import itertools
import multiprocessing
import sys
import time
from concurrent.futures import ProcessPoolExecutor, as_completed
from concurrent.futures.process import BrokenProcessPool
from typing import TYPE_CHECKING, Any, Callable, Mapping, Sequence, TextIO

from . import _core

if TYPE_CHECKING:
    import pandas as pd


ArmMetrics = Callable[["_core.Arm"], Mapping[str, Any]]


def _importable(cls: type) -> bool:
    """Whether another process can import ``cls`` by its module and qualified name."""
    module = sys.modules.get(cls.__module__)
    if module is None or cls.__module__ == "__main__":
        return False
    obj: Any = module
    for part in cls.__qualname__.split("."):
        obj = getattr(obj, part, None)
    return obj is cls


def _policy_class_skeleton(name: str, bases: tuple[type, ...], module: str) -> type:
    # type() picks the bases' metaclass (pybind11's), as a class statement does.
    return type(name, bases, {"__module__": module})


def _set_policy_class_state(cls: type, namespace: dict[str, Any]) -> type:
    for key, value in namespace.items():
        if key != "__module__":
            setattr(cls, key, value)
    return cls


def _pickled(obj: Any) -> bytes | None:
    """``obj`` pickled for another process (None stays None).

    cloudpickle pickles what a notebook defines (functions, lambdas, classes) by value, so workers
    need not import it. Subclasses of RoutingPolicy need one more step: their metaclass is
    pybind11's, which cloudpickle cannot rebuild, so they travel as (name, bases, namespace) and
    are rebuilt with type(), in two phases so a method may refer to its own class.
    """
    if obj is None:
        return None
    import io

    import cloudpickle

    class Pickler(cloudpickle.CloudPickler):
        def reducer_override(self, o: Any) -> Any:
            if (
                isinstance(o, type)
                and issubclass(o, _core.RoutingPolicy)
                and o is not _core.RoutingPolicy
                and not _importable(o)
            ):
                namespace = {k: v for k, v in vars(o).items() if k not in ("__dict__", "__weakref__")}
                return (_policy_class_skeleton, (o.__name__, o.__bases__, o.__module__),
                        namespace, None, None, _set_policy_class_state)
            return super().reducer_override(o)

    buf = io.BytesIO()
    Pickler(buf, protocol=5).dump(obj)
    return buf.getvalue()


def _policy_payload() -> list[tuple[str, bytes]] | None:
    """The routing policies registered from Python, each pickled for other processes (or None)."""
    table = _core._python_policies()
    if not table:
        return None
    return [(name, _pickled(tuple(entry))) for name, entry in table.items()]


# What this process last registered from a shipped payload, by name: the pickled entry. A
# worker outlives a sweep, and the next sweep may ship a policy re-registered under the same name.
_shipped: dict[str, bytes] = {}


def _register_shipped(payload: list[tuple[str, bytes]] | None) -> None:
    if payload is None:
        return
    import pickle

    for name, entry in payload:
        if _shipped.get(name) == entry:
            continue
        cls, description, params = pickle.loads(entry)
        _core.register_policy(name, cls, description, params)
        _shipped[name] = entry


def run_point(
    yaml_text: str,
    label: str,
    overrides: Sequence[str],
    point: Mapping[str, Any],
    threads: int = 1,
    policies: list[tuple[str, bytes]] | None = None,
    arm_metrics: ArmMetrics | bytes | None = None,
) -> list[dict[str, Any]]:
    """Runs one grid point; returns one row per arm: the point's values, Result.summary_rows(),
    then the columns ``arm_metrics(arm)`` returns (when given; pickled bytes are unpickled).

    This is the task a sweep sends to a worker process or a Dask worker.
    """
    import pickle

    _register_shipped(policies)
    if isinstance(arm_metrics, bytes):
        arm_metrics = pickle.loads(arm_metrics)
    scenario = _core.Scenario.from_yaml(yaml_text, label, list(overrides))
    result = _core.run(scenario.with_overrides(dict(point)), threads=threads)
    rows = []
    for arm, row in zip(result.arms, result.summary_rows()):
        extra = dict(arm_metrics(arm)) if arm_metrics is not None else {}
        rows.append({**point, **row, **extra})
    return rows


def _yaml_scalar(text: str) -> Any:
    """A value of a scenario's sweep section (YAML text) as Python: int, float, bool or str."""
    for convert in (int, float):
        try:
            return convert(text)
        except ValueError:
            pass
    return {"true": True, "false": False}.get(text, text)


class _PointsFinished:
    """``k of n points finished, t s`` on ``out``, one line rewritten in place (``\\r``: a
    terminal and a notebook's stream both honour it), ended when the last point finishes."""

    def __init__(self, total: int, out: TextIO) -> None:
        self.total, self.done, self.out = total, 0, out
        self.start = time.monotonic()

    def one_more(self) -> None:
        self.done += 1
        elapsed = time.monotonic() - self.start
        line = f"{self.done} of {self.total} points finished, {elapsed:.0f} s"
        if self.done < self.total:
            line += f", about {elapsed / self.done * (self.total - self.done):.0f} s left"
        end = "\n" if self.done == self.total else ""
        print(f"\r{line}", end=end, file=self.out, flush=True)


def _check_sweep_arguments(grid: Any, client: Any, threads: Any, max_workers: Any) -> None:
    """Refuses arguments of the wrong kind by name, before anything runs."""
    if grid is not None:
        if not isinstance(grid, Mapping):
            raise TypeError(f"grid must be a dict {{dotted.path: [values]}}, got {grid!r}")
        for k, values in grid.items():
            if not isinstance(k, str):
                raise TypeError(f"grid keys must be dotted paths (str), got {k!r}")
            listed = not isinstance(values, (str, bytes, Mapping)) and hasattr(values, "__len__")
            if not listed or len(values) == 0:
                raise ValueError(f"grid[{k!r}] must be a non-empty list of values, got {values!r}")
    if client is not None and not (hasattr(client, "submit") and hasattr(client, "gather")):
        raise TypeError(
            "client must be a dask.distributed.Client (or None for local processes), "
            f"got {client!r}")
    for name, value, least in (("threads", threads, 0), ("max_workers", max_workers, 1)):
        if value is None and name == "max_workers":
            continue
        if isinstance(value, bool) or not isinstance(value, int) or value < least:
            raise ValueError(f"{name} must be an integer >= {least}"
                             f"{' or None' if name == 'max_workers' else ''}, got {value!r}")


def sweep(
    scenario: Any,
    grid: Mapping[str, Sequence[Any]] | None = None,
    client: Any = None,
    *,
    threads: int = 1,
    max_workers: int | None = None,
    overrides: Mapping[str, Any] | None = None,
    arm_metrics: ArmMetrics | None = None,
    progress: bool = False,
) -> "pd.DataFrame":
    """Runs every point of the cartesian product of ``grid`` and returns ONE DataFrame.

    scenario: a Scenario or anything fleetsim.load() accepts.
    grid: {dotted.path: [values]}, e.g. {"fleet.pods": [2, 3, 4], "fleet.gpu": ["H100-SXM"]};
        each point is applied as overrides (the semantics of ``--set``). None: the scenario's
        own ``sweep: {vary: ...}`` section, as ``fleetsim sweep`` uses it.
    client: a ``dask.distributed.Client`` to run the points on its cluster; None runs them in
        local processes (``concurrent.futures.ProcessPoolExecutor``, ``max_workers`` of them;
        ``max_workers=1`` runs them in this process).
    threads: threads per point for its arms (default 1: the points already run in parallel).
    overrides: applied to the scenario before the grid's.
    arm_metrics: a function of a :class:`fleetsim.Arm` returning {column: value}, evaluated
        where the point ran (so the per-request records never travel), e.g. goodput@SLO from
        ``arm.requests``. It is shipped with cloudpickle: a notebook's function or lambda works.
    progress: show how many points have finished: on stderr for local processes; with a Dask
        client, Dask's own progress bar (``distributed.progress``: a widget in a notebook).

    Columns: each varied path, arm, policy, then every scalar of the arm's summary with
    percentiles flattened (ttft_ms_p50, warm_ttft_ms_p95, ...). Rows come in grid order (the
    first path varies slowest), then arm order, whichever way the points ran.
    Routing policies registered from Python are shipped to the workers (with cloudpickle).
    """
    import pandas as pd

    _check_sweep_arguments(grid, client, threads, max_workers)
    base = _core.load(scenario, overrides)
    if grid is None:
        grid = {k: [_yaml_scalar(v) for v in vs] for k, vs in base.sweep.items()}
        if not grid:
            raise ValueError("no grid given, and the scenario has no sweep: section")
    keys = list(grid)
    points = [dict(zip(keys, combo)) for combo in itertools.product(*(grid[k] for k in keys))]
    # Validate every point here, so a bad value fails fast with a ScenarioError.
    for p in points:
        base.with_overrides(p)
    args = [(base.yaml, base.label, list(base.overrides), p, threads) for p in points]

    finished = _PointsFinished(len(args), sys.stderr) if progress else None
    if client is not None:
        payload, metrics = _policy_payload(), _pickled(arm_metrics)
        futures = [client.submit(run_point, *a, payload, metrics, pure=False) for a in args]
        if progress:
            import distributed

            distributed.progress(futures)
        results = client.gather(futures)
    elif max_workers == 1 or len(points) == 1:
        results = []
        for a in args:
            results.append(run_point(*a, None, arm_metrics))
            if finished:
                finished.one_more()
    else:
        payload, metrics = _policy_payload(), _pickled(arm_metrics)
        # spawn, not fork: the parent may hold threads (a Dask client, BLAS pools).
        with ProcessPoolExecutor(
            max_workers=max_workers, mp_context=multiprocessing.get_context("spawn")
        ) as pool:
            futures = [pool.submit(run_point, *a, payload, metrics) for a in args]
            try:
                if finished:
                    for _ in as_completed(futures):
                        finished.one_more()
                results = [f.result() for f in futures]
            except BrokenProcessPool as e:
                unfinished = [p for p, f in zip(points, futures) if not f.done() or f.exception()]
                raise RuntimeError(
                    "sweep: a worker process ended abruptly (killed, out of memory, or a "
                    f"crash) while running the points from {unfinished[0] if unfinished else {}}; "
                    "a script that calls sweep() at its top level needs an "
                    "`if __name__ == '__main__':` guard, as the spawned workers import it again"
                ) from e

    rows = [row for point_rows in results for row in point_rows]
    df = pd.DataFrame(rows)
    first = keys + ["arm", "policy"]
    return df[first + [c for c in df.columns if c not in first]]
