# Shared by the build and by the installed pgpipeConfig.cmake, so a consumer's
# find_package(pgpipe) looks for exactly what pgpipe was built against, the
# same way, and only for the components it asked for:
# `pgpipe_dependency_components` lists them (core pq async blocking scram;
# unset means all). A consumer of async alone never looks for libpqxx, the
# SASLprep library or OpenSSL.
#
# How: each library's CMake package first (FindPostgreSQL's
# PostgreSQL::PostgreSQL, libpqxx's libpqxxConfig.cmake, FindICU's ICU::uc),
# then pkg-config, which is all Debian 12 ships for libpqxx 6.4 and libidn.
# PGPIPE_PKG_CONFIG_ONLY=ON skips the CMake packages (a prefix whose libpq or
# ICU only pkg-config knows). Whichever way finds a library, the targets link
# it through one name, pgpipe_dependency::<libpq|libpqxx|saslprep>, so an
# installed pgpipe works with either way on the consumer's machine.
include(CMakeFindDependencyMacro)
if(NOT DEFINED pgpipe_dependency_components)
  set(pgpipe_dependency_components core pq async blocking scram)
endif()
if(NOT DEFINED pgpipe_saslprep)
  set(pgpipe_saslprep "${PGPIPE_SASLPREP}")
endif()
macro(_pgpipe_wants out)
  set(${out} FALSE)
  foreach(_pgpipe_c ${ARGN})
    if(_pgpipe_c IN_LIST pgpipe_dependency_components)
      set(${out} TRUE)
    endif()
  endforeach()
endmacro()
# Says which way found a library, unless the caller asked for quiet.
macro(_pgpipe_found what version how)
  if(NOT pgpipe_FIND_QUIETLY)
    message(STATUS "pgpipe: ${what} ${version} (${how})")
  endif()
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
# Loaded whatever the way: the fallback may need it, and it is part of CMake.
find_dependency(PkgConfig)
# The supported ranges (README, "Dependencies"). A version outside them
# stops here with a message naming what was found and where, both when
# pgpipe is configured and in a consumer's find_package(pgpipe): the caller
# reads _pgpipe_dependency_error (this file returns early with it set).
#   libpq >= 14: pipeline mode, which the async driver is built on.
#   libpqxx 6.4, 7.x and 8.x. libpqxx 8 needs <format>: GCC 13, or clang with
#   libc++ (Debian 12: clang-16 -stdlib=libc++ -fexperimental-library, which
#   .ci/compat-libpqxx8 builds and tests with).
set(pgpipe_libpq_min 14)
set(pgpipe_libpqxx_min 6.4)
set(pgpipe_libpqxx_below 9)
set(_pgpipe_dependency_error "")

if(_pgpipe_need_libpq AND NOT TARGET pgpipe_dependency::libpq)
  set(_pgpipe_libpq_version "")
  if(NOT PGPIPE_PKG_CONFIG_ONLY)
    find_package(PostgreSQL QUIET)
  endif()
  if(TARGET PostgreSQL::PostgreSQL)
    set(_pgpipe_libpq_version "${PostgreSQL_VERSION_STRING}")
    set(_pgpipe_libpq_target PostgreSQL::PostgreSQL)
    set(_pgpipe_libpq_where "FindPostgreSQL, ${PostgreSQL_INCLUDE_DIR}/pg_config.h")
  else()
    pkg_check_modules(PGPIPE_LIBPQ REQUIRED IMPORTED_TARGET libpq)
    set(_pgpipe_libpq_version "${PGPIPE_LIBPQ_VERSION}")
    set(_pgpipe_libpq_target PkgConfig::PGPIPE_LIBPQ)
    pkg_get_variable(_pgpipe_pc libpq pcfiledir)
    set(_pgpipe_libpq_where "pkg-config, ${_pgpipe_pc}/libpq.pc")
  endif()
  if(_pgpipe_libpq_version VERSION_LESS pgpipe_libpq_min)
    string(CONCAT _pgpipe_dependency_error
      "pgpipe needs libpq ${pgpipe_libpq_min} or newer (pipeline mode); found libpq "
      "${_pgpipe_libpq_version} (${_pgpipe_libpq_where}). Install a newer libpq (its -dev package), point "
      "PostgreSQL_ROOT (CMake) or PKG_CONFIG_PATH (pkg-config) at it.")
    return()
  endif()
  _pgpipe_found(libpq "${_pgpipe_libpq_version}" "${_pgpipe_libpq_where}")
  add_library(pgpipe_dependency::libpq INTERFACE IMPORTED)
  target_link_libraries(pgpipe_dependency::libpq INTERFACE ${_pgpipe_libpq_target})
endif()

