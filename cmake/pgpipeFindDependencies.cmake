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
# The supported ranges (README, "Dependencies"). A version outside them
# stops here with a message naming what was found and where, both when
# pgpipe is configured and in a consumer's find_package(pgpipe): the caller
# reads _pgpipe_dependency_error (this file returns early with it set).
#   libpq >= 14: pipeline mode, which the async driver is built on.
#   libpqxx 6.4 and 7.x: libpqxx 8 needs <format> (GCC 13 or libc++), which
#   Debian 12's g++ 12 lacks; it is neither built nor tested.
set(pgpipe_libpq_min 14)
set(pgpipe_libpqxx_min 6.4)
set(pgpipe_libpqxx_below 8)
set(_pgpipe_dependency_error "")
if(_pgpipe_need_libpq AND NOT TARGET PkgConfig::PGPIPE_LIBPQ)
  pkg_check_modules(PGPIPE_LIBPQ REQUIRED IMPORTED_TARGET libpq)
  if(PGPIPE_LIBPQ_VERSION VERSION_LESS pgpipe_libpq_min)
    pkg_get_variable(_pgpipe_pc libpq pcfiledir)
    string(CONCAT _pgpipe_dependency_error
      "pgpipe needs libpq ${pgpipe_libpq_min} or newer (pipeline mode); pkg-config found libpq "
      "${PGPIPE_LIBPQ_VERSION} (${_pgpipe_pc}/libpq.pc). Install a newer libpq (its -dev package) or put "
      "its pkgconfig directory first in PKG_CONFIG_PATH.")
    return()
  endif()
endif()
if(_pgpipe_need_libpqxx AND NOT TARGET PkgConfig::PGPIPE_LIBPQXX)
  pkg_check_modules(PGPIPE_LIBPQXX REQUIRED IMPORTED_TARGET libpqxx)
  pkg_get_variable(_pgpipe_pc libpqxx pcfiledir)
  if(PGPIPE_LIBPQXX_VERSION VERSION_LESS pgpipe_libpqxx_min OR
     NOT PGPIPE_LIBPQXX_VERSION VERSION_LESS pgpipe_libpqxx_below)
    string(CONCAT _pgpipe_dependency_error
      "pgpipe's blocking driver supports libpqxx ${pgpipe_libpqxx_min} up to ${pgpipe_libpqxx_below} (not "
      "included); pkg-config found libpqxx ${PGPIPE_LIBPQXX_VERSION} (${_pgpipe_pc}/libpqxx.pc).")
    if(NOT PGPIPE_LIBPQXX_VERSION VERSION_LESS pgpipe_libpqxx_below)
      string(APPEND _pgpipe_dependency_error
        " libpqxx 8 needs <format> (GCC 13 or libc++) and is not supported yet.")
    endif()
    string(APPEND _pgpipe_dependency_error
      " Put a supported libpqxx's pkgconfig directory first in PKG_CONFIG_PATH, or use the async component "
      "alone: find_package(pgpipe COMPONENTS async) needs no libpqxx.")
    return()
  endif()
  # libpqxx has no stable ABI across minor versions (libpqxx-7.8.so,
  # libpqxx-7.10.so): an installed pgpipe links the series it was built with.
  if(DEFINED pgpipe_built_with_libpqxx AND NOT pgpipe_built_with_libpqxx STREQUAL "")
    string(REGEX MATCH "^[0-9]+\\.[0-9]+" _pgpipe_built_series "${pgpipe_built_with_libpqxx}")
    string(REGEX MATCH "^[0-9]+\\.[0-9]+" _pgpipe_found_series "${PGPIPE_LIBPQXX_VERSION}")
    if(NOT _pgpipe_built_series STREQUAL _pgpipe_found_series)
      string(CONCAT _pgpipe_dependency_error
        "this pgpipe was built with libpqxx ${pgpipe_built_with_libpqxx}, and pkg-config found libpqxx "
        "${PGPIPE_LIBPQXX_VERSION} (${_pgpipe_pc}/libpqxx.pc): it needs libpqxx ${_pgpipe_built_series}.x "
        "(or a pgpipe built against ${PGPIPE_LIBPQXX_VERSION}).")
      return()
    endif()
  endif()
endif()
if(_pgpipe_need_scram AND NOT TARGET PkgConfig::PGPIPE_LIBIDN)
  pkg_check_modules(PGPIPE_LIBIDN REQUIRED IMPORTED_TARGET libidn>=1.38)
endif()
