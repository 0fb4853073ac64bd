"""Every binding has a docstring, and the stubs name every public name of the module."""

from __future__ import annotations

import ast
import inspect
from pathlib import Path

import fleetsim
from fleetsim import _core, analysis, plot, sweep


def _public(obj):
    return [n for n in dir(obj) if not n.startswith("__")]


def test_every_binding_has_a_docstring():
    missing = []
    for name in _public(_core):
        obj = getattr(_core, name)
        if isinstance(obj, str):
            continue
        if not (obj.__doc__ or "").strip():
            missing.append(name)
        if inspect.isclass(obj) and not issubclass(obj, BaseException):
            for member in _public(obj):
                if member.startswith("_"):
                    continue
                attr = inspect.getattr_static(obj, member)
                doc = getattr(attr, "__doc__", None)
                if not (doc or "").strip():
                    missing.append(f"{name}.{member}")
    assert not missing, missing


def test_every_python_function_has_a_docstring():
    for module in (fleetsim, analysis, plot, sweep):
        assert module.__doc__
        for name, obj in inspect.getmembers(module, inspect.isfunction):
            if not name.startswith("_") and obj.__module__ == module.__name__:
                assert obj.__doc__, f"{module.__name__}.{name}"


def test_the_stubs_cover_the_module():
    stub = Path(_core.__file__).with_name("_core.pyi")
    if not stub.exists():  # run from the source tree
        stub = Path(fleetsim.__file__).with_name("_core.pyi")
    tree = ast.parse(stub.read_text())
    stubbed = {n.name for n in tree.body if isinstance(n, (ast.ClassDef, ast.FunctionDef))}
    stubbed |= {t.id for n in tree.body if isinstance(n, (ast.Assign, ast.AnnAssign))
                for t in ([n.target] if isinstance(n, ast.AnnAssign) else n.targets)
                if isinstance(t, ast.Name)}
    names = {n for n in dir(_core) if not n.startswith("__") or n == "__version__"}
    assert names - stubbed == set()
    for cls in tree.body:
        if isinstance(cls, ast.ClassDef) and not issubclass(getattr(_core, cls.name), BaseException):
            members = {n.name for n in cls.body if isinstance(n, ast.FunctionDef)}
            real = {m for m in _public(getattr(_core, cls.name)) if not m.startswith("_")}
            assert real - members == set(), cls.name


def test_the_package_exports():
    for name in fleetsim.__all__:
        assert hasattr(fleetsim, name), name


def test_every_public_function_shows_its_parameters_to_inspect():
    for name in fleetsim.__all__:
        obj = getattr(fleetsim, name)
        if not inspect.isfunction(obj):
            continue
        params = inspect.signature(obj).parameters
        assert all(p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD) for p in params.values()), name
    run = inspect.signature(fleetsim.run)
    assert list(run.parameters)[:2] == ["scenario", "threads"]
    assert run.parameters["threads"].default == 0
