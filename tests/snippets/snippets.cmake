# The C++ a user reads is compiled: every ```cpp block of the Markdown files
# given to pgpipe_add_doc_snippets() becomes one translation unit, built with
# -Wall -Wextra -Wpedantic -Werror against pgpipe::pgpipe by a ctest entry
# named after the block (snippet.README.md:132). A block that does not compile
# fails that entry, and the compiler's messages name the Markdown file and
# line (the generated source maps every line back with #line).
#
# How a block is turned into a translation unit (docs/design.md, "Docs that
# compile", says the same for writers):
#  - Its leading lines that are #include directives, blank or // comments are
#    its includes: they go first, and nothing else is included. A block that
#    uses a name its includes do not declare fails, so it shows what a reader
#    must include.
#  - A block may name a context on the line just above its fence:
#        <!-- snippet: NAME -->
#    (an HTML comment: Markdown renderers do not show it). The context is
#    tests/snippets/context/NAME.cpp, C++ with one line `// @snippet` where the
#    rest of the block goes: typically a wrapping function (a coroutine for
#    co_await, its parameters standing for the objects the block uses, such
#    as `client` or `key`) and declarations of the reader's own functions
#    (`consume`, `handle`). A context includes nothing: it sees only what the
#    block includes. Without a context the block is compiled as it is, a whole
#    translation unit.
#  - Each block is compiled alone (-c, no link): it may call functions that
#    are only declared.
#  - Every ```cpp (or ```c++) fence counts; one this script cannot handle (not
#    at the start of its line, never closed, an unknown context) becomes a
#    translation unit whose #error says so, never a block left out.
#
# Why configure time: the set of blocks decides the set of ctest entries. The
# Markdown files and contexts are configure dependencies, so editing one
# re-runs the extraction at the next build.
#
# Why a ctest entry runs the build of its target (EXCLUDE_FROM_ALL) instead
# of the main build compiling every block: a broken example in the docs fails
# its own test, named after the block, and leaves the rest of the build and
# the suite running. The entries share one RESOURCE_LOCK: they run the build
# tool in the same tree, one at a time. `cmake --build build --target
# pgpipe_snippets` builds every block at once while editing.

set(PGPIPE_SNIPPET_DIR ${CMAKE_CURRENT_LIST_DIR})
add_custom_target(pgpipe_snippets)

# Writes `content` to `path` only when it differs, so an unchanged block is
# not recompiled after every configure.
function(pgpipe_snippet_write path content)
  if(EXISTS ${path})
    file(READ ${path} old)
    if(old STREQUAL content)
      return()
    endif()
  endif()
  file(WRITE ${path} "${content}")
endfunction()

# Number of newlines in `text`: the line of what follows it, minus one.
function(pgpipe_count_newlines out text)
  string(LENGTH "${text}" with)
  string(REPLACE "\n" "" stripped "${text}")
  string(LENGTH "${stripped}" without)
  math(EXPR n "${with} - ${without}")
  set(${out} ${n} PARENT_SCOPE)
endfunction()

# One translation unit `source` compiled as a test named `test_name`; `where`
# (file:line) is what a failure names. AGGREGATE adds it to pgpipe_snippets.
function(pgpipe_add_compile_test test_name target source where)
  cmake_parse_arguments(arg "AGGREGATE" "" "" ${ARGN})
  add_library(${target} OBJECT EXCLUDE_FROM_ALL ${source})
  target_link_libraries(${target} PRIVATE pgpipe::pgpipe)
  target_compile_options(${target} PRIVATE -Wall -Wextra -Wpedantic -Werror)
  if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
    # After a #line naming another file, g++ no longer sees the block as the
    # main file, and warns as for a header about a class (a coroutine's
    # frame) holding a type without linkage (a lambda): a warning the same
    # code in a reader's own .cpp never gets.
    target_compile_options(${target} PRIVATE -Wno-subobject-linkage)
  endif()
  if(arg_AGGREGATE)
    add_dependencies(pgpipe_snippets ${target})
  endif()
  add_test(NAME ${test_name}
           COMMAND ${CMAKE_COMMAND} -DBUILD_DIR=${PROJECT_BINARY_DIR} -DTARGET=${target} -DCONFIG=$<CONFIG>
                   -DWHERE=${where} -P ${PGPIPE_SNIPPET_DIR}/build_snippet.cmake)
  set_tests_properties(${test_name} PROPERTIES LABELS "snippet" TIMEOUT 600 RESOURCE_LOCK pgpipe_build_tree)
endfunction()

