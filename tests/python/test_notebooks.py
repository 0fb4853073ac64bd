"""The notebooks run top to bottom without errors (nbclient, a python3 kernel) and are committed
with the outputs they give today. How long they take is not checked here: a busy machine is slow,
and speed is measured in bench/; ctest's per-test timeout is the only guard, against a hang."""

from __future__ import annotations

import difflib
import os
from pathlib import Path

import pytest

nbformat = pytest.importorskip("nbformat")
nbclient = pytest.importorskip("nbclient")

NOTEBOOK_DIR = Path(os.environ.get("FLEETSIM_SOURCE_DIR", Path(__file__).resolve().parents[2])) / "notebooks"
NOTEBOOKS = sorted(NOTEBOOK_DIR.glob("*.ipynb"))


def test_there_are_notebooks():
    names = {p.stem for p in NOTEBOOKS}
    assert {"01-routing-comparison", "02-capacity-planning", "04-custom-policy"} <= names


def text_outputs(nb) -> list[list[str]]:
    """Per code cell, what it printed and the text form of what it returned: the figures a reader
    sees (images left out: their bytes vary with matplotlib's version). What a cell printed is
    joined into one text: the kernel splits a cell's stdout into messages as its timing goes."""
    cells = []
    for c in nb.cells:
        if c.cell_type != "code":
            continue
        printed = ""
        results = []
        for o in c.get("outputs", []):
            if o.get("output_type") == "stream" and o.get("name") == "stdout":
                printed += o["text"]
            elif "data" in o and "text/plain" in o["data"]:
                results.append(o["data"]["text/plain"])
        cells.append([printed, *results])
    return cells


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_notebook_runs(path: Path):
    nb = nbformat.read(path, as_version=4)
    code = [c for c in nb.cells if c.cell_type == "code"]
    assert code and all(c.get("outputs") is not None for c in code)
    assert any(c["outputs"] for c in code), f"{path.name} is committed without outputs"
    committed = text_outputs(nb)
    client = nbclient.NotebookClient(
        nb, timeout=None, kernel_name="python3", resources={"metadata": {"path": str(NOTEBOOK_DIR)}}
    )
    client.execute()  # raises CellExecutionError on the first failing cell
    errors = [o for c in nb.cells if c.cell_type == "code" for o in c.outputs
              if o.output_type == "error"]
    assert not errors
    # The committed figures are the ones the simulator gives today, as the goldens are; when the
    # model changes, `notebooks/execute.py` refreshes them (and the prose around them is re-read).
    fresh = text_outputs(nb)
    stale = [i for i, (a, b) in enumerate(zip(committed, fresh)) if a != b]
    diff = "" if not stale else "\n".join(difflib.unified_diff(
        "\n".join(committed[stale[0]]).splitlines(), "\n".join(fresh[stale[0]]).splitlines(),
        "committed", "fresh", lineterm=""))
    assert not stale, (f"{path.name}: the committed outputs of code cells {stale} differ from a "
                       "fresh run; re-execute it with notebooks/execute.py and re-read its "
                       f"prose. First difference:\n{diff}")
