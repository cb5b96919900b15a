// Both drivers behind one small interface that hands back what a user
// reads: a pgpipe::result, or rows of T through the typed operations. For
// the typed-row and type scenarios both drivers must pass, written once as a
// typed test (TYPED_TEST_SUITE(..., pgpipe::test::result_drivers,
// pgpipe::test::driver_names)). driver_adapter.hpp is the other interface:
// outcomes, batches and leases, for the pool's own behaviour.
//
// A driver D has:
//   static constexpr const char* name;        "async" or "blocking"
//   explicit D(const pool_params&);
//   result run(sql, args...);                  throws pgpipe::error
//   result run_as(result_format, sql, args...); the same, values in that format
//   std::vector<T> all<T>(sql, args...);       async_query_as / query_as
//   T one<T>(sql, args...);                    ..._one
//   std::optional<T> opt<T>(sql, args...);     ..._opt
//   void stream<T>(out, limit, sql, args...);  async_stream_as / stream_as:
//                                              up to `limit` rows appended to
//                                              `out` as they arrive, then the
//                                              stream dropped (throws as read)
#pragma once

#include "support/async_kit.hpp"
#include "support/cluster_fixture.hpp"
#include "support/driver_names.hpp"

#include <pgpipe/async_client.hpp>
#include <pgpipe/blocking_pool.hpp>

#include <boost/asio/use_future.hpp>
#include <gtest/gtest.h>

#include <chrono>
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace pgpipe::test {

/// What the typed and type scenarios run on: the shared cluster, `max_size`
/// connections, a generous acquire_timeout for a loaded machine.
inline pool_params result_driver_params(std::size_t max_size = 1) {
  pool_params p;
  p.conninfo = shared_cluster().conninfo();
  p.max_size = max_size;
  p.acquire_timeout = std::chrono::seconds(20);
  return p;
}

struct async_result_driver {
  static constexpr const char* name = "async";
  explicit async_result_driver(const pool_params& p) : client(p, {.loops = 1}) {}
  async_client client;

  template <class... A>
  result run(std::string_view sql, const A&... args) {
    auto [ec, r] = client.async_query(sql, args..., use_future_ec).get();
    if (ec) throw error(ec, r.diag().to_string());
    return std::move(r);
  }
  template <class... A>
  result run_as(result_format f, std::string_view sql, const A&... args) {
    auto [ec, r] = client.async_query(query_options{.results = f}, sql, args..., use_future_ec).get();
    if (ec) throw error(ec, r.diag().to_string());
    return std::move(r);
  }
  // use_future throws the operation's error with its diagnostics.
  template <class T, class... A>
  std::vector<T> all(std::string_view sql, const A&... args) {
    return client.async_query_as<T>(sql, args..., boost::asio::use_future).get();
  }
  template <class T, class... A>
  T one(std::string_view sql, const A&... args) {
    return client.async_query_as_one<T>(sql, args..., boost::asio::use_future).get();
  }
  template <class T, class... A>
  std::optional<T> opt(std::string_view sql, const A&... args) {
    return client.async_query_as_opt<T>(sql, args..., boost::asio::use_future).get();
  }
  template <class T, class... A>
  void stream(std::vector<T>& out, std::size_t limit, std::string_view sql, const A&... args) {
    auto s = client.async_stream_as<T>(sql, args..., boost::asio::use_future).get();
    while (out.size() < limit) {
      std::optional<T> x = s.async_next(boost::asio::use_future).get();
      if (!x) return;
      out.push_back(std::move(*x));
    }
  }
};

struct blocking_result_driver {
  static constexpr const char* name = "blocking";
  explicit blocking_result_driver(const pool_params& p) : pool(p) {}
  blocking_pool pool;

  template <class... A>
  result run(std::string_view sql, const A&... args) {
    return pool.exec(sql, args...);
  }
  template <class... A>
  result run_as(result_format f, std::string_view sql, const A&... args) {
    return pool.exec(f, sql, args...);
  }
  template <class T, class... A>
  std::vector<T> all(std::string_view sql, const A&... args) {
    return pool.query_as<T>(sql, args...);
  }
  template <class T, class... A>
  T one(std::string_view sql, const A&... args) {
    return pool.query_as_one<T>(sql, args...);
  }
  template <class T, class... A>
  std::optional<T> opt(std::string_view sql, const A&... args) {
    return pool.query_as_opt<T>(sql, args...);
  }
  template <class T, class... A>
  void stream(std::vector<T>& out, std::size_t limit, std::string_view sql, const A&... args) {
    if (limit == 0) return;
    for (const T& x : pool.stream_as<T>(sql, args...)) {
      out.push_back(x);
      if (out.size() >= limit) return;
    }
  }
};

using result_drivers = ::testing::Types<async_result_driver, blocking_result_driver>;

/// The pgpipe::error `f` throws; a test failure (and a placeholder) when it
/// throws none.
template <class F>
error thrown(F&& f) {
  try {
    f();
  } catch (const error& e) {
    return e;
  }
  ADD_FAILURE() << "no pgpipe::error thrown";
  return error(make_error_code(errc::protocol_error), "none");
}

}  // namespace pgpipe::test
