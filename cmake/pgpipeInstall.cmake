include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

install(TARGETS pgpipe EXPORT pgpipeTargets
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
        RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR}
        INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(DIRECTORY ${PROJECT_SOURCE_DIR}/include/pgpipe DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})

set(pgpipe_cmake_dir ${CMAKE_INSTALL_LIBDIR}/cmake/pgpipe)
install(EXPORT pgpipeTargets NAMESPACE pgpipe:: DESTINATION ${pgpipe_cmake_dir})
configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/pgpipeConfig.cmake.in
  ${PROJECT_BINARY_DIR}/pgpipeConfig.cmake INSTALL_DESTINATION ${pgpipe_cmake_dir})
write_basic_package_version_file(${PROJECT_BINARY_DIR}/pgpipeConfigVersion.cmake
  COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/pgpipeConfig.cmake ${PROJECT_BINARY_DIR}/pgpipeConfigVersion.cmake
              ${PROJECT_SOURCE_DIR}/cmake/pgpipeFindDependencies.cmake
        DESTINATION ${pgpipe_cmake_dir})

file(RELATIVE_PATH PGPIPE_PC_PREFIX_FROM_PCDIR /prefix/${CMAKE_INSTALL_LIBDIR}/pkgconfig /prefix)
configure_file(${PROJECT_SOURCE_DIR}/cmake/pgpipe.pc.in ${PROJECT_BINARY_DIR}/pgpipe.pc @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/pgpipe.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
