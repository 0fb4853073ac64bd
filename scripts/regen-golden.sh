#!/usr/bin/env bash
# Regenerates the golden results the tests diff against. Review the diff before committing it.
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${FLEETSIM_BIN:-build/release/cli/fleetsim}
[ -x "$bin" ] || { echo "build first: cmake --preset release && cmake --build --preset release" >&2; exit 2; }
for name in loxilb-3pod-long; do
  "$bin" run "scenarios/$name.yaml" --format json > "tests/golden/$name.json"
  echo "wrote tests/golden/$name.json"
done
