# gpupool_cli_link_dependencies(TARGET): links the `gpupool` command's libraries.
#
# With GPUPOOL_STATIC_CLI (the default) and every static archive present, the command links
# OpenSSL, Boost.JSON, yaml-cpp, zlib, libstdc++ and libgcc statically and fmt's implementation
# from source (cli/static/fmt_format.cpp; Debian ships no libfmt.a): the dynamic loader then maps
# only libc and libm, and a start-up pays no relocations and symbol lookups for the rest —
# `gpupool --version` 2.6 -> 1.2 ms of CPU, `gpupool get` 9.2 -> 5.6 ms (bench/README.md, command
# latency, session 15). libc stays shared (getaddrinfo's NSS modules need it). Only the command:
# libgpupool.so, the Python module and the exported CMake package link the shared libraries as
# before. Without an archive (or with a sanitizer build) the command links the shared libraries.
include(CheckLinkerFlag)

function(gpupool_cli_link_dependencies target)
  target_link_options(${target} PRIVATE -Wl,--as-needed -Wl,-O1)
  set(shared_deps Boost::json yaml-cpp fmt::fmt OpenSSL::SSL OpenSSL::Crypto ZLIB::ZLIB Threads::Threads)
  set(static_ok OFF)
  if(GPUPOOL_STATIC_CLI AND NOT GPUPOOL_SANITIZE AND NOT GPUPOOL_TSAN)
    set(static_ok ON)
    set(archives "")
    # Order matters for a static link: each archive before the ones it uses.
    foreach(lib boost_json boost_container yaml-cpp ssl crypto z)
      string(MAKE_C_IDENTIFIER "GPUPOOL_STATIC_LIB_${lib}" var)
      find_library(${var} NAMES lib${lib}.a)
      if(NOT ${var})
        set(static_ok OFF)
      endif()
      list(APPEND archives ${${var}})
    endforeach()
    check_linker_flag(CXX "-static-libstdc++" GPUPOOL_HAVE_STATIC_LIBSTDCXX)
    if(NOT GPUPOOL_HAVE_STATIC_LIBSTDCXX)
      set(static_ok OFF)
    endif()
  endif()
  if(NOT static_ok)
    if(GPUPOOL_STATIC_CLI AND NOT GPUPOOL_SANITIZE AND NOT GPUPOOL_TSAN)
      message(STATUS "gpupool command: a static archive is missing; linking the shared libraries")
    endif()
    target_link_libraries(${target} PRIVATE ${shared_deps} gpupool_warnings)
    return()
  endif()
  # The headers' include directories and definitions, without their shared libraries.
  foreach(dep Boost::json yaml-cpp fmt::fmt OpenSSL::SSL ZLIB::ZLIB)
    target_include_directories(${target} PRIVATE $<TARGET_PROPERTY:${dep},INTERFACE_INCLUDE_DIRECTORIES>)
    target_compile_definitions(${target} PRIVATE $<TARGET_PROPERTY:${dep},INTERFACE_COMPILE_DEFINITIONS>)
  endforeach()
  target_sources(${target} PRIVATE ${PROJECT_SOURCE_DIR}/cli/static/fmt_format.cpp)
  target_link_libraries(${target} PRIVATE ${archives} Threads::Threads ${CMAKE_DL_LIBS} gpupool_warnings)
  target_link_options(${target} PRIVATE -static-libstdc++ -static-libgcc)
endfunction()
