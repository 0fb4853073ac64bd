#!/usr/bin/env bash
# Regenerates docs/fidelity.md from `fleetsim validate` (it exits 1 while a tolerance is broken),
# and README.md's copy of its table by GPU.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 2
bin=${FLEETSIM_BIN:-build/release/cli/fleetsim}
"$bin" validate --out build/validation >/dev/null
cp build/validation/fidelity.md docs/fidelity.md
/usr/bin/python3 - <<'PY'
import re
def gpu_table(text):
    return re.search(r"^\| GPU \| inside.*?(?=\n\n)", text, re.S | re.M).group(0)
fresh = gpu_table(open("docs/fidelity.md").read())
readme = open("README.md").read()
open("README.md", "w").write(readme.replace(gpu_table(readme), fresh))
PY
echo "wrote docs/fidelity.md and README.md's table by GPU"
