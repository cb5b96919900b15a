# One ctest entry of tests/snippets/snippets.cmake: builds the object target
# of one C++ block (or compile check) and, when it does not compile, ends with
# the file and line of the block, after the compiler's own messages (which
# name the same file through #line).
#   cmake -DBUILD_DIR=... -DTARGET=... -DCONFIG=... -DWHERE=README.md:132 -P build_snippet.cmake
cmake_minimum_required(VERSION 3.25)
foreach(var BUILD_DIR TARGET WHERE)
  if(NOT DEFINED ${var})
    message(FATAL_ERROR "build_snippet.cmake: -D${var}=... is required")
  endif()
endforeach()
set(config_args)
if(CONFIG)
  set(config_args --config ${CONFIG})
endif()
execute_process(COMMAND ${CMAKE_COMMAND} --build ${BUILD_DIR} --target ${TARGET} ${config_args}
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
if(NOT rc EQUAL 0)
  message("${out}")
  message(FATAL_ERROR "${WHERE}: this C++ block does not compile with -Wall -Wextra -Wpedantic -Werror "
                      "(the compiler's messages above name its lines; target ${TARGET})")
endif()
message("${WHERE}: compiles")
