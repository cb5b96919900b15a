// Both drivers' read routers (async_read_router, blocking_read_router) behind one
// small interface, for the scale-out tests that run a scenario against each
// (TYPED_TEST_SUITE(..., pgpipe::test::routers, pgpipe::test::router_names)):
// read (marked read-only) and write (unmarked) run one statement and wait
// for it, bounded, so a request that never completes shows as an error
// ("never completed") instead of hanging the test.
#pragma once

#include "support/async_kit.hpp"
#include "support/driver_adapter.hpp"

#include <pgpipe/blocking_read_router.hpp>
#include <pgpipe/async_read_router.hpp>

#include <boost/asio/use_future.hpp>
#include <gtest/gtest.h>

#include <chrono>
#include <future>
#include <memory>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

namespace pgpipe::test {

class async_router {
 public:
  static constexpr const char* name = "async";
  async_router(const pgpipe::pool_params& primary, const pgpipe::pool_params& replica,
               const pgpipe::read_routing_params& rp) {
    std::vector<pgpipe::async_client> replicas;
    replicas.emplace_back(replica, pgpipe::async_client_options{.loops = 1});
    router_ = std::make_unique<pgpipe::async_read_router>(pgpipe::async_client(primary, {.loops = 1}),
                                                    std::move(replicas), rp);
  }
  outcome read(std::string_view sql) { return wait(router_->async_query(read_only(), sql, pgpipe::test::use_future_ec)); }
  outcome write(std::string_view sql) { return wait(router_->async_query(sql, pgpipe::test::use_future_ec)); }
  // A statement on a lease: leases always come from the primary.
  outcome on_lease(std::string_view sql) {
    auto [ec, l] = router_->async_acquire(pgpipe::test::use_future_ec).get();
    if (ec) return outcome_of(ec, pgpipe::result{});
    return wait(l.async_query(sql, pgpipe::test::use_future_ec));
  }
  pgpipe::read_routing_stats stats() const { return router_->stats(); }
  /// Destroys the router (its probes, then its clients).
  void reset() { router_.reset(); }

 private:
  static pgpipe::query_options read_only() {
    pgpipe::query_options o;
    o.read_only = true;
    return o;
  }
  template <class Future>
  static outcome wait(Future f) {
    if (f.wait_for(std::chrono::seconds(30)) != std::future_status::ready) {
      outcome o;
      o.ec = make_error_code(std::errc::timed_out);
      o.text = "never completed";
      return o;
    }
    auto [ec, r] = f.get();
    return outcome_of(ec, r);
  }
  std::unique_ptr<pgpipe::async_read_router> router_;
};

class blocking_router {
 public:
  static constexpr const char* name = "blocking";
  blocking_router(const pgpipe::pool_params& primary, const pgpipe::pool_params& replica,
                  const pgpipe::read_routing_params& rp) {
    std::vector<std::unique_ptr<pgpipe::blocking_pool>> replicas;
    replicas.push_back(std::make_unique<pgpipe::blocking_pool>(replica));
    router_ = std::make_unique<pgpipe::blocking_read_router>(std::make_unique<pgpipe::blocking_pool>(primary),
                                                             std::move(replicas), rp);
  }
  outcome read(std::string_view sql) {
    return run([&] { return router_->exec(pgpipe::read_only, sql); });
  }
  outcome write(std::string_view sql) {
    return run([&] { return router_->exec(sql); });
  }
  outcome on_lease(std::string_view sql) {
    return run([&] { return router_->transaction([&](pqxx::work& tx) { return tx.exec(std::string(sql)); }); });
  }
  pgpipe::read_routing_stats stats() const { return router_->stats(); }
  /// Destroys the router (its probes, then its pools).
  void reset() { router_.reset(); }

 private:
  template <class Fn>
  static outcome run(Fn fn) {
    outcome o;
    try {
      const auto r = fn();  // pgpipe::result, or pqxx::result from a pqxx::work
      if constexpr (std::is_same_v<decltype(r), const pgpipe::result>) {
        if (!r.empty() && r.columns() > 0) o.first = std::string(r[0][0].text());
      } else {
        if (!r.empty() && r.columns() > 0) o.first = r[0][0].c_str();
      }
    } catch (const pgpipe::error& e) {
      o.ec = e.code();
      o.diag = e.diag();
      o.text = describe(o.ec, o.diag, e.what());
    } catch (const std::exception& e) {
      o.ec = std::make_error_code(std::errc::state_not_recoverable);
      o.text = std::string("non-pgpipe exception: ") + e.what();
    }
    return o;
  }
  std::unique_ptr<pgpipe::blocking_read_router> router_;
};

struct router_names {
  template <class T>
  static std::string GetName(int) {
    return T::name;
  }
};
using routers = ::testing::Types<async_router, blocking_router>;

}  // namespace pgpipe::test
