"""The `fleetsim` command of a pip-installed package: runs the CLI built into the package."""

from __future__ import annotations

import os
import sys
from pathlib import Path


def main() -> None:
    """Replaces this process with the packaged CLI, passing every argument on."""
    cli = Path(__file__).with_name("fleetsim-cli")
    if not cli.exists():
        sys.exit("fleetsim: this package holds no CLI (it was not installed by pip install .); "
                 "use build/release/cli/fleetsim or cmake --install")
    os.execv(cli, [str(cli), *sys.argv[1:]])
