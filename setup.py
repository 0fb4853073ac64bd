"""The CMake half of `pip install . --no-build-isolation` (pyproject.toml holds the rest): the
release build of the module `fleetsim._core` and of the CLI, copied into the package. With
FLEETSIM_CMAKE_BUILD_DIR set to a configured build tree (build/release), that tree builds them."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

from setuptools import Distribution, setup
from setuptools.command.build_py import build_py

ROOT = Path(__file__).resolve().parent


def _cmake_build() -> Path:
    given = os.environ.get("FLEETSIM_CMAKE_BUILD_DIR")
    build = Path(given).resolve() if given else ROOT / "build" / "pip"
    if not given:
        subprocess.run(
            ["cmake", "-S", str(ROOT), "-B", str(build), "-G", "Ninja",
             "-DCMAKE_BUILD_TYPE=Release", f"-DPython3_EXECUTABLE={sys.executable}",
             "-DFLEETSIM_BUILD_TESTS=OFF", "-DFLEETSIM_BUILD_BENCH=OFF"],
            check=True)
    subprocess.run(["cmake", "--build", str(build), "--target", "fleetsim_python", "fleetsim",
                    "-j", str(os.cpu_count() or 1)], check=True)
    return build


class BuildWithCMake(build_py):
    """Copies the built extension and CLI beside the package's Python files."""

    def run(self) -> None:
        super().run()
        build = _cmake_build()
        package = Path(self.build_lib) / "fleetsim"
        for module in (build / "python" / "fleetsim").glob("_core*.so"):
            shutil.copy2(module, package / module.name)
        shutil.copy2(build / "cli" / "fleetsim", package / "fleetsim-cli")


class BinaryDistribution(Distribution):
    """A wheel for this interpreter and platform: the package holds compiled code."""

    def has_ext_modules(self) -> bool:
        return True


setup(cmdclass={"build_py": BuildWithCMake}, distclass=BinaryDistribution)
