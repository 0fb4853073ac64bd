# The documents that quote simulator output must quote what the simulator prints now:
#  * README.md's worked example: the code block starting "scenario loxilb-3pod-long" must equal
#    `fleetsim run scenarios/loxilb-3pod-long.yaml` (trailing spaces ignored);
#  * docs/fidelity.md must equal the report `fleetsim validate --out DIR` writes.
# Run with -DFLEETSIM=<binary> -DROOT=<repository root> -DWORK=<scratch directory>.
function(normalise text out)
  string(REGEX REPLACE "[ ]+\n" "\n" text "${text}")
  string(REGEX REPLACE "[ \n]+$" "" text "${text}")
  set(${out} "${text}" PARENT_SCOPE)
endfunction()

execute_process(COMMAND ${FLEETSIM} run scenarios/loxilb-3pod-long.yaml
                WORKING_DIRECTORY ${ROOT} OUTPUT_VARIABLE run_out RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "fleetsim run failed (${rc})")
endif()
file(READ ${ROOT}/README.md readme)
string(FIND "${readme}" "```\nscenario loxilb-3pod-long" start)
if(start EQUAL -1)
  message(FATAL_ERROR "README.md: no code block starting 'scenario loxilb-3pod-long'")
endif()
math(EXPR start "${start} + 4")
string(SUBSTRING "${readme}" ${start} -1 rest)
string(FIND "${rest}" "```" end)
string(SUBSTRING "${rest}" 0 ${end} quoted)
normalise("${quoted}" quoted)
normalise("${run_out}" run_out)
if(NOT quoted STREQUAL run_out)
  message(FATAL_ERROR "README.md's worked example differs from `fleetsim run "
                      "scenarios/loxilb-3pod-long.yaml`; paste the new output.\n"
                      "--- README\n${quoted}\n--- fleetsim\n${run_out}")
endif()

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
