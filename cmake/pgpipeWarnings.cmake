# Warnings for every target built here (not for consumers of the installed package).
add_compile_options(-Wall -Wextra -Wpedantic)
if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU" AND CMAKE_CXX_COMPILER_VERSION VERSION_GREATER_EQUAL 12
   AND CMAKE_CXX_COMPILER_VERSION VERSION_LESS 14)
  # g++ 12 at -O2 reports -Wrestrict inside libstdc++'s own std::string
  # operator+ (GCC bug 105329, fixed in 14): a false positive on correct code
  # that only shows up in optimised builds.
  add_compile_options(-Wno-restrict)
endif()
if(PGPIPE_WERROR)
  add_compile_options(-Werror)
endif()
