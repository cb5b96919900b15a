// stats().completed in both drivers, written once over
// tests/support/driver_adapter.hpp: every query that ended counts once,
// whatever its outcome and wherever it ran (the pool or a lease, a server
// error or a parameter refused before sending), and the errors among them
// count by kind.
#include <pgpipe/async_copy.hpp>
#include <pgpipe/async_lease.hpp>
#include <pgpipe/blocking_copy.hpp>
#include <pgpipe/blocking_lease.hpp>

#include "support/cluster_fixture.hpp"
#include "support/driver_adapter.hpp"
#include "support/kit.hpp"
#include "support/use_future_ec.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>
#include <type_traits>

namespace {

using namespace pgpipe::test;
using pgpipe::errc;

// One statement on a lease, waited for; its error code (none on success).
template <class... Args>
std::error_code run_on(pgpipe::async_lease& l, std::string_view sql, const Args&... args) {
  auto f = l.async_query(sql, args..., use_future_ec);
  if (f.wait_for(std::chrono::seconds(30)) != std::future_status::ready) return make_error_code(std::errc::timed_out);
  return std::get<0>(f.get());
}

template <class... Args>
std::error_code run_on(pgpipe::blocking_lease& l, std::string_view sql, const Args&... args) {
  try {
    (void)l.exec(sql, args...);
    return {};
  } catch (const pgpipe::error& e) {
    return e.code();
  }
}

// A text parameter that text format cannot carry: refused before sending.
const std::string nul_param("a\0b", 3);

template <class D>
class stats_completed : public ::testing::Test {};
TYPED_TEST_SUITE(stats_completed, drivers, driver_names);

TYPED_TEST(stats_completed, every_query_that_ended_counts_once_on_the_pool_and_on_a_lease) {
  TypeParam db(params_for(app_conninfo("stats_completed"), 2));
  {
    auto lease = db.hold();
    // Five statements on one lease, one of them failing on the server.
    EXPECT_FALSE(run_on(lease, "select 1"));
    EXPECT_FALSE(run_on(lease, "select 2"));
    EXPECT_EQ(run_on(lease, "select 1/0"), pgpipe::make_sqlstate("22012"));
    EXPECT_FALSE(run_on(lease, "select 3"));
    EXPECT_FALSE(run_on(lease, "select $1::int", 4));
  }
  // Three on the pool, one failing.
  EXPECT_FALSE(db.run("select 1").ec);
  EXPECT_EQ(db.run("select 1/0").ec, pgpipe::make_sqlstate("22012"));
  EXPECT_FALSE(db.run("select 2").ec);

  const auto s = db.stats();
  EXPECT_EQ(s.completed, 8u) << "five on the lease and three on the pool, errors included";
  EXPECT_EQ(s.errors.server, 2u);
  EXPECT_EQ(s.errors.other, 0u);
  EXPECT_NE(pgpipe::to_prometheus(s).find("pgpipe_requests_completed_total 8\n"), std::string::npos);
}

TYPED_TEST(stats_completed, a_parameter_refused_before_sending_counts_alike_on_the_pool_and_on_a_lease) {
  TypeParam db(params_for(app_conninfo("stats_completed"), 2));
  EXPECT_EQ(db.run("select $1::text", nul_param).ec, errc::invalid_argument);
  auto after_pool = db.stats();
  EXPECT_EQ(after_pool.completed, 1u);
  EXPECT_EQ(after_pool.errors.other, 1u);
  {
    auto lease = db.hold();
    EXPECT_EQ(run_on(lease, "select $1::text", nul_param), errc::invalid_argument);
  }
  const auto after_lease = db.stats();
  EXPECT_EQ(after_lease.completed, 2u) << "the lease's refusal counts as the pool's did";
  EXPECT_EQ(after_lease.errors.other, 2u);
}

// A blocking COPY is one request: it counts once when it ends, success or
// failure, like exec().
TEST(stats_completed_blocking, every_copy_that_ended_counts_once) {
  blocking_driver db(params_for(app_conninfo("stats_completed"), 2));
  {
    auto lease = db.hold();
    (void)lease.exec("create temporary table copied(id int)");
    pgpipe::blocking_copy_in in(lease, "copy copied(id) from stdin");
    in.write("1\n2\n");
    EXPECT_EQ(in.finish(), 2u);
    pgpipe::blocking_copy_out out(lease, "copy copied to stdout");
    std::string chunk;
    std::size_t chunks = 0;
    while (out.next(chunk)) ++chunks;
    EXPECT_EQ(chunks, 2u);
    pgpipe::blocking_copy_in bad(lease, "copy copied(id) from stdin");
    bad.write("not a number\n");
    EXPECT_THROW((void)bad.finish(), pgpipe::error);
    pgpipe::blocking_copy_in dropped(lease, "copy copied(id) from stdin");
    dropped.write("3\n");
    dropped.abort("changed my mind");
  }
  const auto s = db.stats();
  EXPECT_EQ(s.completed, 5u) << "the create, two COPYs that succeeded, one the server refused, one aborted";
  EXPECT_EQ(s.errors.server, 1u);
  EXPECT_EQ(s.errors.cancelled, 1u);
}

// The async driver counts a COPY as the blocking driver does: once when it
// ends, a client abort as cancelled.
TEST(stats_completed_async, every_copy_that_ended_counts_once) {
  async_driver db(params_for(app_conninfo("stats_completed"), 2));
  {
    auto lease = db.hold();
    ASSERT_FALSE(run_on(lease, "create temporary table copied(id int)"));
    auto in = lease.copy_in("copy copied(id) from stdin");
    EXPECT_FALSE(in.async_write("1\n2\n", use_future_ec).get());
    auto [ec, r] = in.async_finish(use_future_ec).get();
    ASSERT_FALSE(ec) << r.diag().to_string();
    EXPECT_EQ(r.affected_rows(), 2u);
    auto out = lease.copy_out("copy copied to stdout");
    std::size_t chunks = 0;
    for (;;) {
      auto [nec, chunk] = out.async_next(use_future_ec).get();
      ASSERT_FALSE(nec);
      if (chunk.empty()) break;
      ++chunks;
    }
    EXPECT_GE(chunks, 1u);
    EXPECT_EQ(out.rows(), 2u);
    auto bad = lease.copy_in("copy copied(id) from stdin");
    EXPECT_FALSE(bad.async_write("not a number\n", use_future_ec).get());
    EXPECT_EQ(pgpipe::sqlstate_of(std::get<0>(bad.async_finish(use_future_ec).get())), "22P02");
    auto dropped = lease.copy_in("copy copied(id) from stdin");
    EXPECT_FALSE(dropped.async_write("3\n", use_future_ec).get());
    EXPECT_FALSE(dropped.async_abort("changed my mind", use_future_ec).get());
    auto stopped = lease.copy_out("copy (select g from generate_series(1, 5000000) g) to stdout");
    auto [sec, first] = stopped.async_next(use_future_ec).get();
    ASSERT_FALSE(sec);
    EXPECT_FALSE(first.empty());
    stopped.cancel();
    EXPECT_FALSE(run_on(lease, "select 1")) << "the lease serves after the cancelled COPY";
  }
  const auto s = db.stats();
  EXPECT_EQ(s.completed, 7u)
      << "the create, two COPYs that succeeded, one the server refused, one aborted, one cancelled, a select";
  EXPECT_EQ(s.errors.server, 1u);
  EXPECT_EQ(s.errors.cancelled, 2u);
}

}  // namespace
