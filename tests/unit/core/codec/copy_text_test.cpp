// COPY text without a server: escaping, unescaping, NULL against the text
// "\N", line splitting across chunks, and the typed core both drivers share
// (rows of T to lines and back, with errors naming the row and the field).
#include <pgpipe/detail/copy_text.hpp>
#include <pgpipe/detail/typed_copy.hpp>

#include <boost/describe/class.hpp>
#include <gtest/gtest.h>

#include <cstdint>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

namespace {

using pgpipe::detail::copy_text::append_escaped;
using pgpipe::detail::copy_text::line_splitter;
using pgpipe::detail::copy_text::row_fields;

std::string escaped(std::string_view v) {
  std::string out;
  append_escaped(out, v);
  return out;
}

std::vector<std::optional<std::string>> fields_of(std::string_view line) {
  row_fields f;
  std::string why;
  EXPECT_TRUE(f.parse(line, why)) << why;
  std::vector<std::optional<std::string>> out;
  for (std::size_t i = 0; i < f.size(); ++i) {
    if (auto v = f[i]) {
      out.emplace_back(std::string(*v));
    } else {
      out.emplace_back(std::nullopt);
    }
  }
  return out;
}

TEST(CopyText, EscapesEverySpecialCharacter) {
  EXPECT_EQ(escaped("plain"), "plain");
  EXPECT_EQ(escaped("a\\b"), "a\\\\b");
  EXPECT_EQ(escaped("a\tb"), "a\\tb");
  EXPECT_EQ(escaped("a\nb"), "a\\nb");
  EXPECT_EQ(escaped("a\rb"), "a\\rb");
  EXPECT_EQ(escaped("\\N"), "\\\\N");  // the text \N is not NULL
  EXPECT_EQ(escaped(""), "");
  EXPECT_EQ(escaped("\t\n\r\\"), "\\t\\n\\r\\\\");
  EXPECT_EQ(escaped("ph\xE1\xBB\x9F, \xE6\x97\xA5\xE6\x9C\xAC"), "ph\xE1\xBB\x9F, \xE6\x97\xA5\xE6\x9C\xAC");
  std::string out;
  EXPECT_FALSE(append_escaped(out, std::string_view("a\0b", 3)));  // text COPY cannot carry a NUL byte
}

TEST(CopyText, UnescapesWhatTheServerSends) {
  using V = std::vector<std::optional<std::string>>;
  EXPECT_EQ(fields_of("1\tabc"), (V{"1", "abc"}));
  EXPECT_EQ(fields_of("a\\\\b\tc\\td\te\\nf\tg\\rh"), (V{"a\\b", "c\td", "e\nf", "g\rh"}));
  EXPECT_EQ(fields_of("\\b\\f\\v"), (V{"\b\f\v"}));
  EXPECT_EQ(fields_of("\\101\\x42\\7"), (V{"AB\x07"}));  // octal, hex, short octal
  EXPECT_EQ(fields_of("\\xZ"), (V{"xZ"}));              // \x without a digit is an x
  EXPECT_EQ(fields_of("\\q"), (V{"q"}));                // any other escaped byte is itself
}

TEST(CopyText, NullIsOnlyTheWholeFieldBackslashN) {
  using V = std::vector<std::optional<std::string>>;
  EXPECT_EQ(fields_of("\\N\t\\\\N\t"), (V{std::nullopt, "\\N", ""}));  // NULL, the text \N, empty string
  EXPECT_EQ(fields_of("x\\N"), (V{"xN"}));                              // \N inside a field is N
  EXPECT_EQ(fields_of(""), (V{""}));                                     // one empty field
  EXPECT_EQ(fields_of("\t"), (V{"", ""}));
}

TEST(CopyText, EscapeThenParseRoundTrips) {
  const std::vector<std::string> values = {"",         "\\N",      "\\",   "\t",   "\n",  "\r\n", "a\\tb",
                                           "\\\\N",    "tab\there", " sp ", "\\.", ".",   "\x7f",
                                           "vi\xE1\xBB\x87t"};
  std::string line;
  for (std::size_t i = 0; i < values.size(); ++i) {
    if (i) line += '\t';
    append_escaped(line, values[i]);
  }
  auto back = fields_of(line);
  ASSERT_EQ(back.size(), values.size());
  for (std::size_t i = 0; i < values.size(); ++i) {
    ASSERT_TRUE(back[i].has_value()) << i;
    EXPECT_EQ(*back[i], values[i]) << i;
  }
}

TEST(CopyText, RefusesABackslashAtTheEnd) {
  row_fields f;
  std::string why;
  EXPECT_FALSE(f.parse("abc\\", why));
  EXPECT_EQ(why, "a backslash ends the line");
}

TEST(CopyText, SplitsLinesAcrossChunks) {
  const std::string data = "1\tone\n22\ttwo\\nlines\n\n333\tthree\n";
  // Every split point into two chunks, and one byte at a time.
  for (std::size_t cut = 0; cut <= data.size(); ++cut) {
    line_splitter s;
    std::vector<std::string> lines;
    auto keep = [&](std::string_view l) {
      lines.emplace_back(l);
      return true;
    };
    s.feed(std::string_view(data).substr(0, cut), keep);
    s.feed(std::string_view(data).substr(cut), keep);
    EXPECT_TRUE(s.at_line_end());
    EXPECT_EQ(lines, (std::vector<std::string>{"1\tone", "22\ttwo\\nlines", "", "333\tthree"})) << cut;
  }
  line_splitter s;
  std::size_t n = 0;
  for (char c : data) s.feed(std::string_view(&c, 1), [&](std::string_view) { return ++n > 0; });
  EXPECT_EQ(n, 4u);
  s.feed("partial", [](std::string_view) { return true; });
  EXPECT_FALSE(s.at_line_end());
}

struct item {
  std::int64_t id = 0;
  std::string name;
  std::optional<std::string> note;
};

struct named {
  std::int32_t id = 0;
  std::string label;
};
BOOST_DESCRIBE_STRUCT(named, (), (id, label))

TEST(TypedCopyCore, EncodesRowsWithEscapesAndNull) {
  pgpipe::detail::copy_row_encoder<item> enc;
  std::string out, message;
  ASSERT_FALSE(enc.append(item{1, "a\tb\\c\nd\re", std::nullopt}, out, message)) << message;
  ASSERT_FALSE(enc.append(item{-2, "\\N", std::string()}, out, message)) << message;
  EXPECT_EQ(out, "1\ta\\tb\\\\c\\nd\\re\t\\N\n-2\t\\\\N\t\n");
}

TEST(TypedCopyCore, AFieldThatCannotBeEncodedNamesTheRowAndField) {
  pgpipe::detail::copy_row_encoder<named> enc;
  std::string out, message;
  ASSERT_FALSE(enc.append(named{1, "fine"}, out, message));
  const std::string before = out;
  auto ec = enc.append(named{2, std::string("nul\0byte", 8)}, out, message);
  EXPECT_EQ(ec, pgpipe::errc::invalid_argument);
  EXPECT_EQ(message, "typed COPY: row 2, field 2 (label): the value contains a NUL byte, which COPY text cannot carry");
  EXPECT_EQ(out, before);  // nothing of the bad row is left in the buffer
}

TEST(TypedCopyCore, DecodesWhatItEncodes) {
  const std::vector<item> rows = {{1, "a\tb\\c\nd\re", std::nullopt},
                                  {2, "\\N", std::string()},
                                  {3, "", std::string("\\N")},
                                  {-9'000'000'000, "d\xE1\xBA\xA5u \xE6\x97\xA5", std::string("\t")}};
  pgpipe::detail::copy_row_encoder<item> enc;
  std::string data, message;
  for (const item& r : rows) ASSERT_FALSE(enc.append(r, data, message)) << message;
  pgpipe::detail::copy_row_decoder<item> dec;
  std::vector<item> back;
  // Fed in 3-byte chunks: rows straddle chunks.
  for (std::size_t i = 0; i < data.size(); i += 3)
    ASSERT_FALSE(dec.feed(std::string_view(data).substr(i, 3), back, message)) << message;
  ASSERT_FALSE(dec.finish(message));
  ASSERT_EQ(back.size(), rows.size());
  for (std::size_t i = 0; i < rows.size(); ++i) {
    EXPECT_EQ(back[i].id, rows[i].id) << i;
    EXPECT_EQ(back[i].name, rows[i].name) << i;
    EXPECT_EQ(back[i].note, rows[i].note) << i;
  }
}

TEST(TypedCopyCore, DecodingErrorsNameTheRowAndField) {
  std::string message;
  std::vector<named> out;
  {
    pgpipe::detail::copy_row_decoder<named> dec;
    EXPECT_EQ(dec.feed("1\tok\n2\t\\N\n", out, message), pgpipe::errc::null_value);
    EXPECT_EQ(out.size(), 1u);
    EXPECT_NE(message.find("row 2, field 2 (label)"), std::string::npos) << message;
  }
  {
    pgpipe::detail::copy_row_decoder<named> dec;
    EXPECT_EQ(dec.feed("x1\tok\n", out, message), pgpipe::errc::conversion_error);
    EXPECT_NE(message.find("row 1, field 1 (id)"), std::string::npos) << message;
    EXPECT_NE(message.find("\"x1\""), std::string::npos) << message;
  }
  {
    pgpipe::detail::copy_row_decoder<named> dec;
    EXPECT_EQ(dec.feed("1\tok\textra\n", out, message), pgpipe::errc::columns_mismatch);
    EXPECT_EQ(message, "typed COPY: row 1 has 3 fields, the row type has 2");
  }
  {
    pgpipe::detail::copy_row_decoder<named> dec;
    // The int4 text decoder typed rows use answers conversion_error for a
    // number past its range; the message still names where.
    EXPECT_EQ(dec.feed("99999999999\tbig\n", out, message), pgpipe::errc::conversion_error);
    EXPECT_NE(message.find("row 1, field 1 (id) as "), std::string::npos) << message;
  }
  {
    pgpipe::detail::copy_row_decoder<named> dec;
    EXPECT_FALSE(dec.feed("1\tcut", out, message));
    EXPECT_EQ(dec.finish(message), pgpipe::errc::conversion_error);
    EXPECT_EQ(message, "typed COPY: the data ended inside row 1");
  }
}

TEST(TypedCopyCore, TuplesGoByPosition) {
  pgpipe::detail::copy_row_encoder<std::tuple<int, std::optional<double>, bool>> enc;
  std::string out, message;
  ASSERT_FALSE(enc.append({7, std::nullopt, true}, out, message)) << message;
  pgpipe::detail::copy_row_decoder<std::tuple<int, std::optional<double>, bool>> dec;
  std::vector<std::tuple<int, std::optional<double>, bool>> back;
  ASSERT_FALSE(dec.feed(out, back, message)) << message;
  ASSERT_EQ(back.size(), 1u);
  EXPECT_EQ(back[0], std::make_tuple(7, std::optional<double>(), true));
}

}  // namespace
