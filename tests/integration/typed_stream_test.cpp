// Typed streams against a real server, the same scenarios for both drivers
// (async_client::async_stream_as, blocking_pool::stream_as): many rows read
// as they arrive, the shape refused before any row, NULL into a field that
// cannot hold it, a server error after some rows, and a stream left early;
// each on a pool of ONE connection, so a stream that failed to give its
// connection back clean fails the next query. Then the async stream driven
// by a coroutine and by callbacks, with several rows per chunk.
#include <pgpipe/async_client.hpp>
#include <pgpipe/blocking_pool.hpp>

#include "support/async_kit.hpp"
#include "support/result_drivers.hpp"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/use_future.hpp>
#include <boost/describe/class.hpp>
#include <gtest/gtest.h>

#include <cstdint>
#include <functional>
#include <future>
#include <memory>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

namespace {

namespace asio = boost::asio;
using pgpipe::errc;
using pgpipe::test::thrown;

struct item {
  std::int64_t id = 0;
  std::string name;
  std::optional<std::int32_t> score;
};
BOOST_DESCRIBE_STRUCT(item, (), (id, name, score))

// Columns in another order than item's fields; every seventh score NULL.
constexpr const char* items_sql =
    "select case when i % 7 = 0 then null else (i * 3)::int4 end as score, 'n' || i as name, i::int8 as id "
    "from generate_series(1, $1::int4) i";

template <class D>
class typed_stream : public ::testing::Test {
 protected:
  D d_{pgpipe::test::result_driver_params(1)};

  // The pool's one connection, by its server process.
  std::int32_t backend() { return d_.run("select pg_backend_pid()")[0][0].template get<std::int32_t>(); }

