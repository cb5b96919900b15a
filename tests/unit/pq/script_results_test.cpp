// The rules both drivers read a script's results by (pq/script_results.hpp),
// on results libpq makes without a server (PQmakeEmptyPGresult).
#include "pq/script_results.hpp"

#include <gtest/gtest.h>
#include <libpq-fe.h>

namespace {

using pgpipe::detail::script_results;
using step = script_results::step;

script_results::pgresult_ptr make(ExecStatusType status) {
  return script_results::pgresult_ptr(PQmakeEmptyPGresult(nullptr, status));
}

TEST(script_results, the_last_statements_result_is_kept_when_none_failed) {
  script_results r(true);
  EXPECT_EQ(r.take(make(PGRES_COMMAND_OK)), step::next);
  auto* last = PQmakeEmptyPGresult(nullptr, PGRES_TUPLES_OK);
  EXPECT_EQ(r.take(script_results::pgresult_ptr(last)), step::next);
  EXPECT_FALSE(r.failed());
  EXPECT_FALSE(r.needs_rollback(PQTRANS_IDLE));
  EXPECT_EQ(r.take_last().get(), last);
}

TEST(script_results, the_first_error_is_the_scripts_and_later_ones_do_not_replace_it) {
  script_results r(true);
  auto* first = PQmakeEmptyPGresult(nullptr, PGRES_FATAL_ERROR);
  EXPECT_EQ(r.take(make(PGRES_COMMAND_OK)), step::next);
  EXPECT_EQ(r.take(script_results::pgresult_ptr(first)), step::next);
  EXPECT_EQ(r.take(make(PGRES_FATAL_ERROR)), step::next);
  EXPECT_TRUE(r.failed());
  EXPECT_EQ(r.first_error(), first);
  EXPECT_EQ(r.take_first_error().get(), first);
}

TEST(script_results, a_copy_in_the_script_is_ended_or_drained_and_copy_both_gives_up) {
  script_results r(true);
  EXPECT_EQ(r.take(make(PGRES_COPY_IN)), step::end_copy_in);
  EXPECT_EQ(r.take(make(PGRES_COPY_OUT)), step::drain_copy_out);
  EXPECT_EQ(r.take(make(PGRES_COPY_BOTH)), step::give_up);
  EXPECT_FALSE(r.failed());
}

TEST(script_results, only_a_transaction_the_script_opened_and_failed_in_is_rolled_back) {
  script_results opened_by_script(true);
  opened_by_script.take(make(PGRES_FATAL_ERROR));
  EXPECT_TRUE(opened_by_script.needs_rollback(PQTRANS_INERROR));
  EXPECT_FALSE(opened_by_script.needs_rollback(PQTRANS_IDLE)) << "the implicit transaction ended with the error";

  script_results callers(false);
  callers.take(make(PGRES_FATAL_ERROR));
  EXPECT_FALSE(callers.needs_rollback(PQTRANS_INERROR)) << "the caller's transaction stays theirs";

  script_results no_error(true);
  no_error.take(make(PGRES_COMMAND_OK));
  EXPECT_FALSE(no_error.needs_rollback(PQTRANS_INERROR));
}

}  // namespace
