#!/usr/bin/env bash
# The checks CI runs beside the README's test command (.ci/run), each on its own build tree:
#   scripts/checks.sh asan            the C++ tests under AddressSanitizer + UBSan (clang)
#   scripts/checks.sh tsan            the tests that run simulations on several threads, under TSan
#   scripts/checks.sh fuzz [SECONDS]  each libFuzzer target for SECONDS (default 20), from seeds
#   scripts/checks.sh install         the two ways to install, into temporary folders, used from /
#   scripts/checks.sh lint            formatting (clang-format), shell scripts (shellcheck), Python
#                                     (pyflakes): every tracked file
# A sanitizer report, a failing test or a fuzzer crash exits non-zero. docs/testing.md says more.
set -euo pipefail
cd "$(dirname "$0")/.."

# clang and its runtimes (ASan, UBSan, TSan, libFuzzer) beside what scripts/dev.sh installs.
PACKAGES=(clang libclang-rt-dev)

source scripts/install_missing.sh

configure() {
  cmake --preset "$1" -DPython3_EXECUTABLE=/usr/bin/python3 >/dev/null
}

# Sanitizers stop at the first report with the stack that caused it; leaks count as failures.
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1:strict_string_checks=1
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
export TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1

# Every test but the two that check documents against output (docs.in_sync re-runs the commands
# the docs quote; cli.validate_all_reports the whole validation): the code they run is run here
# by the golden, CLI and validation tests, and under ASan they alone would take ~15 minutes.
ASAN_SKIP='^(docs\.in_sync|cli\.validate_all_reports)$'

asan() {
  configure asan-ubsan
  cmake --build --preset asan-ubsan -j "$(nproc)"
  ctest --preset asan-ubsan -j "$(nproc)" -E "$ASAN_SKIP"
}

# The tests whose simulations run side by side on a thread pool (sim/fleet/parallel.h): the
# pool itself, and every command that hands it arms, points, checks or replicates. threads_test
# (tests/CMakeLists.txt) holds their files, so the job builds only those beside the library.
TSAN_FILTER="Parallel*:*ThreadCount*:*Threads*:Sweep.GridIsTheCartesian*:ValidateSeeds.ChecksSideBySide*"

tsan() {
  configure tsan
  cmake --build --preset tsan -j "$(nproc)" --target threads_test
  # Without address randomization: clang 14's TSan cannot map its shadow memory on kernels
  # that randomize more than 28 bits (vm.mmap_rnd_bits).
  setarch "$(uname -m)" -R build/tsan/tests/threads_test --gtest_filter="$TSAN_FILTER" \
    --gtest_brief=1
}

