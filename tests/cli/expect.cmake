# Runs one pipetwin command for ctest and checks how it ends.
#   -DCOMMAND=<;-list>  the command and its arguments
#   -DEXPECT_ERROR=ON   it must fail cleanly: exit code 1 or 2 (not a crash), stderr exactly one
#                       line starting "pipetwin: error:", and nothing on stdout
#   -DMATCH=<regex>     stdout (success) or stderr (error) must match
#   -DNOT_MATCH=<regex> and must not match this
#   -DWITHOUT_GPU=ON    a check of the machine without a CUDA device: where `pipetwin devices`
#                       lists one, print "skipped: ..." (ctest shows it skipped) and check nothing
if(WITHOUT_GPU)
  list(GET COMMAND 0 program)
  execute_process(COMMAND ${program} devices RESULT_VARIABLE devices_code OUTPUT_VARIABLE devices_out ERROR_QUIET)
  if(devices_out MATCHES "cuda:0: ")
    message("skipped: a CUDA device is here, and this checks the error without one")
    return()
  endif()
endif()
execute_process(COMMAND ${COMMAND} RESULT_VARIABLE code OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(EXPECT_ERROR)
  if(NOT code MATCHES "^[12]$")
    message(FATAL_ERROR "expected exit code 1 or 2, got '${code}'\nstderr: ${err}")
  endif()
  if(NOT err MATCHES "^pipetwin: error: [^\n]*\n$")
    message(FATAL_ERROR "expected one line 'pipetwin: error: ...' on stderr, got:\n${err}")
  endif()
  if(NOT out STREQUAL "")
    message(FATAL_ERROR "expected nothing on stdout, got:\n${out}")
  endif()
  set(text "${err}")
else()
  if(NOT code EQUAL 0)
    message(FATAL_ERROR "expected success, got exit code '${code}'\nstderr: ${err}")
  endif()
  set(text "${out}")
endif()
if(DEFINED MATCH AND NOT text MATCHES "${MATCH}")
  message(FATAL_ERROR "output does not match '${MATCH}':\n${text}")
endif()
if(NOT "${NOT_MATCH}" STREQUAL "" AND text MATCHES "${NOT_MATCH}")
  message(FATAL_ERROR "output matches '${NOT_MATCH}', which it must not:\n${text}")
endif()
