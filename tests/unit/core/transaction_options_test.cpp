// The driver-free half of the transaction helpers: BEGIN text, which errors
// are retried, and the back-off's bounds.
#include <pgpipe/error.hpp>
#include <pgpipe/transaction_options.hpp>

#include <gtest/gtest.h>

#include <cstdint>

using namespace std::chrono_literals;
using pgpipe::isolation_level;
using pgpipe::transaction_options;

TEST(transaction_options, begin_statement_spells_every_mode) {
  EXPECT_EQ(pgpipe::begin_statement({}), "BEGIN");
  transaction_options o;
  o.isolation = isolation_level::serializable;
  o.read_only = true;
  o.deferrable = true;
  EXPECT_EQ(pgpipe::begin_statement(o), "BEGIN ISOLATION LEVEL SERIALIZABLE, READ ONLY, DEFERRABLE");
  o = {};
  o.isolation = isolation_level::repeatable_read;
  EXPECT_EQ(pgpipe::transaction_modes(o), "ISOLATION LEVEL REPEATABLE READ");
  o.isolation = isolation_level::read_committed;
  EXPECT_EQ(pgpipe::begin_statement(o), "BEGIN ISOLATION LEVEL READ COMMITTED");
}

TEST(transaction_options, only_serialization_failures_and_deadlocks_are_retried) {
  EXPECT_TRUE(pgpipe::is_retryable_transaction_error(pgpipe::make_sqlstate("40001")));
  EXPECT_TRUE(pgpipe::is_retryable_transaction_error(pgpipe::make_sqlstate("40P01")));
  EXPECT_FALSE(pgpipe::is_retryable_transaction_error(pgpipe::make_sqlstate("23505")));
  EXPECT_FALSE(pgpipe::is_retryable_transaction_error(pgpipe::make_error_code(pgpipe::errc::connection_lost)));
  EXPECT_FALSE(pgpipe::is_retryable_transaction_error({}));
}

TEST(transaction_options, backoff_is_jittered_below_an_exponential_cap) {
  pgpipe::retry_policy p{.max_attempts = 10, .initial_backoff = 4ms, .max_backoff = 30ms};
  const std::uint64_t all_ones = ~std::uint64_t{0};
  // The largest draw of each try: 4, 8, 16, then capped at 30 ms.
  auto top = [&](unsigned next) {
    std::chrono::microseconds best{0};
    for (std::uint64_t r = all_ones - 100000; r != all_ones; ++r) best = std::max(best, pgpipe::retry_backoff(p, next, r));
    return best;
  };
  EXPECT_EQ(top(2), 4000us);
  EXPECT_EQ(top(3), 8000us);
  EXPECT_EQ(top(4), 16000us);
  EXPECT_EQ(top(5), 30000us);
  EXPECT_EQ(top(9), 30000us);
  EXPECT_EQ(pgpipe::retry_backoff(p, 2, 0), 0us);  // the floor is zero: full jitter
  EXPECT_LT(pgpipe::retry_backoff(p, 3, 12345), 8001us);
  p.initial_backoff = 0ms;
  EXPECT_EQ(pgpipe::retry_backoff(p, 3, all_ones), 0us);
}
