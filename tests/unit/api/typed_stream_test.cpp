// The server-free parts of the typed streams: the chunk reader both drivers
// share (the shape checked once, on the first chunk or on the end; rows
// counted over the whole stream in messages), and the empty streams of
// both drivers.
#include <pgpipe/async_typed_stream.hpp>
#include <pgpipe/blocking_typed_stream.hpp>
#include <pgpipe/detail/typed_stream_reader.hpp>

#include "support/made_result.hpp"

#include "support/use_future_ec.hpp"

#include <boost/asio/use_future.hpp>
#include <boost/describe/class.hpp>
#include <gtest/gtest.h>

#include <cstdint>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

namespace {

using pgpipe::errc;
using pgpipe_test::make_rows;
namespace oids = pgpipe::oids;

struct user {
  std::int64_t id = 0;
  std::string name;
};
BOOST_DESCRIBE_STRUCT(user, (), (id, name))

pgpipe::result users(std::vector<std::vector<std::optional<std::string>>> rows) {
  // The columns in another order than user's fields.
  return make_rows({{"name", oids::text}, {"id", oids::int8}}, rows);
}

TEST(typed_stream_reader, rows_of_every_chunk_in_order) {
  pgpipe::detail::typed_stream_reader<user> reader;
  std::string message;
  std::vector<user> got;
  std::vector<pgpipe::result> chunks;
  chunks.push_back(users({{"a", "1"}, {"b", "2"}}));
  chunks.push_back(users({{"c", "3"}}));
  chunks.push_back(users({}));  // the end
  for (auto& chunk : chunks) {
    ASSERT_FALSE(reader.feed(std::move(chunk), message)) << message;
    while (reader.has_row()) {
      user u;
      ASSERT_FALSE(reader.take(u, message)) << message;
      got.push_back(u);
    }
  }
  ASSERT_EQ(got.size(), 3u);
  EXPECT_EQ(got[2].id, 3);
  EXPECT_EQ(got[2].name, "c");
  // Past the end: a result with no columns is nothing to check.
  EXPECT_FALSE(reader.feed(pgpipe::result(), message));
  EXPECT_FALSE(reader.has_row());
}

TEST(typed_stream_reader, a_failed_value_names_its_row_in_the_whole_stream) {
  pgpipe::detail::typed_stream_reader<user> reader;
  std::string message;
  ASSERT_FALSE(reader.feed(users({{"a", "1"}, {"b", "2"}}), message));
  user u;
  ASSERT_FALSE(reader.take(u, message));
  ASSERT_FALSE(reader.take(u, message));
  ASSERT_FALSE(reader.feed(users({{"c", std::nullopt}}), message));
  EXPECT_EQ(reader.take(u, message), errc::null_value);
  EXPECT_NE(message.find("row 2"), std::string::npos) << message;
  EXPECT_NE(message.find("\"id\""), std::string::npos) << message;
  EXPECT_FALSE(reader.has_row());  // nothing is handed out after it
}

TEST(typed_stream_reader, the_shape_is_checked_on_the_end_when_no_row_came) {
  pgpipe::detail::typed_stream_reader<std::tuple<std::int64_t>> reader;
  std::string message;
  EXPECT_EQ(reader.feed(users({}), message), errc::columns_mismatch);
  EXPECT_NE(message.find("2 column(s)"), std::string::npos) << message;
  EXPECT_FALSE(reader.has_row());
}

TEST(typed_stream_reader, the_shape_is_checked_once) {
  pgpipe::detail::typed_stream_reader<std::tuple<std::int64_t>> reader;
  std::string message;
  ASSERT_FALSE(reader.feed(make_rows({{"n", oids::int8}}, {{"1"}}), message));
  std::tuple<std::int64_t> x;
  ASSERT_FALSE(reader.take(x, message));
  // The next chunk is read with the plan of the first (a stream's chunks
  // all have the statement's columns).
  ASSERT_FALSE(reader.feed(make_rows({{"n", oids::int8}}, {{"7"}}), message));
  ASSERT_FALSE(reader.take(x, message));
  EXPECT_EQ(std::get<0>(x), 7);
}

TEST(async_typed_stream, an_empty_stream_is_closed) {
  pgpipe::async_typed_stream<user> s;
  EXPECT_FALSE(s.valid());
  auto [ec, u] = s.async_next(pgpipe::test::use_future_ec).get();
  EXPECT_EQ(ec, errc::closed);
  EXPECT_FALSE(u.has_value());
  try {
    (void)s.async_next(boost::asio::use_future).get();
    ADD_FAILURE() << "no pgpipe::error thrown";
  } catch (const pgpipe::error& e) {
    EXPECT_EQ(e.code(), errc::closed);
    EXPECT_NE(std::string(e.what()).find("empty async_typed_stream"), std::string::npos) << e.what();
  }
}

TEST(blocking_typed_stream, an_empty_lease_is_refused) {
  pgpipe::blocking_lease none;
  try {
    pgpipe::blocking_typed_stream<user> s(none, "select 1");
    ADD_FAILURE() << "no pgpipe::error thrown";
  } catch (const pgpipe::error& e) {
    EXPECT_EQ(e.code(), errc::closed);
  }
  // Refused before anything is sent, whatever the lease.
  try {
    pgpipe::blocking_typed_stream<user> s(none, std::string_view("select\0 1", 9));
    ADD_FAILURE() << "no pgpipe::error thrown";
  } catch (const pgpipe::error& e) {
    EXPECT_EQ(e.code(), errc::invalid_argument);
  }
}

}  // namespace
