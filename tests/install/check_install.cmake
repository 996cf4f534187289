# Installs the build tree into a scratch prefix, then configures and builds examples/cpp against
# it twice: with find_package(gpupool CONFIG) and with pkg-config. Runs the resulting program.
set(prefix ${BINARY_DIR}/install-test/prefix)
file(REMOVE_RECURSE ${BINARY_DIR}/install-test)
execute_process(COMMAND ${CMAKE_COMMAND} --install ${BINARY_DIR} --prefix ${prefix} RESULT_VARIABLE rc OUTPUT_QUIET)
if(rc)
  message(FATAL_ERROR "cmake --install failed: ${rc}")
endif()
foreach(f include/gpupool/error.hpp lib/cmake/gpupool/gpupoolConfig.cmake lib/pkgconfig/gpupool.pc)
  if(NOT EXISTS ${prefix}/${f})
    message(FATAL_ERROR "not installed: ${f}")
  endif()
endforeach()
set(build ${BINARY_DIR}/install-test/build)
execute_process(COMMAND ${CMAKE_COMMAND} -S ${SOURCE_DIR}/examples/cpp -B ${build} -G Ninja
  -DCMAKE_CXX_COMPILER=${CXX} -DCMAKE_PREFIX_PATH=${prefix} RESULT_VARIABLE rc)
if(rc)
  message(FATAL_ERROR "configuring examples/cpp against the installed package failed")
endif()
execute_process(COMMAND ${CMAKE_COMMAND} --build ${build} RESULT_VARIABLE rc)
if(rc)
  message(FATAL_ERROR "building examples/cpp against the installed package failed")
endif()
execute_process(COMMAND ${build}/render_seed_job OUTPUT_VARIABLE out RESULT_VARIABLE rc)
if(rc)
  message(FATAL_ERROR "the example program failed: ${rc}")
endif()
if(NOT out MATCHES "ssd_node")
  message(FATAL_ERROR "the example's output lacks the toleration:\n${out}")
endif()
# The seed's walkthrough against an embedded cluster: with --toleration ssd_node every instance
# lands on the one node tainted ssd_node, and none elsewhere.
execute_process(COMMAND ${build}/seed_scenario OUTPUT_VARIABLE out ERROR_VARIABLE err RESULT_VARIABLE rc)
if(rc OR NOT out MATCHES "mpi-dist-launcher[^\n]* landed on cn-beijing\\.192\\.168\\.3\\.230 "
   OR NOT out MATCHES "mpi-dist-worker-0[^\n]* landed on cn-beijing\\.192\\.168\\.3\\.230 "
   OR out MATCHES "landed on cn-beijing\\.192\\.168\\.3\\.22")
  message(FATAL_ERROR "the seed scenario example failed: ${rc}\n${out}${err}")
endif()
# pkg-config consumer: compile the same example with the flags gpupool.pc gives.
execute_process(COMMAND ${CMAKE_COMMAND} -E env PKG_CONFIG_PATH=${prefix}/lib/pkgconfig pkg-config --cflags --libs gpupool
  OUTPUT_VARIABLE flags OUTPUT_STRIP_TRAILING_WHITESPACE RESULT_VARIABLE rc)
if(rc)
  message(FATAL_ERROR "pkg-config does not know the installed gpupool")
endif()
separate_arguments(flags UNIX_COMMAND "${flags}")
execute_process(COMMAND ${CXX} ${SOURCE_DIR}/examples/cpp/render_seed_job.cpp ${flags} -Wl,-rpath,${prefix}/lib
  -o ${build}/render_seed_job_pc RESULT_VARIABLE rc)
if(rc)
  message(FATAL_ERROR "compiling against pkg-config flags failed")
endif()
execute_process(COMMAND ${build}/render_seed_job_pc OUTPUT_VARIABLE out RESULT_VARIABLE rc)
if(rc OR NOT out MATCHES "ssd_node")
  message(FATAL_ERROR "the pkg-config build of the example failed: ${rc}\n${out}")
endif()
# The build tree's gpupool.pc: every directory it names exists, and the example builds with it.
execute_process(COMMAND ${CMAKE_COMMAND} -E env PKG_CONFIG_PATH=${BINARY_DIR} pkg-config --variable=includedir gpupool
  OUTPUT_VARIABLE inc OUTPUT_STRIP_TRAILING_WHITESPACE RESULT_VARIABLE rc)
execute_process(COMMAND ${CMAKE_COMMAND} -E env PKG_CONFIG_PATH=${BINARY_DIR} pkg-config --variable=libdir gpupool
  OUTPUT_VARIABLE lib OUTPUT_STRIP_TRAILING_WHITESPACE)
if(rc OR NOT IS_DIRECTORY "${inc}" OR NOT EXISTS "${inc}/gpupool/error.hpp" OR NOT IS_DIRECTORY "${lib}")
  message(FATAL_ERROR "the build tree's gpupool.pc names directories that do not exist: includedir='${inc}' libdir='${lib}'")
endif()
execute_process(COMMAND ${CMAKE_COMMAND} -E env PKG_CONFIG_PATH=${BINARY_DIR} pkg-config --cflags --libs gpupool
  OUTPUT_VARIABLE flags OUTPUT_STRIP_TRAILING_WHITESPACE)
separate_arguments(flags UNIX_COMMAND "${flags}")
execute_process(COMMAND ${CXX} ${SOURCE_DIR}/examples/cpp/render_seed_job.cpp ${flags} -Wl,-rpath,${lib}
  -o ${build}/render_seed_job_buildtree RESULT_VARIABLE rc)
execute_process(COMMAND ${build}/render_seed_job_buildtree OUTPUT_VARIABLE out RESULT_VARIABLE rc2)
if(rc OR rc2 OR NOT out MATCHES "ssd_node")
  message(FATAL_ERROR "the example built with the build tree's gpupool.pc failed: ${rc} ${rc2}\n${out}")
endif()