if(_pgpipe_need_libpqxx AND NOT TARGET pgpipe_dependency::libpqxx)
  if(NOT PGPIPE_PKG_CONFIG_ONLY)
    find_package(libpqxx CONFIG QUIET)
  endif()
  # libpqxx's version and headers, as cache entries whichever way found it:
  # pgpipe's install step and the CI scripts read them.
  if(TARGET libpqxx::pqxx)
    set(PGPIPE_LIBPQXX_VERSION "${libpqxx_VERSION}" CACHE INTERNAL "")
    get_target_property(_pgpipe_inc libpqxx::pqxx INTERFACE_INCLUDE_DIRECTORIES)
    set(PGPIPE_LIBPQXX_INCLUDEDIR "${_pgpipe_inc}" CACHE INTERNAL "")
    set(_pgpipe_libpqxx_target libpqxx::pqxx)
    set(_pgpipe_libpqxx_where "CMake package, ${libpqxx_DIR}")
  else()
    pkg_check_modules(PGPIPE_LIBPQXX REQUIRED IMPORTED_TARGET libpqxx)
    set(_pgpipe_libpqxx_target PkgConfig::PGPIPE_LIBPQXX)
    pkg_get_variable(_pgpipe_pc libpqxx pcfiledir)
    set(_pgpipe_libpqxx_where "pkg-config, ${_pgpipe_pc}/libpqxx.pc")
  endif()
  if(PGPIPE_LIBPQXX_VERSION VERSION_LESS pgpipe_libpqxx_min OR
     NOT PGPIPE_LIBPQXX_VERSION VERSION_LESS pgpipe_libpqxx_below)
    string(CONCAT _pgpipe_dependency_error
      "pgpipe's blocking driver supports libpqxx ${pgpipe_libpqxx_min} up to ${pgpipe_libpqxx_below} (not "
      "included); found libpqxx ${PGPIPE_LIBPQXX_VERSION} (${_pgpipe_libpqxx_where}).")
    string(APPEND _pgpipe_dependency_error
      " Put a supported libpqxx first in CMAKE_PREFIX_PATH or PKG_CONFIG_PATH, or use the async component "
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
        "this pgpipe was built with libpqxx ${pgpipe_built_with_libpqxx}, and found libpqxx "
        "${PGPIPE_LIBPQXX_VERSION} (${_pgpipe_libpqxx_where}): it needs libpqxx ${_pgpipe_built_series}.x "
        "(or a pgpipe built against ${PGPIPE_LIBPQXX_VERSION}).")
      return()
    endif()
  endif()
  _pgpipe_found(libpqxx "${PGPIPE_LIBPQXX_VERSION}" "${_pgpipe_libpqxx_where}")
  add_library(pgpipe_dependency::libpqxx INTERFACE IMPORTED)
  target_link_libraries(pgpipe_dependency::libpqxx INTERFACE ${_pgpipe_libpqxx_target})
endif()

# SASLprep's Unicode tables (src/scram/saslprep_backend.hpp): ICU (uc) or libidn 1.x.
if(_pgpipe_need_scram AND NOT TARGET pgpipe_dependency::saslprep)
  if(pgpipe_saslprep STREQUAL "icu")
    if(NOT PGPIPE_PKG_CONFIG_ONLY)
      find_package(ICU QUIET COMPONENTS uc data)
    endif()
    # data: the profile's tables (libicudata), named for static ICU builds.
    if(TARGET ICU::uc AND TARGET ICU::data)
      set(_pgpipe_saslprep_target ICU::uc ICU::data)
      _pgpipe_found("ICU (SASLprep)" "${ICU_VERSION}" "FindICU, ${ICU_INCLUDE_DIR}")
    else()
      pkg_check_modules(PGPIPE_ICU_UC REQUIRED IMPORTED_TARGET icu-uc)
      set(_pgpipe_saslprep_target PkgConfig::PGPIPE_ICU_UC)
      _pgpipe_found("ICU (SASLprep)" "${PGPIPE_ICU_UC_VERSION}" "pkg-config")
    endif()
  elseif(pgpipe_saslprep STREQUAL "libidn")
    # libidn 1.x ships no CMake package.
    pkg_check_modules(PGPIPE_LIBIDN REQUIRED IMPORTED_TARGET libidn>=1.38)
    set(_pgpipe_saslprep_target PkgConfig::PGPIPE_LIBIDN)
    _pgpipe_found("libidn (SASLprep)" "${PGPIPE_LIBIDN_VERSION}" "pkg-config")
  else()
    set(_pgpipe_dependency_error "PGPIPE_SASLPREP must be icu or libidn, not '${pgpipe_saslprep}'")
    return()
  endif()
  add_library(pgpipe_dependency::saslprep INTERFACE IMPORTED)
  target_link_libraries(pgpipe_dependency::saslprep INTERFACE ${_pgpipe_saslprep_target})
endif()
