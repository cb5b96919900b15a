# Shared by the build and by the installed pgpipeConfig.cmake, so a consumer's
# find_package(pgpipe) finds exactly what pgpipe was built against, and only
# for the components it asked for: `pgpipe_dependency_components` lists them
# (core pq async blocking scram; unset means all). A consumer of async alone
# never looks for libpqxx, libidn or OpenSSL.
include(CMakeFindDependencyMacro)
if(NOT DEFINED pgpipe_dependency_components)
  set(pgpipe_dependency_components core pq async blocking scram)
endif()
macro(_pgpipe_wants out)
  set(${out} FALSE)
  foreach(_pgpipe_c ${ARGN})
    if(_pgpipe_c IN_LIST pgpipe_dependency_components)
      set(${out} TRUE)
    endif()
  endforeach()
endmacro()

_pgpipe_wants(_pgpipe_need_threads async blocking)
_pgpipe_wants(_pgpipe_need_libpq pq async blocking scram)
# Boost: uuid and JSON for the value types (core), Asio for async.
_pgpipe_wants(_pgpipe_need_boost core pq async blocking scram)
_pgpipe_wants(_pgpipe_need_libpqxx blocking)
_pgpipe_wants(_pgpipe_need_scram scram)

if(_pgpipe_need_threads)
  set(THREADS_PREFER_PTHREAD_FLAG ON)
  find_dependency(Threads)
endif()
if(_pgpipe_need_boost)
  find_dependency(Boost 1.81 CONFIG COMPONENTS headers json)
endif()
if(_pgpipe_need_scram)
  find_dependency(OpenSSL 3)
endif()
# libpq, libpqxx and libidn ship pkg-config files (not CMake packages) on Debian 12.
if(_pgpipe_need_libpq OR _pgpipe_need_libpqxx OR _pgpipe_need_scram)
  find_dependency(PkgConfig)
endif()
if(_pgpipe_need_libpq AND NOT TARGET PkgConfig::PGPIPE_LIBPQ)
  pkg_check_modules(PGPIPE_LIBPQ REQUIRED IMPORTED_TARGET libpq>=15)
endif()
if(_pgpipe_need_libpqxx AND NOT TARGET PkgConfig::PGPIPE_LIBPQXX)
  pkg_check_modules(PGPIPE_LIBPQXX REQUIRED IMPORTED_TARGET libpqxx>=6.4)
endif()
if(_pgpipe_need_scram AND NOT TARGET PkgConfig::PGPIPE_LIBIDN)
  pkg_check_modules(PGPIPE_LIBIDN REQUIRED IMPORTED_TARGET libidn>=1.38)
endif()
