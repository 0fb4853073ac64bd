"""Shared fixtures of the Python tests. ctest sets PYTHONPATH=<build>/python, FLEETSIM_SOURCE_DIR
and FLEETSIM_CLI (tests/python/CMakeLists.txt); run by hand, the defaults below apply."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

SOURCE_DIR = Path(os.environ.get("FLEETSIM_SOURCE_DIR", Path(__file__).resolve().parents[2]))
FLAGSHIP = SOURCE_DIR / "scenarios" / "loxilb-3pod-long.yaml"

# A small scenario (about 50 ms a run) for tests that run many times.
SMALL_YAML = """\
name: small
seed: 7
fleet:
  pods: 3
  gpu: L40S
  model: Qwen2.5-7B-Instruct
  server: {max_num_batched_tokens: 1024}
workload:
  type: multi_turn_chat
  conversations: 12
  turns: 4
  concurrency: 6
  system_prompt_tokens: {dist: uniform, low: 300, high: 900}
  question_tokens: {dist: uniform, low: 20, high: 200}
  answer_tokens: {dist: uniform, low: 5, high: 60}
arms:
  - name: rr
    policy: round_robin
  - name: chwbl
    policy: chwbl
"""


@pytest.fixture(scope="session")
def source_dir() -> Path:
    return SOURCE_DIR


@pytest.fixture(scope="session")
def flagship() -> Path:
    assert FLAGSHIP.is_file(), FLAGSHIP
    return FLAGSHIP


@pytest.fixture(scope="session")
def small_yaml() -> str:
    return SMALL_YAML


@pytest.fixture(scope="session")
def cli() -> Path:
    path = os.environ.get("FLEETSIM_CLI")
    if not path:
        pytest.skip("FLEETSIM_CLI is not set (ctest sets it to the built fleetsim binary)")
    return Path(path)
