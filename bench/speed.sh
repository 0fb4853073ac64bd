#!/usr/bin/env bash
# The speed benchmark: simulated requests per CPU second and peak RSS of bench/scenarios/
# epp-64pod.yaml (64 H100 pods, EPP or round robin, one thread), at 100k and 1M requests per
# arm; each run in a process of its own, so its peak RSS is its own.
#   bench/speed.sh [BUILD_DIR] [REQUESTS ...]     (default: build/release 100000 1000000)
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build/release}
shift || true
sizes=("$@")
((${#sizes[@]})) || sizes=(100000 1000000)
bench=$build/bench/fleetsim_scenario_bench
[ -x "$bench" ] || { echo "bench/speed.sh: $bench is not built" >&2; exit 2; }

printf '%-5s %9s %9s %9s %12s %10s\n' arm requests wall_s cpu_s req/cpu_s peak_MiB
for requests in "${sizes[@]}"; do
  for arm in epp rr; do
    # 4 turns a conversation.
    "$bench" bench/scenarios/epp-64pod.yaml --arm "$arm" --repeat 1 \
      --set workload.conversations=$((requests / 4)) |
      awk -v arm="$arm" '$1 == "1" { printf "%-5s %9d %9.2f %9.2f %12.0f %10.1f\n",
                                     arm, $4, $2, $3, $6, $7 }'
  done
done
