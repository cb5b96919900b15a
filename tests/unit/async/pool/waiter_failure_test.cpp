// The code a query waiting for pool capacity gets when pool_core fails its
// wait (async/pool/waiter_failure.hpp): its own deadline, when that was the
// binding limit, is reported as query_timeout; everything else as pool_core
// said it.
#include "async/pool/waiter_failure.hpp"

#include <pgpipe/error.hpp>

#include <gtest/gtest.h>

#include <chrono>

namespace {

using namespace std::chrono_literals;
using pgpipe::errc;
using pgpipe::detail::time_point;
using pgpipe::detail::waiter_failure_code;

const time_point now{std::chrono::seconds(1000)};

TEST(waiter_failure, a_query_whose_own_deadline_passed_hears_query_timeout) {
  EXPECT_EQ(waiter_failure_code(make_error_code(errc::pool_timeout), now - 1ms, now), errc::query_timeout);
  // The deadline reached exactly now is passed too: the tick that failed the
  // wait ran at it.
  EXPECT_EQ(waiter_failure_code(make_error_code(errc::pool_timeout), now, now), errc::query_timeout);
}

TEST(waiter_failure, acquire_timeout_shorter_than_the_query_deadline_stays_pool_timeout) {
  EXPECT_EQ(waiter_failure_code(make_error_code(errc::pool_timeout), now + 1ms, now), errc::pool_timeout);
  EXPECT_EQ(waiter_failure_code(make_error_code(errc::pool_timeout), time_point::max(), now), errc::pool_timeout);
}

TEST(waiter_failure, other_failures_keep_their_code_whatever_the_deadline) {
  for (errc e : {errc::closed, errc::queue_full, errc::server_unreachable}) {
    EXPECT_EQ(waiter_failure_code(make_error_code(e), now - 1s, now), e) << make_error_code(e).message();
  }
}

}  // namespace