# The translation unit for the block of `md_rel` whose fence is on line
# `fence_line`, with body `body` (the lines between the fences) and context
# `context` (empty: none). Sets `out` to the generated C++.
function(pgpipe_snippet_source out md_rel fence_line body context)
  # The leading includes (with blank and // comment lines among them). The
  # newline in front keeps the match non-empty, which string(REGEX) requires.
  string(REGEX MATCH "^\n(([ \t]*(#[ \t]*include[^\n]*|//[^\n]*)?\n)*)" head "\n${body}")
  string(LENGTH "${head}" head_len)
  math(EXPR head_len "${head_len} - 1")
  string(SUBSTRING "${body}" 0 ${head_len} head)
  string(SUBSTRING "${body}" ${head_len} -1 rest)
  pgpipe_count_newlines(head_lines "${head}")
  math(EXPR body_line "${fence_line} + 1")
  math(EXPR rest_line "${body_line} + ${head_lines}")
  set(tu "// Generated from ${md_rel}:${fence_line} by tests/snippets/snippets.cmake.\n")
  string(APPEND tu "#line ${body_line} \"${md_rel}\"\n${head}")
  if(context STREQUAL "")
    string(APPEND tu "#line ${rest_line} \"${md_rel}\"\n${rest}")
    set(${out} "${tu}" PARENT_SCOPE)
    return()
  endif()
  set(ctx_path ${PGPIPE_SNIPPET_DIR}/context/${context}.cpp)
  set(ctx_rel tests/snippets/context/${context}.cpp)
  if(NOT EXISTS ${ctx_path})
    set(${out} "#error \"${md_rel}:${fence_line}: unknown snippet context '${context}': ${ctx_rel} does not exist\"\n"
        PARENT_SCOPE)
    return()
  endif()
  set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS ${ctx_path})
  file(READ ${ctx_path} ctx)
  string(REGEX MATCH "^(.*\n)?[ \t]*// @snippet[ \t]*\n" ctx_before "${ctx}")
  if(ctx_before STREQUAL "")
    set(${out} "#error \"${ctx_rel}: no line '// @snippet' (where the block goes)\"\n" PARENT_SCOPE)
    return()
  endif()
  if(ctx MATCHES "(^|\n)[ \t]*#[ \t]*include")
    set(${out} "#error \"${ctx_rel}: a context includes nothing (the block shows its includes)\"\n" PARENT_SCOPE)
    return()
  endif()
  string(LENGTH "${ctx_before}" before_len)
  string(SUBSTRING "${ctx}" ${before_len} -1 ctx_after)
  pgpipe_count_newlines(before_lines "${ctx_before}")
  math(EXPR after_line "${before_lines} + 1")
  string(APPEND tu "#line 1 \"${ctx_rel}\"\n${ctx_before}")
  string(APPEND tu "#line ${rest_line} \"${md_rel}\"\n${rest}")
  string(APPEND tu "#line ${after_line} \"${ctx_rel}\"\n${ctx_after}")
  set(${out} "${tu}" PARENT_SCOPE)
endfunction()

# pgpipe_add_doc_snippets(FILES a.md b.md ... [PREFIX name] [NO_AGGREGATE])
# Every ```cpp block of the files: one generated source and one ctest entry
# (PREFIX.<file>:<line>, PREFIX defaults to "snippet").
function(pgpipe_add_doc_snippets)
  cmake_parse_arguments(arg "NO_AGGREGATE" "PREFIX" "FILES" ${ARGN})
  if(NOT arg_PREFIX)
    set(arg_PREFIX snippet)
  endif()
  set(aggregate AGGREGATE)
  if(arg_NO_AGGREGATE)
    set(aggregate "")
  endif()
  set(gen_dir ${CMAKE_CURRENT_BINARY_DIR}/snippets)
  foreach(md IN LISTS arg_FILES)
    file(RELATIVE_PATH md_rel ${PROJECT_SOURCE_DIR} ${md})
    set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS ${md})
    file(READ ${md} text)
    set(pos 0)
    while(TRUE)
      string(SUBSTRING "${text}" ${pos} -1 tail)
      string(REGEX MATCH "```(cpp|c\\+\\+)[ \t]*\n" fence "${tail}")
      if(fence STREQUAL "")
        break()
      endif()
      string(FIND "${tail}" "${fence}" off)
      math(EXPR fence_at "${pos} + ${off}")
      string(LENGTH "${fence}" fence_len)
      math(EXPR body_at "${fence_at} + ${fence_len}")
      string(SUBSTRING "${text}" 0 ${fence_at} before)
      pgpipe_count_newlines(nl "${before}")
      math(EXPR fence_line "${nl} + 1")
      # The text of the fence's line before the fence, and the line above.
      string(REGEX MATCH "(^|\n)([^\n]*\n)?([^\n]*)$" last_lines "${before}")
      set(indent "${CMAKE_MATCH_3}")
      set(above "${CMAKE_MATCH_2}")
      # The closing fence: a line that is ``` alone.
      string(SUBSTRING "${text}" ${body_at} -1 from_body)
      string(REGEX MATCH "(^|\n)```[ \t]*(\n|$)" close "${from_body}")
      set(name ${arg_PREFIX}.${md_rel}:${fence_line})
      string(MAKE_C_IDENTIFIER "pgpipe_${arg_PREFIX}_${md_rel}_${fence_line}" target)
      set(context "")
      if(above MATCHES "^<!--[ \t]*snippet:[ \t]*([A-Za-z0-9_]+)[ \t]*-->[ \t]*\n$")
        set(context ${CMAKE_MATCH_1})
      endif()
      if(NOT indent STREQUAL "")
        set(tu "#error \"${md_rel}:${fence_line}: a cpp fence must start its line (indented blocks are not extracted)\"\n")
        set(pos ${body_at})
      elseif(close STREQUAL "")
        set(tu "#error \"${md_rel}:${fence_line}: this cpp block is never closed\"\n")
        string(LENGTH "${text}" pos)
      else()
        string(FIND "${from_body}" "${close}" close_off)
        if(close MATCHES "^\n")
          math(EXPR body_len "${close_off} + 1")  # keep the block's last newline
        else()
          set(body_len 0)
        endif()
        string(SUBSTRING "${from_body}" 0 ${body_len} body)
        pgpipe_snippet_source(tu "${md_rel}" ${fence_line} "${body}" "${context}")
        string(LENGTH "${close}" close_len)
        math(EXPR pos "${body_at} + ${close_off} + ${close_len}")
      endif()
      set(source ${gen_dir}/${target}.cpp)
      pgpipe_snippet_write(${source} "${tu}")
      pgpipe_add_compile_test(${name} ${target} ${source} ${md_rel}:${fence_line} ${aggregate})
    endwhile()
  endforeach()
endfunction()
