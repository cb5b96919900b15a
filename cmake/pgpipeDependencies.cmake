set(pgpipe_dependency_components core pq ${PGPIPE_COMPONENTS})
include(pgpipeFindDependencies)
if(_pgpipe_dependency_error)
  message(FATAL_ERROR "${_pgpipe_dependency_error}")
endif()
if(PGPIPE_BUILD_TESTS AND PGPIPE_GTEST_SOURCE_DIR)
  if(NOT EXISTS ${PGPIPE_GTEST_SOURCE_DIR}/googletest/CMakeLists.txt)
    message(FATAL_ERROR "PGPIPE_GTEST_SOURCE_DIR=${PGPIPE_GTEST_SOURCE_DIR} holds no GoogleTest sources "
                        "(no googletest/CMakeLists.txt)")
  endif()
  set(INSTALL_GTEST OFF CACHE BOOL "" FORCE)
  # SYSTEM: its headers, as an installed GoogleTest's, are outside our warnings;
  # -w: its own sources are too (they are not pgpipe's code).
  add_subdirectory(${PGPIPE_GTEST_SOURCE_DIR} ${PROJECT_BINARY_DIR}/googletest EXCLUDE_FROM_ALL SYSTEM)
  foreach(t gtest gtest_main gmock gmock_main)
    target_compile_options(${t} PRIVATE -w)
    if(NOT TARGET GTest::${t})  # GoogleTest 1.11+ defines them
      add_library(GTest::${t} ALIAS ${t})
    endif()
  endforeach()
elseif(PGPIPE_BUILD_TESTS)
  find_package(GTest REQUIRED)
endif()
if(PGPIPE_BUILD_BENCH)
  find_package(benchmark REQUIRED)
endif()
# Boost.JSON (compiled) for the programs' machine output (src/json_output):
# pgpipe-scram, pgpipe-bench and the tests. The library itself writes no JSON,
# so its consumers do not need it.
if((PGPIPE_BUILD_TOOLS OR PGPIPE_BUILD_BENCH OR PGPIPE_BUILD_TESTS) AND NOT PGPIPE_BOOST_JSON_HEADER_ONLY)
  find_package(Boost 1.81 CONFIG REQUIRED COMPONENTS json)
endif()
# Boost.JSON's compiled part, for the library and the programs: the installed
# Boost::json, or its sources compiled into pgpipe_core.
if(PGPIPE_BOOST_JSON_HEADER_ONLY)
  set(pgpipe_boost_json pgpipe_core)
else()
  set(pgpipe_boost_json Boost::json)
endif()
