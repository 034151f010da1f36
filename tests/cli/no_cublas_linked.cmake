# The pipetwin program must not link cuBLAS or the CUDA executor: they are loaded by --device cuda
# (libpipetwin_cuda.so). Checks the program's dynamic dependencies (ldd).  -DPROGRAM=<path>
execute_process(COMMAND ldd ${PROGRAM} RESULT_VARIABLE code OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT code EQUAL 0)
  message(FATAL_ERROR "ldd ${PROGRAM} failed: ${err}")
endif()
if(out MATCHES "cublas|pipetwin_cuda")
  message(FATAL_ERROR "${PROGRAM} links what only --device cuda needs:\n${out}")
endif()
