// What a failed operation tells its caller on the async driver: a failed
// query's result keeps its SQLSTATE and message, the server's fields reach
// the diagnostics, and with asio::use_awaitable / asio::use_future a failed
// operation throws pgpipe::error carrying them.
#include <pgpipe/pgpipe.hpp>

#include "support/async_kit.hpp"
#include "support/cluster_fixture.hpp"
#include "support/kit.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/use_future.hpp>

#include <gtest/gtest.h>

#include <optional>
#include <stdexcept>
#include <string>
#include <tuple>

namespace asio = boost::asio;
using namespace std::chrono_literals;

namespace {

using namespace pgpipe::test;  // the shared kit (tests/support)

pgpipe::pool_params errors_params() { return params_for(shared_cluster().conninfo(), 2); }

bool contains(std::string_view hay, std::string_view needle) { return hay.find(needle) != std::string_view::npos; }

}  // namespace

TEST(async_errors, reading_a_failed_querys_result_throws_its_sqlstate_and_message) {
  pgpipe::async_client client(errors_params());
  auto [ec, r] = client.async_query("selec 1", use_future_ec).get();
  ASSERT_EQ(ec, pgpipe::make_sqlstate("42601")) << ec.message();
  try {
    (void)r.value<int>();
    ADD_FAILURE() << "value<int>() on a failed query did not throw";
  } catch (const pgpipe::error& e) {
    EXPECT_EQ(pgpipe::sqlstate_of(e.code()), "42601") << e.what();
    EXPECT_EQ(e.diag().sqlstate, "42601") << e.what();
    EXPECT_TRUE(contains(e.what(), "syntax error at or near \"selec\"")) << e.what();
  }
  try {
    (void)r.empty();
    ADD_FAILURE() << "empty() on a failed query read as " << (r.native_handle() ? "a result" : "nothing");
  } catch (const pgpipe::error& e) {
    EXPECT_EQ(pgpipe::sqlstate_of(e.code()), "42601") << e.what();
  }
}

namespace {

// Runs `sql` on the shared path and returns what came back.
std::pair<std::error_code, pgpipe::result> run(pgpipe::async_client& c, const std::string& sql) {
  auto [ec, r] = c.async_query(sql, use_future_ec).get();
  return {ec, std::move(r)};
}

void setup(pgpipe::async_client& c, const std::string& sql) {
  auto [ec, r] = run(c, sql);
  ASSERT_FALSE(ec) << sql << ": " << r.diag().to_string();
}

}  // namespace

TEST(async_errors, unique_violation_names_its_constraint_table_and_schema) {
  pgpipe::async_client client(errors_params());
  setup(client, "drop table if exists errs_uniq");
  setup(client, "create table errs_uniq (id int primary key)");
  setup(client, "insert into errs_uniq values (1)");
  auto [ec, r] = run(client, "insert into errs_uniq values (1)");
  ASSERT_EQ(ec, pgpipe::make_sqlstate("23505")) << ec.message();
  const pgpipe::diagnostics& d = r.diag();
  EXPECT_EQ(d.constraint, "errs_uniq_pkey") << d.to_string();
  EXPECT_EQ(d.table, "errs_uniq") << d.to_string();
  EXPECT_EQ(d.schema, "public") << d.to_string();
  EXPECT_TRUE(contains(d.detail, "Key (id)=(1) already exists")) << d.detail;
}

TEST(async_errors, check_violation_is_named_in_the_message_with_its_constraint) {
  pgpipe::async_client client(errors_params());
  setup(client, "drop table if exists errs_check");
  setup(client, "create table errs_check (n int not null constraint n_positive check (n > 0))");
  auto [ec, r] = run(client, "insert into errs_check values (-1)");
  ASSERT_EQ(ec, pgpipe::make_sqlstate("23514")) << ec.message();
  EXPECT_TRUE(contains(ec.message(), "23514")) << ec.message();
  EXPECT_TRUE(contains(ec.message(), "check_violation")) << ec.message();
  EXPECT_EQ(r.diag().constraint, "n_positive") << r.diag().to_string();
  EXPECT_EQ(r.diag().table, "errs_check") << r.diag().to_string();

  auto [nec, nr] = run(client, "insert into errs_check values (null)");
  ASSERT_EQ(nec, pgpipe::make_sqlstate("23502")) << nec.message();
  EXPECT_EQ(nr.diag().column, "n") << nr.diag().to_string();
  EXPECT_EQ(nr.diag().table, "errs_check") << nr.diag().to_string();
}

TEST(async_errors, domain_violation_names_the_datatype_and_syntax_errors_the_position) {
  pgpipe::async_client client(errors_params());
  setup(client, "drop domain if exists errs_positive");
  setup(client, "create domain errs_positive as int check (value > 0)");
  auto [ec, r] = run(client, "select (-1)::errs_positive");
  ASSERT_EQ(ec, pgpipe::make_sqlstate("23514")) << ec.message();
  EXPECT_EQ(r.diag().datatype, "errs_positive") << r.diag().to_string();
  EXPECT_EQ(r.diag().schema, "public") << r.diag().to_string();

  auto [sec, sr] = run(client, "select 1 from errs_no_such_table");
  ASSERT_EQ(sec, pgpipe::make_sqlstate("42P01")) << sec.message();
  EXPECT_EQ(sr.diag().position, 15) << sr.diag().to_string();  // 1-based, in characters
  auto [pec, pr] = run(client, "selec 1");
  ASSERT_EQ(pec, pgpipe::make_sqlstate("42601"));
  EXPECT_EQ(pr.diag().position, 1) << pr.diag().to_string();
}

