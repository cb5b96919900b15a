// The names from before the naming rule (docs/api-guide.md, "Names") still
// compile for one release: the old headers forward to the new ones and each
// old name is the renamed type, so code written against the last release
// builds (with a deprecation warning naming the new name) and means the same.
#include <pgpipe/blocking_copy.hpp>
#include <pgpipe/listener.hpp>
#include <pgpipe/read_router.hpp>
#include <pgpipe/row_stream.hpp>
#include <pgpipe/transaction.hpp>
#include <pgpipe/transaction_lease.hpp>

#include <gtest/gtest.h>

#include <type_traits>

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"

TEST(old_names, each_old_async_name_is_its_renamed_type) {
  EXPECT_TRUE((std::is_same_v<pgpipe::lease, pgpipe::async_lease>));
  EXPECT_TRUE((std::is_same_v<pgpipe::listener, pgpipe::async_listener>));
  EXPECT_TRUE((std::is_same_v<pgpipe::row_stream, pgpipe::async_row_stream>));
  EXPECT_TRUE((std::is_same_v<pgpipe::read_router, pgpipe::async_read_router>));
  EXPECT_TRUE((std::is_same_v<pgpipe::transaction_lease, pgpipe::async_transaction_lease>));
  EXPECT_TRUE((std::is_same_v<pgpipe::transaction_report, pgpipe::async_transaction_report>));
  EXPECT_TRUE((std::is_same_v<pgpipe::batch_report, pgpipe::async_batch_report>));
  EXPECT_TRUE((std::is_same_v<pgpipe::transaction_work, pgpipe::async_transaction_work>));
  EXPECT_TRUE((std::is_same_v<pgpipe::transaction_callback, pgpipe::async_transaction_callback>));
}

TEST(old_names, the_blocking_copy_handles_keep_their_old_names) {
  EXPECT_TRUE((std::is_same_v<pgpipe::copy_in, pgpipe::blocking_copy_in>));
  EXPECT_TRUE((std::is_same_v<pgpipe::copy_out, pgpipe::blocking_copy_out>));
}

#pragma GCC diagnostic pop