  // The one connection is back in the pool, idle and usable: the same
  // server process answers (a connection left busy would have been closed
  // and replaced, which a next query alone would not show).
  void expect_usable() {
    ASSERT_NE(first_backend_, 0);
    EXPECT_EQ(backend(), first_backend_) << "the stream's connection was not given back clean";
  }
  void SetUp() override { first_backend_ = backend(); }
  std::int32_t first_backend_ = 0;
};
TYPED_TEST_SUITE(typed_stream, pgpipe::test::result_drivers, pgpipe::test::driver_names);

TYPED_TEST(typed_stream, many_rows_into_a_described_struct) {
  std::vector<item> v;
  this->d_.template stream<item>(v, 100000, items_sql, 20000);
  ASSERT_EQ(v.size(), 20000u);
  for (std::size_t k = 0; k < v.size(); ++k) {
    const std::int64_t i = static_cast<std::int64_t>(k) + 1;
    ASSERT_EQ(v[k].id, i);
    ASSERT_EQ(v[k].name, "n" + std::to_string(i));
    if (i % 7 == 0) {
      ASSERT_FALSE(v[k].score.has_value()) << i;
    } else {
      ASSERT_EQ(v[k].score, i * 3) << i;
    }
  }
  this->expect_usable();
}

TYPED_TEST(typed_stream, binary_rows_into_a_tuple) {
  // Every field reads binary: the rows come in binary.
  using row = std::tuple<std::int64_t, double, std::optional<bool>>;
  std::vector<row> v;
  this->d_.template stream<row>(v, 100000,
                                "select i::int8, i / 4.0::float8, case when i % 2 = 0 then null else i % 3 = 0 end "
                                "from generate_series(1, 5000) i");
  ASSERT_EQ(v.size(), 5000u);
  EXPECT_EQ(std::get<0>(v[4999]), 5000);
  EXPECT_DOUBLE_EQ(std::get<1>(v[1]), 0.5);
  EXPECT_FALSE(std::get<2>(v[1]).has_value());
  EXPECT_EQ(std::get<2>(v[2]), true);
  EXPECT_EQ(std::get<2>(v[0]), false);
}

TYPED_TEST(typed_stream, a_shape_that_does_not_fit_fails_before_any_row) {
  std::vector<std::tuple<std::int64_t, std::int64_t>> by_position;
  auto e = thrown([&] { this->d_.template stream<std::tuple<std::int64_t, std::int64_t>>(by_position, 10, "select 1::int8, 'x'::text from generate_series(1, 1000)"); });
  EXPECT_EQ(e.code(), errc::type_mismatch);
  EXPECT_NE(std::string(e.what()).find("column 1"), std::string::npos) << e.what();
  EXPECT_NE(std::string(e.what()).find("text"), std::string::npos) << e.what();
  EXPECT_TRUE(by_position.empty());
  this->expect_usable();

  // A described struct missing a column, on a statement with no rows: the
  // shape is still checked, against the end of the stream.
  std::vector<item> by_name;
  e = thrown([&] { this->d_.template stream<item>(by_name, 10, "select 1::int8 as id, 'a' as name where false"); });
  EXPECT_EQ(e.code(), errc::columns_mismatch);
  EXPECT_NE(std::string(e.what()).find("score"), std::string::npos) << e.what();
  this->expect_usable();
}

TYPED_TEST(typed_stream, null_into_a_field_that_is_not_optional) {
  using row = std::tuple<std::int32_t>;
  std::vector<row> v;
  auto e = thrown([&] {
    this->d_.template stream<row>(v, 100,
                                  "select case when i = 3 then null else i end::int4 from generate_series(1, 1000) i");
  });
  EXPECT_EQ(e.code(), errc::null_value);
  EXPECT_NE(std::string(e.what()).find("row 2"), std::string::npos) << e.what();
  ASSERT_EQ(v.size(), 2u);  // the rows before it were handed out
  EXPECT_EQ(std::get<0>(v[1]), 2);
  this->expect_usable();
}

TYPED_TEST(typed_stream, a_server_error_after_some_rows) {
  std::vector<std::int32_t> v;
  auto e = thrown([&] { this->d_.template stream<std::int32_t>(v, 100, "select (10 / (3 - i))::int4 from generate_series(1, 5) i"); });
  EXPECT_EQ(e.code(), pgpipe::make_sqlstate("22012"));
  EXPECT_EQ(v, (std::vector<std::int32_t>{5, 10}));
  this->expect_usable();
}

TYPED_TEST(typed_stream, leaving_early_leaves_the_connection_usable) {
  for (int round = 0; round < 3; ++round) {
    std::vector<item> v;
    this->d_.template stream<item>(v, 10, items_sql, 1000000);
    ASSERT_EQ(v.size(), 10u);
    EXPECT_EQ(v[9].id, 10);
    this->expect_usable();
  }
}

// ---- the async stream with a coroutine and with callbacks -------------------

pgpipe::pool_params one_connection() { return pgpipe::test::result_driver_params(1); }

TEST(async_typed_stream, read_by_a_coroutine_in_chunks_of_many_rows) {
  pgpipe::async_client c(one_connection(), {.loops = 1});
  std::promise<std::int64_t> sum;
  asio::co_spawn(
      c.get_executor(),
      [&]() -> asio::awaitable<void> {
        auto s = co_await c.async_stream_as<std::tuple<std::int64_t>>(
            pgpipe::query_options{.stream_chunk_rows = 64}, "select i::int8 from generate_series(1, 10000) i",
            asio::use_awaitable);
        std::int64_t total = 0;
        while (auto x = co_await s.async_next(asio::use_awaitable)) total += std::get<0>(*x);
        // Past the end: the end again.
        EXPECT_FALSE((co_await s.async_next(asio::use_awaitable)).has_value());
        sum.set_value(total);
      },
      [&](std::exception_ptr e) {
        if (e) sum.set_exception(e);
      });
  EXPECT_EQ(sum.get_future().get(), 10000LL * 10001 / 2);
}

TEST(async_typed_stream, read_by_callbacks_on_a_lease) {
  pgpipe::async_client c(one_connection(), {.loops = 1});
  auto lease = c.async_acquire(asio::use_future).get();
  auto s = std::make_shared<pgpipe::async_typed_stream<item>>(lease.stream_as<item>(items_sql, 3000));
  std::promise<std::pair<std::error_code, std::size_t>> done;
  auto count = std::make_shared<std::size_t>(0);
  std::function<void(std::error_code, std::optional<item>)> on_row = [&](std::error_code ec, std::optional<item> x) {
    if (ec || !x) {
      done.set_value({ec, *count});
      return;
    }
    if (x->id != static_cast<std::int64_t>(++*count)) {
      done.set_value({make_error_code(errc::protocol_error), *count});
      return;
    }
    s->async_next(on_row);
  };
  s->async_next(on_row);
  auto [ec, n] = done.get_future().get();
  EXPECT_FALSE(ec) << ec.message();
  EXPECT_EQ(n, 3000u);
  // The lease runs its next query once the stream is over.
  auto r = lease.async_query("select 7::int4", asio::use_future).get();
  EXPECT_EQ(r[0][0].get<std::int32_t>(), 7);
}

TEST(async_typed_stream, a_second_pending_next_is_refused) {
  pgpipe::async_client c(one_connection(), {.loops = 1});
  auto s = c.async_stream_as<std::string>("select 'slow' || pg_sleep(0.3)::text", asio::use_future).get();
  auto first = s.async_next(pgpipe::test::use_future_ec);
  auto [ec, x] = s.async_next(pgpipe::test::use_future_ec).get();
  EXPECT_EQ(ec, errc::invalid_argument);
  EXPECT_FALSE(x.has_value());
  auto [ec1, x1] = first.get();
  EXPECT_FALSE(ec1) << ec1.message();
  EXPECT_EQ(x1, std::optional<std::string>("slow"));
  EXPECT_FALSE(s.async_next(asio::use_future).get().has_value());
}

}  // namespace
