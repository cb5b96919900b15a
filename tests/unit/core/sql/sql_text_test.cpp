// The one check both drivers make on every SQL text before sending it
// (core/sql/sql_text.hpp), and the checks built on it (COPY).
#include "core/sql/copy_statement.hpp"
#include "core/sql/sql_text.hpp"

#include <gtest/gtest.h>

#include <string>

namespace {

using namespace std::string_literals;
using pgpipe::detail::copy_statement_refusal;
using pgpipe::detail::nul_byte_refusal;

TEST(sql_text, a_text_without_a_nul_byte_may_be_sent) {
  EXPECT_EQ(nul_byte_refusal("delete from t where id = 1 and false"), "");
  EXPECT_EQ(nul_byte_refusal(""), "");
}

TEST(sql_text, a_nul_byte_is_refused_naming_its_offset) {
  EXPECT_EQ(nul_byte_refusal("delete from t where id = 1\0 and false"s),
            "SQL text contains a NUL byte at offset 26 (libpq would cut the text there); nothing was sent");
  EXPECT_EQ(nul_byte_refusal("\0"s, "the channel name"),
            "the channel name contains a NUL byte at offset 0 (libpq would cut the text there); nothing was sent");
  EXPECT_NE(nul_byte_refusal("a\0b\0c"s).find("offset 1 "), std::string::npos) << "the first one is named";
}

TEST(sql_text, a_copy_holding_a_nul_byte_is_refused) {
  // Cut at the NUL this is a text-format COPY, which would take rows the
  // binary one refuses.
  EXPECT_EQ(copy_statement_refusal("copy t from stdin\0 with (format binary)"s),
            "copy_in/copy_out: SQL text contains a NUL byte at offset 17 (libpq would cut the text there); "
            "nothing was sent");
}

}  // namespace
