// sql_statements: where the simple-query protocol splits a text.
#include "core/sql/sql_statements.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace {

using pgpipe::detail::sql_statements;

std::vector<std::string> split(std::string_view sql) {
  std::vector<std::string> out;
  for (auto s : sql_statements(sql)) out.emplace_back(s);
  return out;
}

using v = std::vector<std::string>;

TEST(sql_statements, semicolons_at_the_top_level_split) {
  EXPECT_EQ(split("copy t from stdin; delete from t"), (v{"copy t from stdin", "delete from t"}));
  EXPECT_EQ(split("select 1;select 2;"), (v{"select 1", "select 2"}));
  EXPECT_EQ(split("  select 1  ;  ;; "), (v{"select 1"}));
  EXPECT_EQ(split("/* a */ select 1 -- b\n"), (v{"select 1"}));
}

TEST(sql_statements, nothing_but_blanks_comments_and_semicolons_is_no_statement) {
  EXPECT_TRUE(split("").empty());
  EXPECT_TRUE(split(" ; ;\n-- x;\n/* ; */").empty());
}

TEST(sql_statements, semicolons_inside_literals_identifiers_and_comments_do_not_split) {
  EXPECT_EQ(split("select ';', E'\\';', $$;$$, $q$a;b$q$, \"a;b\" -- ;\n; select 2 /* ; /* ; */ ; */"),
            (v{"select ';', E'\\';', $$;$$, $q$a;b$q$, \"a;b\"", "select 2"}));
  EXPECT_EQ(split("copy (select ';') to stdout"), (v{"copy (select ';') to stdout"}));
}

}  // namespace
