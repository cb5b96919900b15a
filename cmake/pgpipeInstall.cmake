include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

# One export set (and targets file) per component, so pgpipeConfig.cmake loads
# only what a consumer asked for; pgpipe::pgpipe (all) is its own set.
set(pgpipe_cmake_dir ${CMAKE_INSTALL_LIBDIR}/cmake/pgpipe)
set(pgpipe_installed_components core pq ${PGPIPE_COMPONENTS})
if(pgpipe_all_components)
  list(APPEND pgpipe_installed_components pgpipe)
endif()
foreach(component IN LISTS pgpipe_installed_components)
  if(component STREQUAL "pgpipe")
    set(target pgpipe)
  else()
    set(target pgpipe_${component})
  endif()
  install(TARGETS ${target} EXPORT pgpipe-${component}-targets
          ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
          LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
          RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR}
          INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
  install(EXPORT pgpipe-${component}-targets NAMESPACE pgpipe:: DESTINATION ${pgpipe_cmake_dir})
endforeach()
install(DIRECTORY ${PROJECT_SOURCE_DIR}/include/pgpipe DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})

configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/pgpipeConfig.cmake.in
  ${PROJECT_BINARY_DIR}/pgpipeConfig.cmake INSTALL_DESTINATION ${pgpipe_cmake_dir})
write_basic_package_version_file(${PROJECT_BINARY_DIR}/pgpipeConfigVersion.cmake
  COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/pgpipeConfig.cmake ${PROJECT_BINARY_DIR}/pgpipeConfigVersion.cmake
              ${PROJECT_SOURCE_DIR}/cmake/pgpipeFindDependencies.cmake
        DESTINATION ${pgpipe_cmake_dir})

# pkg-config: pgpipe-<component>.pc for each component, pgpipe.pc for all.
# The libraries are static, so each file's Requires carries what its archive
# needs at link time.
file(RELATIVE_PATH PGPIPE_PC_PREFIX_FROM_PCDIR /prefix/${CMAKE_INSTALL_LIBDIR}/pkgconfig /prefix)
# The libpqxx series pgpipe was built with (no stable ABI across minor
# versions), as pgpipeConfig.cmake checks it.
if("blocking" IN_LIST PGPIPE_COMPONENTS)
  string(REGEX MATCH "^[0-9]+" pc_libpqxx_major "${PGPIPE_LIBPQXX_VERSION}")
  string(REGEX MATCH "^[0-9]+\\.([0-9]+)" pc_libpqxx_series "${PGPIPE_LIBPQXX_VERSION}")
  math(EXPR pc_libpqxx_next_minor "${CMAKE_MATCH_1} + 1")
  set(pc_libpqxx_requires "libpqxx >= ${pc_libpqxx_series}, libpqxx < ${pc_libpqxx_major}.${pc_libpqxx_next_minor}")
endif()
set(pc_core_requires "")
set(pc_core_libs "-lpgpipe_core -lboost_json")  # the value types use Boost.JSON
if(PGPIPE_BOOST_JSON_HEADER_ONLY)
  set(pc_core_libs "-lpgpipe_core")  # Boost.JSON compiled into it
endif()
set(pc_pq_requires "pgpipe-core = ${PROJECT_VERSION}, libpq >= ${pgpipe_libpq_min}")
set(pc_pq_libs "-lpgpipe_pq")
set(pc_async_requires "pgpipe-pq = ${PROJECT_VERSION}, pgpipe-core = ${PROJECT_VERSION}, libpq >= ${pgpipe_libpq_min}")
set(pc_async_libs "-lpgpipe_async -pthread")
set(pc_blocking_requires "pgpipe-pq = ${PROJECT_VERSION}, pgpipe-core = ${PROJECT_VERSION}, ${pc_libpqxx_requires}, libpq >= ${pgpipe_libpq_min}")
set(pc_blocking_libs "-lpgpipe_blocking -pthread")
if(PGPIPE_SASLPREP STREQUAL "icu")
  set(pc_saslprep_requires "icu-uc")
else()
  set(pc_saslprep_requires "libidn")
endif()
set(pc_scram_requires "pgpipe-pq = ${PROJECT_VERSION}, pgpipe-core = ${PROJECT_VERSION}, openssl >= 3, ${pc_saslprep_requires}, libpq >= ${pgpipe_libpq_min}")
set(pc_scram_libs "-lpgpipe_scram")
foreach(component IN ITEMS core pq ${PGPIPE_COMPONENTS})
  set(PGPIPE_PC_NAME "pgpipe-${component}")
  set(PGPIPE_PC_DESCRIPTION "pgpipe component ${component}")
  set(PGPIPE_PC_REQUIRES "${pc_${component}_requires}")
  set(PGPIPE_PC_LIBS "${pc_${component}_libs}")
  configure_file(${PROJECT_SOURCE_DIR}/cmake/pgpipe.pc.in ${PROJECT_BINARY_DIR}/pgpipe-${component}.pc @ONLY)
  install(FILES ${PROJECT_BINARY_DIR}/pgpipe-${component}.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
endforeach()
# pgpipe.pc (all) exists when every component was built.
if(pgpipe_all_components)
  set(PGPIPE_PC_NAME "pgpipe")
  set(PGPIPE_PC_DESCRIPTION "${PROJECT_DESCRIPTION}")
  set(PGPIPE_PC_REQUIRES "pgpipe-async = ${PROJECT_VERSION}, pgpipe-blocking = ${PROJECT_VERSION}, pgpipe-scram = ${PROJECT_VERSION}")
  set(PGPIPE_PC_LIBS "")
  configure_file(${PROJECT_SOURCE_DIR}/cmake/pgpipe.pc.in ${PROJECT_BINARY_DIR}/pgpipe.pc @ONLY)
  install(FILES ${PROJECT_BINARY_DIR}/pgpipe.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
endif()
