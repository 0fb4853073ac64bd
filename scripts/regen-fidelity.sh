#!/usr/bin/env bash
# Regenerates docs/fidelity.md from `fleetsim validate` (it exits 1 while a tolerance is broken).
set -uo pipefail
cd "$(dirname "$0")/.."
bin=${FLEETSIM_BIN:-build/release/cli/fleetsim}
"$bin" validate --out build/validation >/dev/null
cp build/validation/fidelity.md docs/fidelity.md
echo "wrote docs/fidelity.md"
