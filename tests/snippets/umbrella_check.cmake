# <pgpipe/pgpipe.hpp> "brings in all of it": every public header is included
# there, so a header added without that line fails this check, naming it.
#   cmake -DINCLUDE_DIR=<dir holding pgpipe/> -P umbrella_check.cmake
#
# Public headers: include/pgpipe/**/*.hpp except detail/ (not API) and the
# umbrella itself. A header at the top level must be included by pgpipe.hpp
# directly (its include list is the table of contents of the API); one in a
# subfolder (pgpipe/scram/client.hpp) may instead be included by that
# subfolder's own umbrella (pgpipe/scram.hpp) when pgpipe.hpp includes that.
# A header kept under an old name (only comments, #pragma once and one
# include of a header pgpipe.hpp includes) passes too. Every include of
# pgpipe.hpp must name a header that exists.
cmake_minimum_required(VERSION 3.25)
if(NOT DEFINED INCLUDE_DIR)
  message(FATAL_ERROR "umbrella_check.cmake: -DINCLUDE_DIR=... is required")
endif()
set(umbrella ${INCLUDE_DIR}/pgpipe/pgpipe.hpp)
if(NOT EXISTS ${umbrella})
  message(FATAL_ERROR "${umbrella} does not exist")
endif()

# The <pgpipe/...> headers `file` includes, as paths relative to INCLUDE_DIR.
function(pgpipe_includes_of out file)
  file(STRINGS ${file} lines REGEX "^[ \t]*#[ \t]*include[ \t]*<pgpipe/[^>]+>")
  set(found)
  foreach(line IN LISTS lines)
    string(REGEX REPLACE "^[ \t]*#[ \t]*include[ \t]*<(pgpipe/[^>]+)>.*$" "\\1" header "${line}")
    list(APPEND found ${header})
  endforeach()
  set(${out} ${found} PARENT_SCOPE)
endfunction()

pgpipe_includes_of(direct ${umbrella})
set(problems)
foreach(header IN LISTS direct)
  if(NOT EXISTS ${INCLUDE_DIR}/${header})
    list(APPEND problems "pgpipe/pgpipe.hpp includes <${header}>, which does not exist")
  endif()
endforeach()

file(GLOB_RECURSE headers RELATIVE ${INCLUDE_DIR} ${INCLUDE_DIR}/pgpipe/*.hpp)
list(SORT headers)
set(checked 0)
foreach(header IN LISTS headers)
  if(header MATCHES "^pgpipe/detail/" OR header STREQUAL "pgpipe/pgpipe.hpp")
    continue()
  endif()
  math(EXPR checked "${checked} + 1")
  if(header IN_LIST direct)
    continue()
  endif()
  # pgpipe/a/b/c.hpp may come through pgpipe/a/b.hpp or pgpipe/a.hpp.
  set(reached FALSE)
  get_filename_component(dir ${header} DIRECTORY)
  while(NOT dir STREQUAL "pgpipe" AND NOT dir STREQUAL "")
    set(sub ${dir}.hpp)
    if(sub IN_LIST direct AND EXISTS ${INCLUDE_DIR}/${sub})
      pgpipe_includes_of(sub_includes ${INCLUDE_DIR}/${sub})
      if(header IN_LIST sub_includes)
        set(reached TRUE)
        break()
      endif()
    endif()
    get_filename_component(dir ${dir} DIRECTORY)
  endwhile()
  # A header kept under its old name only forwards to the new one (nothing
  # but comments and one include): it is covered when that one is.
  if(NOT reached)
    file(STRINGS ${INCLUDE_DIR}/${header} code REGEX "^[ \t]*[^/ \t]")
    pgpipe_includes_of(forwards_to ${INCLUDE_DIR}/${header})
    list(LENGTH code code_lines)
    list(LENGTH forwards_to forwards)
    if(forwards EQUAL 1 AND code_lines EQUAL 2 AND forwards_to IN_LIST direct)
      set(reached TRUE)
    endif()
  endif()
  if(NOT reached)
    list(APPEND problems "public header <${header}> is not included by pgpipe/pgpipe.hpp")
  endif()
endforeach()

if(problems)
  list(JOIN problems "\n  " text)
  message(FATAL_ERROR "umbrella header incomplete:\n  ${text}\n(add each to include/pgpipe/pgpipe.hpp; "
                      "headers users must not include go in include/pgpipe/detail/)")
endif()
message("pgpipe/pgpipe.hpp includes all ${checked} public headers")
