#!/usr/bin/env bash
# Regenerates the golden results the tests diff against: one per shipped scenario, as
# `fleetsim run scenarios/NAME.yaml --format json` prints it (tests/golden_scenario.cmake checks
# it on one thread, tests/python/test_run.py through Python). Review the diff before committing.
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${FLEETSIM_BIN:-build/release/cli/fleetsim}
[ -x "$bin" ] || { echo "build first: cmake --preset release && cmake --build --preset release" >&2; exit 2; }
rm -f tests/golden/*.json
for path in scenarios/*.yaml; do
  name=$(basename "$path" .yaml)
  "$bin" run "$path" --format json > "tests/golden/$name.json"
  echo "wrote tests/golden/$name.json"
done
