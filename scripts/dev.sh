#!/usr/bin/env bash
# The two commands of the README's quick start:
#   scripts/dev.sh run    install what is missing, build, run the flagship scenario
#   scripts/dev.sh test   install what is missing, build, run every test
# Extra arguments after `run` go to `fleetsim run` (e.g. --format json).
set -euo pipefail
cd "$(dirname "$0")/.."

# Debian 12 packages the build, the tests and the Python side need.
PACKAGES=(
  cmake g++ ninja-build ccache pkg-config bash-completion
  libboost-graph-dev libeigen3-dev libyaml-cpp-dev libcli11-dev libspdlog-dev
  nlohmann-json3-dev libgtest-dev libgmock-dev libbenchmark-dev libxxhash-dev robin-map-dev
  pybind11-dev python3-dev python3-numpy python3-pandas python3-pytest
  python3-matplotlib python3-yaml python3-distributed python3-dask python3-cloudpickle
  python3-nbformat python3-nbclient python3-ipykernel
)

source scripts/install_missing.sh

# build [TARGET]: everything (the tests and benchmarks too), or only TARGET and what it needs.
build() {
  cmake --preset release -DPython3_EXECUTABLE=/usr/bin/python3 >/dev/null
  cmake --build --preset release -j "$(nproc)" ${1:+--target "$1"}
}

cmd=${1:-}
shift || true
case "$cmd" in
  run)
    install_missing "${PACKAGES[@]}"
    build fleetsim >&2  # the CLI alone: the first table comes before the tests are compiled
    exec ./build/release/cli/fleetsim run scenarios/loxilb-3pod-long.yaml "$@"
    ;;
  test)
    install_missing "${PACKAGES[@]}"
    build
    # The tests replay the public traces and profiles of the project's shared/ folder, beside
    # this checkout unless -DFLEETSIM_SHARED_DIR says otherwise: say so rather than fail 24 tests.
    shared=$(sed -n 's/^FLEETSIM_SHARED_DIR:PATH=//p' build/release/CMakeCache.txt)
    if [ ! -d "$shared/data" ] || [ ! -d "$shared/validation" ]; then
      echo "scripts/dev.sh test: the tests read the public data in $shared (data/ and" \
        "validation/), which is missing; clone fleetsim beside the project's shared/ folder," \
        "or configure with -DFLEETSIM_SHARED_DIR=PATH" >&2
      exit 2
    fi
    ctest --preset release -j "$(nproc)"
    ;;
  *)
    echo "usage: scripts/dev.sh run [fleetsim run options] | scripts/dev.sh test" >&2
    exit 2
    ;;
esac
