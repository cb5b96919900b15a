// multirange<T> parameters and reads, server-free: the text and binary forms
// the encoders make (multirange_in / multirange_recv's layouts), read back
// by the decoders the server's own values go through.
#include <pgpipe/range.hpp>

#include <gtest/gtest.h>

#include <cstdint>
#include <optional>
#include <string>

namespace {

using pgpipe::multirange;
using pgpipe::range;

template <class T>
multirange<T> read_back(const std::string& bytes, pgpipe::wire_format f, pgpipe::type_oid t) {
  multirange<T> out;
  EXPECT_FALSE(pgpipe::field_traits<multirange<T>>::decode(pgpipe::field_value{bytes, t, f}, out));
  return out;
}

TEST(multirange_codec, parameters_are_typed_by_their_range) {
  EXPECT_EQ(pgpipe::param_traits<multirange<std::int32_t>>::oid, pgpipe::oids::int4multirange);
  EXPECT_EQ(pgpipe::param_traits<multirange<std::int64_t>>::oid, pgpipe::oids::int8multirange);
  EXPECT_EQ(pgpipe::param_traits<multirange<pgpipe::numeric>>::oid, pgpipe::oids::nummultirange);
  EXPECT_EQ(pgpipe::multirange_oid_of(pgpipe::oids::daterange), pgpipe::oids::datemultirange);
  EXPECT_EQ(pgpipe::multirange_oid_of(pgpipe::oids::int4), 0u);
}

TEST(multirange_codec, text_form) {
  using P = pgpipe::param_traits<multirange<std::int32_t>>;
  EXPECT_EQ(P::encode({}), "{}");
  const multirange<std::int32_t> m{{range<std::int32_t>(1, 3), range<std::int32_t>(std::nullopt, -5, "(]"), range<std::int32_t>()}};
  const std::string text = *P::encode(m);
  EXPECT_EQ(text, "{[\"1\",\"3\"),(,\"-5\"],empty}");
  EXPECT_EQ(read_back<std::int32_t>(text, pgpipe::wire_format::text, pgpipe::oids::int4multirange), m);
}

TEST(multirange_codec, binary_form) {
  using P = pgpipe::param_traits<multirange<std::int64_t>>;
  std::string empty;
  ASSERT_FALSE(P::encode_binary({}, empty));
  EXPECT_EQ(empty, std::string("\0\0\0\0", 4));  // a count of 0
  const multirange<std::int64_t> m{{range<std::int64_t>(1, 3), range<std::int64_t>(10, std::nullopt)}};
  std::string bytes;
  ASSERT_FALSE(P::encode_binary(m, bytes));
  // count 2; [1,3): length 1 + 2 * (4 + 8); [10,): length 1 + 4 + 8.
  EXPECT_EQ(bytes.size(), 4u + 4 + 25 + 4 + 13);
  EXPECT_EQ(bytes.substr(0, 4), std::string("\0\0\0\2", 4));
  EXPECT_EQ(read_back<std::int64_t>(bytes, pgpipe::wire_format::binary, pgpipe::oids::int8multirange), m);
  // A count that claims more ranges than the bytes hold is malformed.
  bytes[3] = 3;
  multirange<std::int64_t> out;
  EXPECT_EQ(pgpipe::field_traits<multirange<std::int64_t>>::decode(
                pgpipe::field_value{bytes, pgpipe::oids::int8multirange, pgpipe::wire_format::binary}, out),
            pgpipe::errc::conversion_error);
}

}  // namespace
