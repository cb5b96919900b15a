// C++ structs as PostgreSQL composites (pgpipe/composite.hpp): the server's
// record text (quoting, doubled quotes, backslashes, empty vs NULL), its
// binary layout (record_send's, every length checked), nested composites,
// arrays of composites and the parameter's text form. No server: the
// strings are what PostgreSQL 15's record_out prints.
#include <pgpipe/composite.hpp>
#include <pgpipe/result.hpp>

#include "support/codec_kit.hpp"
#include "support/made_result.hpp"

#include <boost/describe/class.hpp>
#include <gtest/gtest.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace {

struct address {
  std::string street;
  std::int32_t zip = 0;
  std::optional<std::string> note;
  friend bool operator==(const address&, const address&) = default;
};
BOOST_DESCRIBE_STRUCT(address, (), (street, zip, note))

struct person {
  std::string name;
  address home;
  std::vector<std::int32_t> scores;
  friend bool operator==(const person&, const person&) = default;
};
BOOST_DESCRIBE_STRUCT(person, (), (name, home, scores))

struct point {
  std::int64_t x = 0;
  std::optional<double> y;
};
BOOST_DESCRIBE_STRUCT(point, (), (x, y))

struct segment {
  point from;
  point to;
};
BOOST_DESCRIBE_STRUCT(segment, (), (from, to))

}  // namespace

template <>
struct pgpipe::is_composite<address> : std::true_type {};
template <>
struct pgpipe::is_composite<person> : std::true_type {};
template <>
struct pgpipe::is_composite<point> : std::true_type {};
template <>
struct pgpipe::is_composite<segment> : std::true_type {};

