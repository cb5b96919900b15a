# An overlay port kept with the sources it builds: from a clone,
#   vcpkg install pgpipe[async] --overlay-ports=<clone>/packaging/vcpkg
# builds that clone (no download, so no hash to pin). A registry port would
# replace SOURCE_PATH with vcpkg_from_git(... REF <commit>).
set(SOURCE_PATH "${CMAKE_CURRENT_LIST_DIR}/../..")

# Features are pgpipe's components (core and pq are always built); commas,
# because a ';' would split the option in vcpkg_cmake_configure.
set(components "")
foreach(feature IN ITEMS async blocking scram)
  if(feature IN_LIST FEATURES)
    string(APPEND components ",${feature}")
  endif()
endforeach()
string(REGEX REPLACE "^," "" components "${components}")

vcpkg_cmake_configure(
  SOURCE_PATH "${SOURCE_PATH}"
  OPTIONS
    "-DPGPIPE_COMPONENTS=${components}"
    -DPGPIPE_SASLPREP=icu
    -DPGPIPE_BUILD_TESTS=OFF
    -DPGPIPE_BUILD_BENCH=OFF
    -DPGPIPE_BUILD_EXAMPLES=OFF
    -DPGPIPE_BUILD_TOOLS=OFF
)
vcpkg_cmake_install()
vcpkg_cmake_config_fixup(CONFIG_PATH lib/cmake/pgpipe)
vcpkg_fixup_pkgconfig()

file(REMOVE_RECURSE "${CURRENT_PACKAGES_DIR}/debug/include" "${CURRENT_PACKAGES_DIR}/debug/share")
vcpkg_install_copyright(FILE_LIST "${SOURCE_PATH}/LICENSE")
