#!/usr/bin/env bash
# The bash completion `fleetsim completion bash` writes, loaded as bash-completion loads it,
# completes the commands, each command's options, and the values of options with fixed choices.
# Usage: tests/completion_test.sh FLEETSIM
set -uo pipefail
fleetsim=$1
# shellcheck disable=SC1091
source /usr/share/bash-completion/bash_completion || exit 1
# shellcheck disable=SC1090
source <("$fleetsim" completion bash) || exit 1

# What completing the end of LINE (as typed, a trailing space included) offers.
completions() {
  COMP_LINE=$1
  COMP_POINT=${#COMP_LINE}
  read -ra COMP_WORDS <<<"$COMP_LINE"
  [[ $COMP_LINE == *" " ]] && COMP_WORDS+=("")
  COMP_CWORD=$((${#COMP_WORDS[@]} - 1))
  COMPREPLY=()
  _fleetsim
  echo "${COMPREPLY[*]}"
}

failed=0
expect() {
  local got
  got=$(completions "$1")
  if [[ $got != "$2" ]]; then
    echo "completing '$1': expected '$2', got '$got'"
    failed=1
  fi
}

expect "fleetsim ru" "run"
expect "fleetsim ca" "campaign calibrate"
expect "fleetsim run x.yaml --for" "--format"
expect "fleetsim run x.yaml --format " "table json csv"
expect "fleetsim sweep x.yaml --va" "--vary"
expect "fleetsim list " "policies workloads gpus models metrics"
expect "fleetsim --progress " "auto always never"
expect "fleetsim completion " "bash"
exit $failed
