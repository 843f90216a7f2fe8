# cmake -P script behind the install-consumer test.
function(run)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "failed (${rc}): ${ARGN}")
  endif()
endfunction()

file(REMOVE_RECURSE ${PREFIX})
run(${CMAKE_COMMAND} --install ${PARPLAN_BUILD_DIR} --prefix ${PREFIX})
run(${CMAKE_COMMAND} -G ${GENERATOR} -S ${CONSUMER_SOURCE_DIR}
  -B ${CONSUMER_BUILD_DIR} -DCMAKE_BUILD_TYPE=Release
  -DCMAKE_PREFIX_PATH=${PREFIX} -DCMAKE_CXX_COMPILER=${CXX_COMPILER}
  -DCMAKE_CXX_COMPILER_LAUNCHER=${CXX_LAUNCHER}
  "-DCMAKE_EXE_LINKER_FLAGS=${LINKER_FLAGS}" "-DCMAKE_CXX_FLAGS=${CXX_FLAGS}")
run(${CMAKE_COMMAND} --build ${CONSUMER_BUILD_DIR})
run(${CONSUMER_BUILD_DIR}/consumer)
