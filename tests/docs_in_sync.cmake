# The documents that quote simulator output must quote what the simulator prints now:
#  * README.md's worked example: the code block starting "scenario loxilb-3pod-long" must equal
#    `fleetsim run scenarios/loxilb-3pod-long.yaml` (trailing spaces ignored);
#  * docs/campaign.md's worked example: `fleetsim campaign scenarios/loxilb-3pod-long.yaml`;
#  * docs/plan.md's worked examples: its `fleetsim plan` command, and `fleetsim plan --window` of
#    scenarios/scale-to-zero.yaml and of one pool of scenarios/pd-autoscale.yaml;
#  * docs/autoscaling.md's four examples: `fleetsim run` of scenarios/autoscale-burst.yaml,
#    scenarios/azure-conv-autoscale.yaml, scenarios/pd-autoscale.yaml and
#    scenarios/scale-to-zero.yaml, and its sweep over the cooldown;
#  * docs/kv-offload.md's example: `fleetsim sweep scenarios/mooncake-host-offload.yaml`;
#  * docs/speculative-decoding.md's example: `fleetsim sweep scenarios/spec-decode.yaml`;
#  * docs/architectures.md's example: `fleetsim sweep scenarios/gpt-oss-gpus.yaml`;
#  * docs/scenarios.md's three: `fleetsim sweep scenarios/colocated-sm120.yaml`, the same over
#    the MPS SM cap, and under MIG;
#  * docs/pd-disaggregation.md's five: `fleetsim run`, `fleetsim sweep` and two `fleetsim plan`s
#    (one pool, both pools) of scenarios/pd-disaggregation.yaml, and `fleetsim sweep
#    scenarios/pd-prefill-link.yaml`;
#  * docs/scenarios.md's sweeps of scenarios/azure-conv-day.yaml over the pod count and of
#    scenarios/pipeline-deepseek-v3.yaml, and
#    docs/calibration.md's fitted form of the example steps and its fit to the example figures
#    (each block with its command);
#  * docs/failures.md's example: `fleetsim run scenarios/outlier-ejection.yaml`;
#  * docs/fidelity.md must equal the report `fleetsim validate --out DIR` writes, and README.md's
#    table by GPU must equal its table.
# Run with -DFLEETSIM=<binary> -DROOT=<repository root> -DWORK=<scratch directory>.
function(normalise text out)
  string(REGEX REPLACE "[ ]+\n" "\n" text "${text}")
  string(REGEX REPLACE "[ \n]+$" "" text "${text}")
  set(${out} "${text}" PARENT_SCOPE)
endfunction()

# The code block of `doc` starting with `first_line` must equal what `fleetsim ARGN` prints. A
# first line "$ fleetsim ..." is the command the block shows above its output.
function(check_quoted doc first_line)
  execute_process(COMMAND ${FLEETSIM} ${ARGN} WORKING_DIRECTORY ${ROOT} OUTPUT_VARIABLE out
                  RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "fleetsim ${ARGN} failed (${rc})")
  endif()
  string(FIND "${first_line}" "$ " prompt)
  if(prompt EQUAL 0)
    set(out "${first_line}\n${out}")
  endif()
  file(READ ${ROOT}/${doc} text)
  string(FIND "${text}" "```\n${first_line}" start)
  if(start EQUAL -1)
    message(FATAL_ERROR "${doc}: no code block starting '${first_line}'")
  endif()
  math(EXPR start "${start} + 4")
  string(SUBSTRING "${text}" ${start} -1 rest)
  string(FIND "${rest}" "```" end)
  string(SUBSTRING "${rest}" 0 ${end} quoted)
  normalise("${quoted}" quoted)
  normalise("${out}" out)
  if(NOT quoted STREQUAL out)
    message(FATAL_ERROR "${doc}'s example differs from `fleetsim ${ARGN}`; paste the new "
                        "output.\n--- ${doc}\n${quoted}\n--- fleetsim\n${out}")
  endif()
endfunction()

check_quoted(README.md "scenario loxilb-3pod-long" run scenarios/loxilb-3pod-long.yaml)
check_quoted(docs/failures.md "scenario outlier-ejection" run scenarios/outlier-ejection.yaml)
check_quoted(docs/campaign.md "campaign loxilb-3pod-long" campaign scenarios/loxilb-3pod-long.yaml)
check_quoted(docs/autoscaling.md "scenario autoscale-burst" run scenarios/autoscale-burst.yaml)
check_quoted(docs/autoscaling.md "scenario azure-conv-autoscale" run scenarios/azure-conv-autoscale.yaml)
check_quoted(docs/autoscaling.md "scenario pd-autoscale" run scenarios/pd-autoscale.yaml)
check_quoted(docs/autoscaling.md "scenario scale-to-zero" run scenarios/scale-to-zero.yaml)
check_quoted(docs/autoscaling.md "sweep scale-to-zero" sweep scenarios/scale-to-zero.yaml
             --vary autoscaling.cooldown_s=60,300,900,1800)
check_quoted(docs/kv-offload.md "sweep mooncake-host-offload" sweep
             scenarios/mooncake-host-offload.yaml)
