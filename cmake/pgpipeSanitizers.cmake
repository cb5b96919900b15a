# ASan+UBSan or TSan for the whole tree. Sanitizers must cover every object that
# touches shared state, so they are set globally rather than per target.
if(PGPIPE_SANITIZE STREQUAL "address")
  add_compile_options(-fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined)
  add_link_options(-fsanitize=address,undefined)
elseif(PGPIPE_SANITIZE STREQUAL "thread")
  add_compile_options(-fsanitize=thread -fno-omit-frame-pointer)
  add_link_options(-fsanitize=thread)
elseif(NOT PGPIPE_SANITIZE STREQUAL "")
  message(FATAL_ERROR "PGPIPE_SANITIZE must be '', 'address' or 'thread', not '${PGPIPE_SANITIZE}'")
endif()