TEST(async_errors, wrong_password_is_28P01_on_acquire_and_on_the_first_query) {
  auto& pg = shared_cluster();
  const std::string secret = "Wr0ng-S3cret-errs";
  auto params = params_for(pg.conninfo_without_password() + " password=" + secret, 1);
  params.acquire_timeout = 5s;
  pgpipe::async_client client(params);

  auto [aec, l] = client.async_acquire(use_future_ec).get();
  EXPECT_EQ(pgpipe::sqlstate_of(aec), "28P01") << aec.message();
  EXPECT_EQ(aec, pgpipe::errc_condition::connect_error) << aec.message();
  EXPECT_EQ(aec, pgpipe::errc_condition::auth_error) << aec.message();
  EXPECT_FALSE(l.valid());
  EXPECT_EQ(l.diag().sqlstate, "28P01") << l.diag().to_string();
  EXPECT_TRUE(contains(l.diag().message, "password authentication failed")) << l.diag().to_string();
  EXPECT_FALSE(contains(l.diag().to_string(), secret)) << l.diag().to_string();

  auto [qec, r] = client.async_query("select 1", use_future_ec).get();
  EXPECT_EQ(pgpipe::sqlstate_of(qec), "28P01") << qec.message();
  EXPECT_EQ(r.diag().sqlstate, "28P01") << r.diag().to_string();
  EXPECT_TRUE(contains(r.diag().message, "password authentication failed")) << r.diag().to_string();
  EXPECT_FALSE(contains(r.diag().to_string(), secret)) << r.diag().to_string();
}

namespace {

// Runs `body` as a coroutine on the client's first loop and waits for it;
// returns the pgpipe::error it threw, if any.
template <class Body>
std::optional<pgpipe::error> error_thrown_in_coroutine(pgpipe::async_client& c, Body body) {
  std::optional<pgpipe::error> caught;
  asio::co_spawn(
      c.get_executor(),
      [&]() -> asio::awaitable<void> {
        try {
          co_await body();
        } catch (const pgpipe::error& e) {
          caught.emplace(e);
        }
      },
      asio::use_future)
      .get();
  return caught;
}

}  // namespace

TEST(async_errors, a_failed_query_in_a_coroutine_throws_its_sqlstate_and_message) {
  pgpipe::async_client client(errors_params());
  auto caught = error_thrown_in_coroutine(client, [&]() -> asio::awaitable<void> {
    auto out = co_await client.async_query("selec 1", asio::use_awaitable);
    (void)out;
  });
  ASSERT_TRUE(caught) << "co_await of a failed query with use_awaitable did not throw";
  EXPECT_EQ(pgpipe::sqlstate_of(caught->code()), "42601") << caught->what();
  EXPECT_EQ(caught->diag().sqlstate, "42601") << caught->what();
  EXPECT_EQ(caught->diag().position, 1) << caught->what();
  EXPECT_TRUE(contains(caught->what(), "syntax error at or near \"selec\"")) << caught->what();

  // Bound to a cancellation slot, the token still throws.
  asio::cancellation_signal signal;
  auto bound = error_thrown_in_coroutine(client, [&]() -> asio::awaitable<void> {
    auto out =
        co_await client.async_query("select 1/0", asio::bind_cancellation_slot(signal.slot(), asio::use_awaitable));
    (void)out;
  });
  ASSERT_TRUE(bound) << "bind_cancellation_slot(use_awaitable) did not throw";
  EXPECT_EQ(pgpipe::sqlstate_of(bound->code()), "22012") << bound->what();
}

TEST(async_errors, use_future_get_throws_the_failed_querys_error) {
  pgpipe::async_client client(errors_params());
  auto f = client.async_query("select 1/$1::int", 0, asio::use_future);
  try {
    auto out = f.get();
    (void)out;
    ADD_FAILURE() << "get() of a failed query's future did not throw";
  } catch (const pgpipe::error& e) {
    EXPECT_EQ(pgpipe::sqlstate_of(e.code()), "22012") << e.what();
    EXPECT_TRUE(contains(e.diag().message, "division by zero")) << e.what();
  }
}

