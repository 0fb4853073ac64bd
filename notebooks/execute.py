#!/usr/bin/env python3
"""Re-executes the notebooks in place, so they are committed with fresh outputs.

    PYTHONPATH=build/release/python /usr/bin/python3 notebooks/execute.py [NAME.ipynb ...]

Runs each notebook top to bottom in a python3 kernel from its own folder (as the tests do), prints
how long it took, and writes it back with its outputs (no per-cell timing metadata, so a rerun
that gives the same numbers gives the same file).
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import nbclient
import nbformat

HERE = Path(__file__).resolve().parent


def execute(path: Path) -> float:
    """Executes one notebook in place; returns its runtime in seconds."""
    nb = nbformat.read(path, as_version=4)
    client = nbclient.NotebookClient(
        nb, timeout=600, kernel_name="python3", record_timing=False,
        resources={"metadata": {"path": str(path.parent)}},
    )
    start = time.perf_counter()
    client.execute()
    elapsed = time.perf_counter() - start
    for cell in nb.cells:
        cell.metadata.pop("execution", None)
        # The kernel splits what a cell prints into messages as its timing goes: join them, so a
        # rerun that prints the same gives the same file.
        merged = []
        for out in cell.get("outputs", []):
            if (merged and out.output_type == "stream" and merged[-1].output_type == "stream"
                    and merged[-1].name == out.name):
                merged[-1].text += out.text
            else:
                merged.append(out)
        if cell.cell_type == "code":
            cell.outputs = merged
    nbformat.write(nb, path)
    return elapsed


def main(argv: list[str]) -> int:
    paths = [HERE / a if not Path(a).is_absolute() else Path(a) for a in argv] or sorted(HERE.glob("*.ipynb"))
    for p in paths:
        print(f"{p.name}: {execute(p):.1f} s", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