check_quoted(docs/speculative-decoding.md "sweep spec-decode" sweep scenarios/spec-decode.yaml)
check_quoted(docs/architectures.md "sweep gpt-oss-gpus" sweep scenarios/gpt-oss-gpus.yaml)
check_quoted(docs/scenarios.md "sweep colocated-sm120 (4 points)" sweep
             scenarios/colocated-sm120.yaml)
check_quoted(docs/scenarios.md "sweep colocated-sm120 (2 points)" sweep
             scenarios/colocated-sm120.yaml --vary fleet.mps_active_thread_percentage=0,100)
check_quoted(docs/scenarios.md "sweep colocated-sm120 (1 point)" sweep
             scenarios/colocated-sm120.yaml --vary fleet.gpu_sharing=mig
             --vary fleet.server.gpu_memory_utilization=0.9)
check_quoted(docs/pd-disaggregation.md "scenario pd-disaggregation" run
             scenarios/pd-disaggregation.yaml)
check_quoted(docs/pd-disaggregation.md "sweep pd-disaggregation" sweep
             scenarios/pd-disaggregation.yaml)
check_quoted(docs/pd-disaggregation.md "sweep pd-prefill-link" sweep
             scenarios/pd-prefill-link.yaml)
check_quoted(docs/pd-disaggregation.md "plan pd-disaggregation: smallest" plan
             scenarios/pd-disaggregation.yaml --path fleet.pools.prefill.pods
             --set "slo={ttft_ms: 3000, tpot_ms: 50}" --max-pods 8)
check_quoted(docs/pd-disaggregation.md "plan pd-disaggregation: fewest" plan
             scenarios/pd-disaggregation.yaml --path fleet.pools.prefill.pods
             --path fleet.pools.decode.pods --set "slo={ttft_ms: 3000, tpot_ms: 50}" --max-pods 8)
check_quoted(docs/plan.md "plan scale-to-zero: fewest" plan scenarios/scale-to-zero.yaml
             --window 600 --max-pods 4 --set "arms=[{name: lo, policy: least_outstanding}]")
check_quoted(docs/plan.md "plan pd-autoscale: fewest fleet.pools.prefill.pods" plan
             scenarios/pd-autoscale.yaml --window 600 --path fleet.pools.prefill.pods
             --max-pods 8 --set fleet.pools.decode.pods=3
             "--set" "arms=[{name: lo, policy: least_outstanding}]")
check_quoted(docs/scenarios.md
             "$ fleetsim sweep scenarios/azure-conv-day.yaml --vary fleet.pods=4,6,8,10"
             sweep scenarios/azure-conv-day.yaml --vary fleet.pods=4,6,8,10)
check_quoted(docs/scenarios.md "$ fleetsim sweep scenarios/pipeline-deepseek-v3.yaml"
             sweep scenarios/pipeline-deepseek-v3.yaml)
check_quoted(docs/calibration.md
             "$ fleetsim calibrate examples/calibration/a100-llama-3.1-8b-steps.csv --form fitted"
             calibrate examples/calibration/a100-llama-3.1-8b-steps.csv --form fitted)
check_quoted(docs/calibration.md
             "$ fleetsim calibrate --against examples/calibration/h100-qwen3-14b-figures.yaml"
             calibrate --against examples/calibration/h100-qwen3-14b-figures.yaml)
check_quoted(docs/plan.md "plan loxilb-3pod-long" plan scenarios/loxilb-3pod-long.yaml
             --set "slo={ttft_ms: 1000, tpot_ms: 60}" --max-pods 16)

file(REMOVE_RECURSE ${WORK})
execute_process(COMMAND ${FLEETSIM} validate --out ${WORK}
                WORKING_DIRECTORY ${ROOT} OUTPUT_QUIET RESULT_VARIABLE rc)
if(NOT EXISTS ${WORK}/fidelity.md)
  message(FATAL_ERROR "fleetsim validate wrote no report (exit ${rc})")
endif()
file(READ ${WORK}/fidelity.md fresh)
file(READ ${ROOT}/docs/fidelity.md committed)
if(NOT fresh STREQUAL committed)
  message(FATAL_ERROR "docs/fidelity.md is stale: run scripts/regen-fidelity.sh")
endif()

# README.md's "How far to trust it" quotes the report's table by GPU.
function(gpu_table text out)
  string(FIND "${text}" "| GPU | inside" start)
  if(start EQUAL -1)
    set(${out} "" PARENT_SCOPE)
    return()
  endif()
  string(SUBSTRING "${text}" ${start} -1 rest)
  string(FIND "${rest}" "\n\n" end)
  string(SUBSTRING "${rest}" 0 ${end} table)
  set(${out} "${table}" PARENT_SCOPE)
endfunction()
file(READ ${ROOT}/README.md readme)
gpu_table("${readme}" quoted)
gpu_table("${fresh}" generated)
if(quoted STREQUAL "" OR NOT quoted STREQUAL generated)
  message(FATAL_ERROR "README.md's table by GPU differs from docs/fidelity.md's; paste it:\n"
                      "${generated}")
endif()
