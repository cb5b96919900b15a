# Warnings for every target built here (not for consumers of the installed package).
add_compile_options(-Wall -Wextra -Wpedantic)
if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU" AND CMAKE_CXX_COMPILER_VERSION VERSION_GREATER_EQUAL 12
   AND CMAKE_CXX_COMPILER_VERSION VERSION_LESS 14)
  # g++ 12 at -O2 reports -Wrestrict, -Wstringop-overflow and -Warray-bounds inside
  # libstdc++'s own std::string operator+ (GCC bugs 105329, 105651): false
  # positives on correct code that only show up in optimised builds, wherever
  # the optimiser happens to inline a concatenation.
  add_compile_options(-Wno-restrict -Wno-stringop-overflow -Wno-array-bounds)
endif()
if(PGPIPE_WERROR)
  add_compile_options(-Werror)
endif()
