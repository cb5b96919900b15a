// The programs' one JSON writer (src/json_output): whatever bytes a string
// holds, the output parses as JSON (Boost.JSON's parser rejects ill-formed
// UTF-8), and numbers read back exactly.
#include "json_output/json_output.hpp"

#include <boost/json/object.hpp>
#include <boost/json/parse.hpp>
#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <string>

namespace {

using pgpipe::json_output::valid_utf8;
using pgpipe::json_output::write;

const std::string fffd = "\xEF\xBF\xBD";

TEST(json_output, well_formed_utf8_is_unchanged) {
  const std::string text = "ascii, \xC3\xA9, \xE2\x82\xAC, \xF0\x9F\x98\x80, \xED\x9F\xBF, \xF4\x8F\xBF\xBF";
  EXPECT_EQ(valid_utf8(text), text);
}

TEST(json_output, each_maximal_ill_formed_subpart_becomes_one_replacement_character) {
  EXPECT_EQ(valid_utf8("a\xFF" "b"), "a" + fffd + "b");                // never a lead byte
  EXPECT_EQ(valid_utf8("a\xE2\x82"), "a" + fffd);                      // truncated at the end
  EXPECT_EQ(valid_utf8("\xE2\x82" "b"), fffd + "b");                   // truncated before ASCII
  EXPECT_EQ(valid_utf8("\xC0\xAF"), fffd + fffd);                      // overlong '/'
  EXPECT_EQ(valid_utf8("\xED\xA0\x80"), fffd + fffd + fffd);           // a UTF-16 surrogate
  EXPECT_EQ(valid_utf8("\xF4\x90\x80\x80"), fffd + fffd + fffd + fffd);  // past U+10FFFF
  EXPECT_EQ(valid_utf8("\x80\x80"), fffd + fffd);                      // lone continuations
  // Latin-1 text sent by a server whose client_encoding is not UTF-8.
  EXPECT_EQ(valid_utf8("relation \"caf\xE9\" does not exist"), "relation \"caf" + fffd + "\" does not exist");
}

TEST(json_output, ill_formed_strings_and_keys_still_give_a_document_that_parses) {
  const boost::json::object doc{{"message", "caf\xE9 \xC3"}, {"k\xFF", "\"quoted\"\n\t\x01"}};
  const std::string text = write(doc);
  boost::json::error_code ec;
  const boost::json::value back = boost::json::parse(text, ec);
  ASSERT_FALSE(ec) << ec.message() << ": " << text;
  EXPECT_EQ(back.at("message").as_string(), "caf" + fffd + " " + fffd);
  EXPECT_EQ(back.at("k" + fffd).as_string(), "\"quoted\"\n\t\x01");
}

TEST(json_output, numbers_read_back_exactly) {
  const double qps = 52345.678901234;  // %.6g made this 52345.7
  const std::uint64_t big = std::numeric_limits<std::uint64_t>::max();
  const boost::json::object doc{{"qps", qps}, {"queries", big}, {"neg", -3}, {"one", 1.0},
                                {"nan", std::numeric_limits<double>::quiet_NaN()}};
  const std::string text = write(doc);
  const boost::json::value back = boost::json::parse(text);
  EXPECT_EQ(back.at("qps").as_double(), qps);
  EXPECT_EQ(back.at("queries").as_uint64(), big);
  EXPECT_EQ(back.at("neg").as_int64(), -3);
  EXPECT_NE(text.find("\"one\":1"), std::string::npos) << text;
  EXPECT_TRUE(back.at("nan").is_null());
}

TEST(json_output, layout_expands_only_down_to_the_given_depth) {
  const boost::json::object doc{{"a", 1}, {"runs", {{{"x", 1}, {"y", 2}}}}};
  EXPECT_EQ(write(doc), "{\"a\":1,\"runs\":[{\"x\":1,\"y\":2}]}\n");
  EXPECT_EQ(write(doc, {.expand_depth = 2}), "{\n  \"a\": 1,\n  \"runs\": [\n    {\"x\": 1, \"y\": 2}\n  ]\n}\n");
}

}  // namespace
