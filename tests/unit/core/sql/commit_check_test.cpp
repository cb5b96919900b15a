// commit_check: which statements ask to commit, and that only the tag
// ROLLBACK on one of them is an error.
#include "core/sql/commit_check.hpp"

#include <gtest/gtest.h>

namespace {

using pgpipe::detail::commit_rolled_back;
using pgpipe::detail::commit_statement_name;
using pgpipe::detail::rolled_back_commit_diagnostics;

TEST(commit_check, every_spelling_of_commit_answered_with_rollback_is_caught) {
  for (const char* sql : {"commit", "COMMIT", "commit work", "commit transaction", "commit and chain",
                          "commit and no chain", "end", "END TRANSACTION", "end and chain", "  /* c */ -- x\n CoMmIt ;",
                          "prepare transaction 'x'", "select 1; commit"}) {
    EXPECT_TRUE(commit_rolled_back(sql, "ROLLBACK")) << sql;
  }
}

TEST(commit_check, a_commit_that_committed_and_a_rollback_asked_for_are_no_error) {
  for (const char* sql : {"commit", "end", "prepare transaction 'x'"}) {
    EXPECT_FALSE(commit_rolled_back(sql, "COMMIT")) << sql;
    EXPECT_FALSE(commit_rolled_back(sql, "PREPARE TRANSACTION")) << sql;
  }
  for (const char* sql : {"rollback", "abort", "rollback and chain", "rollback prepared 'x'", "commit prepared 'x'",
                          "select 'commit'", "select 1 as commit", "-- commit\nrollback", "commit; rollback", "",
                          "prepare p as select 1"}) {
    EXPECT_FALSE(commit_rolled_back(sql, "ROLLBACK")) << sql;
  }
}

TEST(commit_check, the_diagnostics_say_it_had_failed_and_was_rolled_back) {
  const auto d = rolled_back_commit_diagnostics(commit_statement_name("prepare transaction 'x'"));
  EXPECT_EQ(d.sqlstate, "25P02");
  EXPECT_NE(d.client_message.find("had failed"), std::string::npos) << d.client_message;
  EXPECT_NE(d.client_message.find("rolled back"), std::string::npos) << d.client_message;
  EXPECT_NE(d.client_message.find("PREPARE TRANSACTION"), std::string::npos) << d.client_message;
  EXPECT_EQ(commit_statement_name("end"), "COMMIT");
  EXPECT_EQ(d.to_string().find("ERROR 25P02:"), std::string::npos) << "no empty server message: " << d.to_string();
}

}  // namespace