namespace {

using pgpipe::errc;
using pgpipe::wire_format;
using pgpipe::test::decode;
namespace oids = pgpipe::oids;
constexpr auto be = pgpipe::test::big_endian;
constexpr pgpipe::type_oid address_oid = 16600, person_oid = 16610, address_array_oid = 16601;

template <class T>
T text(std::string_view s, pgpipe::type_oid t = address_oid) {
  T out{};
  auto ec = decode(s, t, wire_format::text, out);
  EXPECT_FALSE(ec) << s << ": " << ec.message();
  return out;
}

std::error_code text_error(std::string_view s) {
  address out;
  return decode(s, address_oid, wire_format::text, out);
}

// One binary field: OID, length, bytes (std::nullopt: NULL, length -1).
std::string bin_field(pgpipe::type_oid oid, std::optional<std::string> bytes) {
  std::string s = be(oid, 4);
  if (!bytes) return s + be(0xffffffffu, 4);
  return s + be(bytes->size(), 4) + *bytes;
}

std::string bin_address(const std::string& street, std::int32_t zip, std::optional<std::string> note) {
  return be(3, 4) + bin_field(oids::text, street) + bin_field(oids::int4, be(static_cast<std::uint32_t>(zip), 4)) +
         bin_field(oids::text, std::move(note));
}

TEST(composite_codec, text_quotes_doubled_quotes_backslashes_and_empty_versus_null) {
  EXPECT_EQ(text<address>("(Main,12,x)"), (address{"Main", 12, "x"}));
  // record_out quotes text with spaces, commas, parentheses, quotes and
  // backslashes (doubling the last two) and an empty string; NULL is nothing.
  EXPECT_EQ(text<address>(R"x(("1 Main, Apt (2)",12,))x"), (address{"1 Main, Apt (2)", 12, std::nullopt}));
  EXPECT_EQ(text<address>(R"(("say ""hi""",0,""))"), (address{R"(say "hi")", 0, ""}));
  EXPECT_EQ(text<address>(R"(("C:\\dir",0,"a\"b"))"), (address{R"(C:\dir)", 0, R"(a"b)"}));
  EXPECT_EQ(text<address>("(\"phố Huế ☺\",1,)"), (address{"phố Huế ☺", 1, std::nullopt}));
  // Whitespace inside is data; around the parentheses it is skipped.
  EXPECT_EQ(text<address>("  ( a ,7,\tb)  "), (address{" a ", 7, "\tb"}));
  // A quoted part next to an unquoted one joins them, as record_in does.
  EXPECT_EQ(text<address>(R"(("a"b,7,))"), (address{"ab", 7, std::nullopt}));
  // Only ',' and ')' end an unquoted field: '(' is data (record_in agrees).
  EXPECT_EQ(text<address>("((Main,12,x)"), (address{"(Main", 12, "x"}));
}

TEST(composite_codec, malformed_text_is_conversion_error) {
  for (auto s : {"", "Main,12,x", "(Main,12,x", "(Main,12,x)junk", R"(("Main,12,x))", "(Main,12,x\\", "(Main,12,x\\)"})
    EXPECT_EQ(text_error(s), errc::conversion_error) << s;
  // A field that is not its member's type: the member's own error.
  EXPECT_EQ(text_error("(Main,twelve,x)"), errc::conversion_error);
}

TEST(composite_codec, a_field_count_other_than_the_structs_is_type_mismatch) {
  EXPECT_EQ(text_error("(Main,12)"), errc::type_mismatch);
  EXPECT_EQ(text_error("(Main,12,x,y)"), errc::type_mismatch);
  address out;
  EXPECT_EQ(decode(be(2, 4) + bin_field(oids::text, "a") + bin_field(oids::int4, be(1, 4)), address_oid,
                   wire_format::binary, out),
            errc::type_mismatch);
}

TEST(composite_codec, null_only_into_optional_members) {
  EXPECT_EQ(text_error("(,12,x)"), errc::null_value);
  EXPECT_EQ(text_error("(Main,,x)"), errc::null_value);
  EXPECT_EQ(text<address>("(Main,12,)").note, std::nullopt);
  // A NULL composite is std::optional's, like any value.
  std::optional<address> o;
  EXPECT_FALSE(pgpipe::detail::decode_field(std::optional<pgpipe::field_value>(), o));
  EXPECT_EQ(o, std::nullopt);
}

TEST(composite_codec, nested_composite_and_array_field_in_text) {
  // record_out of ('Ann', ('1 Main', 12, NULL), '{1,2}')::person.
  const person p = text<person>(R"x((Ann,"(""1 Main"",12,)","{1,2}"))x", person_oid);
  EXPECT_EQ(p, (person{"Ann", {"1 Main", 12, std::nullopt}, {1, 2}}));
  // A nested composite whose own text has backslashes: each level doubles them.
  const person q = text<person>(R"x((Bo,"(""a\\\\b"",0,"""")",{}))x", person_oid);
  EXPECT_EQ(q.home, (address{R"(a\b)", 0, ""}));
  EXPECT_TRUE(q.scores.empty());
}

TEST(composite_codec, binary_fields_with_their_types) {
  address out;
  ASSERT_FALSE(decode(bin_address("1 Main", 12, std::nullopt), address_oid, wire_format::binary, out));
  EXPECT_EQ(out, (address{"1 Main", 12, std::nullopt}));
  ASSERT_FALSE(decode(bin_address("", -5, ""), address_oid, wire_format::binary, out));
  EXPECT_EQ(out, (address{"", -5, ""}));

  // Nested: the inner composite's OID is a user type, checked by its decoder.
  const std::string p = be(3, 4) + bin_field(oids::text, "Ann") + bin_field(address_oid, bin_address("x", 1, "n")) +
                        bin_field(oids::int4_array, be(1, 4) + be(0, 4) + be(oids::int4, 4) + be(1, 4) + be(1, 4) +
                                                        be(4, 4) + be(7, 4));
  person pp;
  ASSERT_FALSE(decode(p, person_oid, wire_format::binary, pp));
  EXPECT_EQ(pp, (person{"Ann", {"x", 1, "n"}, {7}}));
}

TEST(composite_codec, a_binary_fields_built_in_type_is_checked) {
  // zip is sent as text: the struct says int32_t.
  address out;
  const std::string v = be(3, 4) + bin_field(oids::text, "a") + bin_field(oids::text, "12") + bin_field(oids::text, "n");
  EXPECT_EQ(decode(v, address_oid, wire_format::binary, out), errc::type_mismatch);
  // ... and the message a result gives names the field and both types.
  auto r = pgpipe_test::make_rows({{"home", address_oid, wire_format::binary}}, {{v}});
  try {
    (void)r[0][0].get<address>();
    FAIL() << "no error";
  } catch (const pgpipe::error& e) {
    EXPECT_EQ(e.code(), errc::type_mismatch);
    const std::string m = e.what();
    EXPECT_NE(m.find("composite field 1 (\"zip\") is text, read as int32_t"), std::string::npos) << m;
  }
}

TEST(composite_codec, truncated_or_lying_binary_is_conversion_error) {
  const std::string good = bin_address("1 Main", 12, "n");
  address out;
  for (std::size_t n = 0; n < good.size(); ++n)
    EXPECT_EQ(decode(good.substr(0, n), address_oid, wire_format::binary, out), errc::conversion_error) << n;
  EXPECT_EQ(decode(good + "x", address_oid, wire_format::binary, out), errc::conversion_error);
  // A count no value could hold, a negative count, a length past the end,
  // a negative length other than -1.
  EXPECT_EQ(decode(be(0x7fffffff, 4), address_oid, wire_format::binary, out), errc::conversion_error);
  EXPECT_EQ(decode(be(0xffffffffu, 4), address_oid, wire_format::binary, out), errc::conversion_error);
  EXPECT_EQ(decode(be(1, 4) + be(oids::text, 4) + be(100, 4) + "abc", address_oid, wire_format::binary, out),
            errc::conversion_error);
  EXPECT_EQ(decode(be(1, 4) + be(oids::text, 4) + be(0xfffffffeu, 4), address_oid, wire_format::binary, out),
            errc::conversion_error);
}

TEST(composite_codec, an_array_of_composites_reads_from_a_user_array_type) {
  using V = std::vector<address>;
  EXPECT_EQ(text<V>(R"x({"(a,1,)","(\"b c\",2,\"\")"})x", address_array_oid),
            (V{{"a", 1, std::nullopt}, {"b c", 2, ""}}));
  const std::string e1 = bin_address("a", 1, std::nullopt), e2 = bin_address("b", 2, "n");
  const std::string arr = be(1, 4) + be(0, 4) + be(address_oid, 4) + be(2, 4) + be(1, 4) + be(e1.size(), 4) + e1 +
                          be(e2.size(), 4) + e2;
  V out;
  ASSERT_FALSE(decode(arr, address_array_oid, wire_format::binary, out));
  EXPECT_EQ(out, (V{{"a", 1, std::nullopt}, {"b", 2, "n"}}));
  // Built-in arrays stay what they are.
  EXPECT_EQ(decode("{1}", oids::int4_array, wire_format::text, out), errc::type_mismatch);
}

TEST(composite_codec, a_composite_reads_only_from_a_user_type_or_record) {
  address out;
  EXPECT_EQ(decode("(a,1,)", oids::text, wire_format::text, out), errc::type_mismatch);
  EXPECT_FALSE(decode("(a,1,)", 2249, wire_format::text, out));  // record
}

TEST(composite_codec, null_into_a_plain_member_names_the_field) {
  auto r = pgpipe_test::make_rows({{"home", address_oid}}, {{"(,12,x)"}});
  try {
    (void)r[0][0].get<address>();
    FAIL() << "no error";
  } catch (const pgpipe::error& e) {
    EXPECT_EQ(e.code(), errc::null_value);
    const std::string m = e.what();
    EXPECT_NE(m.find("composite field 0 (\"street\") is NULL, read as std::string"), std::string::npos) << m;
  }
  // Nested: the path names both levels.
  auto n = pgpipe_test::make_rows({{"p", person_oid}}, {{R"x((Ann,"(x,,)",{}))x"}});
  try {
    (void)n[0][0].get<person>();
    FAIL() << "no error";
  } catch (const pgpipe::error& e) {
    EXPECT_EQ(e.code(), errc::null_value);
    const std::string m = e.what();
    EXPECT_NE(m.find("composite field 1 (\"home\"): composite field 1 (\"zip\") is NULL"), std::string::npos) << m;
  }
}

TEST(composite_codec, parameter_text_form_quotes_every_field) {
  using pgpipe::detail::encode_param;
  EXPECT_EQ(encode_param(address{"1 Main, (2)", 12, std::nullopt}), R"x(("1 Main, (2)","12",))x");
  EXPECT_EQ(encode_param(address{R"(say "hi" \o/)", 0, ""}), R"(("say ""hi"" \\o/","0",""))");
  EXPECT_EQ(encode_param(person{"Ann", {"x", 1, std::nullopt}, {1, 2}}),
            R"x(("Ann","(""x"",""1"",)","{""1"",""2""}"))x");
  EXPECT_EQ(encode_param(std::vector<address>{{"a b", 1, std::nullopt}}), R"x({"(\"a b\",\"1\",)"})x");
}

TEST(composite_codec, what_is_sent_reads_back_the_same) {
  for (const person& p : {person{"", {"", 0, ""}, {}}, person{"Ann", {"a,b", -1, std::nullopt}, {3}},
                          person{R"(q"uo\te)", {"(x)", 7, R"(\\)"}, {1, 2, 3}}, person{"phố ☺", {" ", 1, "\t"}, {}}}) {
    const auto s = pgpipe::detail::encode_param(p);
    ASSERT_TRUE(s);
    EXPECT_EQ(text<person>(*s, person_oid), p) << *s;
  }
}

}  // namespace

// A typed read asks for binary rows only when every member reads binary: a
// std::string member (which reads any column as text) keeps the row in text.
TEST(composite_codec, binary_results_only_when_every_member_reads_binary) {
  EXPECT_TRUE(pgpipe::field_traits<point>::binary_results);
  EXPECT_TRUE(pgpipe::field_traits<segment>::binary_results);
  EXPECT_TRUE(pgpipe::field_traits<std::vector<point>>::binary_results);
  EXPECT_FALSE(pgpipe::field_traits<address>::binary_results);
  EXPECT_FALSE(pgpipe::field_traits<person>::binary_results);
}
