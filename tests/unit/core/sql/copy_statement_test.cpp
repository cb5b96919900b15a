// copy_statement: copy_in/copy_out of both drivers take one COPY statement.
#include "core/sql/copy_statement.hpp"

#include <gtest/gtest.h>

namespace {

using pgpipe::detail::copy_statement_refusal;

TEST(copy_statement, one_copy_is_accepted_with_blanks_comments_and_a_trailing_semicolon) {
  for (const char* sql : {"copy t from stdin", "COPY t TO STDOUT;", " -- x\n/* y */ copy t(a, b) from stdin ; ",
                          "copy (select ';' from t) to stdout", "copy t from stdin with (delimiter ';')"}) {
    EXPECT_EQ(copy_statement_refusal(sql), "") << sql;
  }
}

TEST(copy_statement, a_second_statement_is_refused_counting_them) {
  const std::string why = copy_statement_refusal("copy t from stdin; delete from t");
  EXPECT_NE(why.find("one statement"), std::string::npos) << why;
  EXPECT_NE(why.find("holds 2"), std::string::npos) << why;
  EXPECT_NE(copy_statement_refusal("copy t from stdin;;delete from t;").find("holds 2"), std::string::npos);
  EXPECT_NE(copy_statement_refusal("select 1; copy t from stdin").find("one statement"), std::string::npos);
}

TEST(copy_statement, anything_but_copy_is_refused) {
  for (const char* sql : {"delete from t", "", " ; ", "select 'copy'", "\"copy\" t"}) {
    EXPECT_NE(copy_statement_refusal(sql).find("take a COPY statement"), std::string::npos) << sql;
  }
}

}  // namespace
