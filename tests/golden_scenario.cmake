# One shipped scenario, run to its end on one thread, must print exactly its golden result
# (tests/golden/NAME.json, written by scripts/regen-golden.sh with one thread per arm): a change
# of behaviour anywhere shows up as a diff here, and so would a result that depended on the
# thread count.
# Run with -DFLEETSIM=<binary> -DROOT=<repository root> -DNAME=<scenario stem> -DWORK=<scratch dir>.
set(golden ${ROOT}/tests/golden/${NAME}.json)
execute_process(COMMAND ${FLEETSIM} run scenarios/${NAME}.yaml --format json --threads 1
                WORKING_DIRECTORY ${ROOT} OUTPUT_VARIABLE got ERROR_VARIABLE err RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "fleetsim run scenarios/${NAME}.yaml failed (${rc}):\n${err}")
endif()
if(NOT EXISTS ${golden})
  message(FATAL_ERROR "no golden result for scenarios/${NAME}.yaml; run scripts/regen-golden.sh")
endif()
file(READ ${golden} want)
if(NOT got STREQUAL want)
  file(MAKE_DIRECTORY ${WORK})
  file(WRITE ${WORK}/${NAME}.json "${got}")
  # The first lines of the diff, printed as they are (a message would rewrap them).
  execute_process(COMMAND diff -u ${golden} ${WORK}/${NAME}.json COMMAND head -n 80)
  message(FATAL_ERROR "scenarios/${NAME}.yaml's result differs from tests/golden/${NAME}.json. "
                      "If the change is intended, run scripts/regen-golden.sh and review the "
                      "diff before committing it (the whole result: ${WORK}/${NAME}.json).")
endif()
