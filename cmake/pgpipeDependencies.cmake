set(pgpipe_dependency_components core pq ${PGPIPE_COMPONENTS})
include(pgpipeFindDependencies)
if(_pgpipe_dependency_error)
  message(FATAL_ERROR "${_pgpipe_dependency_error}")
endif()
if(PGPIPE_BUILD_TESTS)
  find_package(GTest REQUIRED)
endif()
if(PGPIPE_BUILD_BENCH)
  find_package(benchmark REQUIRED)
endif()
# Boost.JSON (compiled) for the programs' machine output (src/json_output):
# pgpipe-scram, pgpipe-bench and the tests. The library itself writes no JSON,
# so its consumers do not need it.
if(PGPIPE_BUILD_TOOLS OR PGPIPE_BUILD_BENCH OR PGPIPE_BUILD_TESTS)
  find_package(Boost 1.81 CONFIG REQUIRED COMPONENTS json)
endif()