TEST(async_errors, as_tuple_keeps_the_error_code_and_the_result) {
  pgpipe::async_client client(errors_params());
  auto [ec, r] = client.async_query("select 1/0", use_future_ec).get();
  EXPECT_EQ(ec, pgpipe::make_sqlstate("22012")) << ec.message();
  EXPECT_EQ(r.diag().sqlstate, "22012") << r.diag().to_string();

  std::error_code in_coroutine;
  auto caught = error_thrown_in_coroutine(client, [&]() -> asio::awaitable<void> {
    auto [qec, qr] = co_await client.async_query("selec 1", asio::as_tuple(asio::use_awaitable));
    in_coroutine = qec;
    EXPECT_TRUE(qr.failed());
  });
  EXPECT_FALSE(caught) << caught->what();
  EXPECT_EQ(in_coroutine, pgpipe::make_sqlstate("42601")) << in_coroutine.message();
}

TEST(async_errors, a_refused_acquire_throws_28P01_with_the_servers_text) {
  auto& pg = shared_cluster();
  const std::string secret = "Wr0ng-S3cret-throw";
  auto params = params_for(pg.conninfo_without_password() + " password=" + secret, 1);
  params.acquire_timeout = 5s;
  pgpipe::async_client client(params);
  auto caught = error_thrown_in_coroutine(client, [&]() -> asio::awaitable<void> {
    auto l = co_await client.async_acquire(asio::use_awaitable);
    (void)l;
  });
  ASSERT_TRUE(caught) << "a refused async_acquire with use_awaitable did not throw";
  EXPECT_EQ(pgpipe::sqlstate_of(caught->code()), "28P01") << caught->what();
  EXPECT_EQ(caught->diag().sqlstate, "28P01") << caught->what();
  EXPECT_TRUE(contains(caught->what(), "password authentication failed")) << caught->what();
  EXPECT_FALSE(contains(caught->what(), secret)) << caught->what();
}

TEST(async_errors, a_query_failing_inside_a_transaction_reaches_the_caller_with_its_fields) {
  pgpipe::async_client client(errors_params());
  setup(client, "drop table if exists errs_tx");
  setup(client, "create table errs_tx (id int constraint errs_tx_pk primary key)");
  auto caught = error_thrown_in_coroutine(client, [&]() -> asio::awaitable<void> {
    auto report = co_await pgpipe::async_transaction(
        client, {},
        [](pgpipe::async_lease& l) -> asio::awaitable<void> {
          auto first = co_await l.async_query("insert into errs_tx values (1)", asio::use_awaitable);
          auto second = co_await l.async_query("insert into errs_tx values (1)", asio::use_awaitable);
          (void)first;
          (void)second;
        },
        asio::use_awaitable);
    (void)report;
  });
  ASSERT_TRUE(caught) << "the transaction committed over a failed insert";
  EXPECT_EQ(pgpipe::sqlstate_of(caught->code()), "23505") << caught->what();
  EXPECT_EQ(caught->diag().constraint, "errs_tx_pk") << caught->what();
  EXPECT_EQ(std::get<1>(run(client, "select count(*)::int from errs_tx")).value<int>(), 0);
}

TEST(async_errors, a_transaction_whose_work_throws_anything_reports_it_as_one_error_with_its_text) {
  pgpipe::async_client client(errors_params());
  auto caught = error_thrown_in_coroutine(client, [&]() -> asio::awaitable<void> {
    auto report = co_await pgpipe::async_transaction(
        client, {}, [](pgpipe::async_lease&) -> asio::awaitable<void> { throw std::runtime_error("the work gave up"); },
        asio::use_awaitable);
    (void)report;
  });
  ASSERT_TRUE(caught) << "a transaction whose work threw did not throw";
  EXPECT_EQ(caught->code(), std::make_error_code(std::errc::state_not_recoverable)) << caught->what();
  EXPECT_TRUE(contains(caught->what(), "the work gave up")) << caught->what();
}

TEST(async_errors, query_one_and_query_opt_refuse_other_row_counts_naming_them) {
  pgpipe::async_client client(errors_params());
  pgpipe::result seven = client.async_query_one("select $1::int4", 7, asio::use_future).get();
  EXPECT_EQ(seven.one().get<int>(0), 7);
  try {
    auto out = client.async_query_one("select generate_series(1, 3)", asio::use_future).get();
    (void)out;
    ADD_FAILURE() << "async_query_one over three rows did not fail";
  } catch (const pgpipe::error& e) {
    EXPECT_EQ(e.code(), pgpipe::errc::out_of_range) << e.what();
    EXPECT_TRUE(contains(e.what(), "expected exactly one row, the query returned 3")) << e.what();
  }
  auto [nec, none] = client.async_query_opt("select 1 where false", use_future_ec).get();
  ASSERT_FALSE(nec) << nec.message();
  EXPECT_FALSE(none.opt().has_value());

  pgpipe::async_lease l = acquire(client);
  auto [tec, two] = l.async_query_opt("select generate_series(1, 2)", use_future_ec).get();
  EXPECT_EQ(tec, pgpipe::errc::out_of_range) << tec.message();
  EXPECT_TRUE(contains(two.diag().client_message, "the query returned 2")) << two.diag().to_string();
  auto [eec, empty] = l.async_query_one("select 1 where false", use_future_ec).get();
  EXPECT_EQ(eec, pgpipe::errc::out_of_range) << eec.message();
  EXPECT_TRUE(contains(empty.diag().client_message, "returned 0")) << empty.diag().to_string();
}
