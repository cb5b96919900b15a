# ASan+UBSan or TSan for the whole tree. Sanitizers must cover every object that
# touches shared state, so they are set globally rather than per target.
if(PGPIPE_SANITIZE STREQUAL "address")
  add_compile_options(-fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined)
  add_link_options(-fsanitize=address,undefined)
  if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
    # g++ 12 with ASan at -O1 reports a false "may be used uninitialized" inside
    # Asio's use_future (promise_handler), failing every test that uses it.
    add_compile_options(-Wno-maybe-uninitialized)
    # It also pairs Asio's awaitable frame allocation (aligned_alloc, through
    # the thread's recycling cache) with the frame's sized operator delete and
    # reports -Wmismatched-new-delete at the end of every coroutine that
    # returns an awaitable; the pair is Asio's own and matches at run time.
    add_compile_options(-Wno-mismatched-new-delete)
  endif()
elseif(PGPIPE_SANITIZE STREQUAL "thread")
  add_compile_options(-fsanitize=thread -fno-omit-frame-pointer)
  add_link_options(-fsanitize=thread)
  if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
    # g++ 12 warns (-Wtsan) that TSan does not model the atomic_thread_fence
    # Asio uses; with -Werror that stops the build of the async driver.
    add_compile_options(-Wno-tsan)
    # The same false -Wmismatched-new-delete on Asio's awaitable frame as
    # under ASan above (seen at the end of async_transaction_batch's coroutine).
    add_compile_options(-Wno-mismatched-new-delete)
  endif()
elseif(NOT PGPIPE_SANITIZE STREQUAL "")
  message(FATAL_ERROR "PGPIPE_SANITIZE must be '', 'address' or 'thread', not '${PGPIPE_SANITIZE}'")
endif()