# Seeds: the fuzz/corpus/ files, and the shipped files of each format (whole up to 64 KB, else
# their first 64 lines: the long traces). Each target grows its own corpus in
# build/asan-ubsan/fuzz-corpus/TARGET.
seed() {
  local target=$1 dir=$2
  shift 2
  mkdir -p "$dir"
  [ -d "fuzz/corpus/$target" ] && cp -n fuzz/corpus/"$target"/* "$dir"/
  local f
  for f in "$@"; do
    [ -f "$f" ] || continue
    if [ "$(stat -c %s "$f")" -le 65536 ]; then
      cp "$f" "$dir/shipped-$(basename "$f")"
    else
      head -n 64 "$f" >"$dir/shipped-$(basename "$f")"
    fi
  done
  return 0
}

shared_dir() { sed -n 's/^FLEETSIM_SHARED_DIR:PATH=//p' build/asan-ubsan/CMakeCache.txt; }

fuzz() {
  local seconds=${1:-20}
  configure asan-ubsan
  cmake --build --preset asan-ubsan -j "$(nproc)" --target fuzz_targets
  local shared corpus=build/asan-ubsan/fuzz-corpus
  shared=$(shared_dir)
  seed scenario_fuzz $corpus/scenario_fuzz scenarios/*.yaml bench/scenarios/*.yaml \
    examples/calibration/scenario.yaml
  seed validation_fuzz $corpus/validation_fuzz validation/*.yaml
  seed calibration_fuzz $corpus/calibration_fuzz examples/calibration/*.yaml
  seed measurements_fuzz $corpus/measurements_fuzz examples/calibration/*.csv tests/data/calibration/*.csv
  seed azure_trace_fuzz $corpus/azure_trace_fuzz "$shared"/data/azure2023/*.csv
  seed mooncake_trace_fuzz $corpus/mooncake_trace_fuzz "$shared"/data/mooncake/*.jsonl
  seed burstgpt_trace_fuzz $corpus/burstgpt_trace_fuzz
  seed jsonl_trace_fuzz $corpus/jsonl_trace_fuzz
  seed openai_trace_fuzz $corpus/openai_trace_fuzz
  local target total=0 runs log
  for target in build/asan-ubsan/fuzz/*_fuzz; do
    target=$(basename "$target")
    log=build/asan-ubsan/fuzz-$target.log
    # A crash leaves its input in build/asan-ubsan/ (crash-*, timeout-*, oom-*) and fails here.
    if ! "build/asan-ubsan/fuzz/$target" -max_total_time="$seconds" -timeout=25 \
      -rss_limit_mb=2560 -print_final_stats=1 -artifact_prefix=build/asan-ubsan/ \
      "$corpus/$target" >"$log" 2>&1; then
      tail -n 60 "$log" >&2
      echo "fuzz: $target failed; its input is in build/asan-ubsan/ (log: $log)" >&2
      return 1
    fi
    runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log")
    total=$((total + runs))
    echo "fuzz: $target: $runs executions in ${seconds} s, no crash" >&2
  done
  echo "fuzz: $total executions in all" >&2
}

# What a user gets from each install, used from / as a user would: `cmake --install` of the
# release tree (scripts/dev.sh test built it) into a prefix, and `pip install .` into a virtual
# environment over Debian's packages (pip builds with that same tree).
install() {
  local tmp
  tmp=$(mktemp -d)
  trap 'rm -rf "$tmp"' RETURN
  cmake --install build/release --prefix "$tmp/prefix" >/dev/null
  local site=("$tmp"/prefix/lib/python3*/site-packages)
  (cd / && "$tmp/prefix/bin/fleetsim" --version)
  test -s "$tmp/prefix/share/bash-completion/completions/fleetsim"
  (cd / && PYTHONPATH="${site[0]}" /usr/bin/python3 -c "import fleetsim; print(len(fleetsim.gpus()), 'GPUs')")
  /usr/bin/python3 -m venv --system-site-packages "$tmp/venv"
  FLEETSIM_CMAKE_BUILD_DIR=build/release "$tmp/venv/bin/pip" install --quiet --no-build-isolation \
    --no-index .
  (cd / && "$tmp/venv/bin/fleetsim" --version)
  (cd / && "$tmp/venv/bin/python" -c "import fleetsim; print(fleetsim.__file__)") | grep -q "$tmp/venv"
  echo "install: cmake --install and pip install . both give fleetsim and import fleetsim" >&2
}

# Every tracked file as the house style has it: C++ as .clang-format formats it (a diff fails;
# `git clang-format` fixes it), shell scripts without shellcheck warnings, Python without
# pyflakes' (unused imports and names, undefined names).
lint() {
  local failed=0
  git ls-files -z '*.cc' '*.h' | xargs -0 clang-format --dry-run --Werror || failed=1
  git ls-files -z '*.sh' .ci/run | xargs -0 shellcheck -S warning || failed=1
  git ls-files -z '*.py' | xargs -0 /usr/bin/python3 -m pyflakes || failed=1
  if ((failed)); then
    echo "lint: the files above break the house style" >&2
    return 1
  fi
  echo "lint: every C++ file formatted, shell scripts and Python clean" >&2
}

cmd=${1:-}
shift || true
case "$cmd" in
  asan | tsan | fuzz)
    install_missing "${PACKAGES[@]}"
    "$cmd" "$@"
    ;;
  install)
    install_missing python3-venv python3-pip python3-setuptools python3-wheel
    install
    ;;
  lint)
    install_missing clang-format shellcheck python3-pyflakes
    lint
    ;;
  *)
    echo "usage: scripts/checks.sh asan | tsan | fuzz [SECONDS] | install | lint" >&2
    exit 2
    ;;
esac
