// A NUL byte in SQL text, against a real server, at every entry point of
// both drivers: libpq takes the text as a C string and would cut it there,
// so `delete from t where id = 1\0 and false` would delete row 1. Each entry
// point must refuse the text with errc::invalid_argument naming the NUL and
// its offset, and send nothing (the rows stay).
#include <pgpipe/async_client.hpp>
#include <pgpipe/async_listener.hpp>
#include <pgpipe/async_read_router.hpp>
#include <pgpipe/blocking_copy.hpp>
#include <pgpipe/blocking_listener.hpp>
#include <pgpipe/blocking_pool.hpp>
#include <pgpipe/blocking_read_router.hpp>
#include <pgpipe/transaction.hpp>

#include "support/async_kit.hpp"
#include "support/cluster_fixture.hpp"
#include "support/kit.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/use_future.hpp>

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace asio = boost::asio;
using namespace std::chrono_literals;
using namespace std::string_literals;
using pgpipe::errc;
using pgpipe::test::app_conninfo;
using pgpipe::test::params_for;
using pgpipe::test::shared_cluster;

namespace {

// A table holding ids 1, 2, 3.
std::string fresh_table(const std::string& name) {
  shared_cluster().exec("drop table if exists " + name + "; create table " + name +
                        "(id int primary key); insert into " + name + " values (1), (2), (3)");
  return name;
}

std::string ids_of(const std::string& table) {
  return shared_cluster().query_value("select coalesce(string_agg(id::text, ',' order by id), '') from " + table);
}

// Cut at the NUL, this deletes row 1; whole, it deletes nothing.
std::string cut_delete(const std::string& table) {
  return "delete from " + table + " where id = 1\0 and false"s;
}
std::size_t nul_offset(const std::string& sql) { return sql.find('\0'); }

// The refusal every entry point gives.
void expect_refused(const std::error_code& ec, const std::string& text, std::size_t offset) {
  EXPECT_EQ(ec, errc::invalid_argument) << ec.message() << " | " << text;
  EXPECT_NE(text.find("NUL byte at offset " + std::to_string(offset)), std::string::npos) << text;
}

pgpipe::query_options read_only() {
  pgpipe::query_options o;
  o.read_only = true;
  return o;
}

// ---- async driver ---------------------------------------------------------------

struct async_fixture {
  explicit async_fixture(const std::string& app) : client(params_for(app_conninfo(app), 2), {.loops = 1}) {}
  pgpipe::async_lease lease() {
    auto [ec, l] = client.async_acquire(pgpipe::test::use_future_ec).get();
    EXPECT_FALSE(ec) << ec.message();
    return std::move(l);
  }
  pgpipe::async_client client;
};

TEST(sql_text_nul, async_query_shared_and_on_a_lease_refuse_it_and_delete_nothing) {
  const auto t = fresh_table("nul_async_query");
  async_fixture f("nul_async_query");
  const auto sql = cut_delete(t);
  {
    auto [ec, r] = f.client.async_query(sql, pgpipe::test::use_future_ec).get();
    expect_refused(ec, r.diag().to_string(), nul_offset(sql));
  }
  {
    auto [ec, r] = f.client.async_query(read_only(), "select 1\0 union select 2"s, pgpipe::test::use_future_ec).get();
    expect_refused(ec, r.diag().to_string(), 8);
  }
  auto l = f.lease();
  {
    auto [ec, r] = l.async_query(sql, pgpipe::test::use_future_ec).get();
    expect_refused(ec, r.diag().to_string(), nul_offset(sql));
  }
  EXPECT_EQ(ids_of(t), "1,2,3");
  auto [ec, r] = l.async_query("select 7", pgpipe::test::use_future_ec).get();
  EXPECT_FALSE(ec) << r.diag().to_string();
}

TEST(sql_text_nul, async_streams_refuse_it) {
  const auto t = fresh_table("nul_async_stream");
  async_fixture f("nul_async_stream");
  const auto sql = "select id from " + t + " where id = 1\0 or true"s;
  {
    auto l = f.lease();
    auto s = l.stream(sql);
    auto [ec, chunk] = s.async_next(pgpipe::test::use_future_ec).get();
    expect_refused(ec, chunk.diag().to_string(), nul_offset(sql));
  }
  {
    auto [aec, s] = f.client.async_stream(sql, pgpipe::test::use_future_ec).get();
    ASSERT_FALSE(aec) << aec.message();
    auto [ec, chunk] = s.async_next(pgpipe::test::use_future_ec).get();
    expect_refused(ec, chunk.diag().to_string(), nul_offset(sql));
  }
}

TEST(sql_text_nul, async_copy_and_script_refuse_it) {
  const auto t = fresh_table("nul_async_copy");
  async_fixture f("nul_async_copy");
  auto l = f.lease();
  {
    // Cut, this is a text-format COPY that would accept "4\n".
    const auto sql = "copy " + t + " from stdin\0 with (format binary)"s;
    auto in = l.copy_in(sql);
    (void)in.async_write("4\n", pgpipe::test::use_future_ec).get();
    auto [ec, r] = in.async_finish(pgpipe::test::use_future_ec).get();
    expect_refused(ec, r.diag().to_string(), nul_offset(sql));
  }
  {
    const auto sql = "copy (select id from " + t + " where id = 1\0 and false) to stdout"s;
    auto out = l.copy_out(sql);
    auto [ec, chunk] = out.async_next(pgpipe::test::use_future_ec).get();
    EXPECT_EQ(ec, errc::invalid_argument) << ec.message();
  }
  {
    const auto sql = cut_delete(t);
    auto [ec, r] = l.async_execute_script(sql, pgpipe::test::use_future_ec).get();
    expect_refused(ec, r.diag().to_string(), nul_offset(sql));
  }
  EXPECT_EQ(ids_of(t), "1,2,3");
}

TEST(sql_text_nul, async_transaction_helpers_refuse_it_and_commit_nothing) {
  const auto t = fresh_table("nul_async_tx");
  async_fixture f("nul_async_tx");
  const auto sql = cut_delete(t);
  {
    std::vector<pgpipe::statement> batch;
    batch.emplace_back("insert into " + t + " values (10)");
    batch.emplace_back(sql);
    auto [ec, rep] = pgpipe::async_transaction_batch(f.client, {}, std::move(batch), pgpipe::test::use_future_ec).get();
    expect_refused(ec, rep.diag.to_string(), nul_offset(sql));
  }
  {
    auto work = [&](pgpipe::async_lease& l) -> asio::awaitable<std::error_code> {
      (void)co_await l.async_query("insert into " + t + " values (11)", asio::use_awaitable);
      auto [ec, r] = co_await l.async_query(sql, asio::as_tuple(asio::use_awaitable));
      expect_refused(ec, r.diag().to_string(), nul_offset(sql));
      co_return ec;
    };
    auto [ec, rep] = pgpipe::async_transaction(f.client, {}, work, pgpipe::test::use_future_ec).get();
    EXPECT_EQ(ec, errc::invalid_argument) << ec.message();
  }
  {
    auto [bec, tx] = f.client.async_begin({}, pgpipe::test::use_future_ec).get();
    ASSERT_FALSE(bec) << bec.message();
    auto [ec, r] = tx.async_query(sql, pgpipe::test::use_future_ec).get();
    expect_refused(ec, r.diag().to_string(), nul_offset(sql));
    (void)tx.async_rollback(pgpipe::test::use_future_ec).get();
  }
  EXPECT_EQ(ids_of(t), "1,2,3");
}

TEST(sql_text_nul, async_listener_refuses_a_channel_name_holding_it) {
  async_fixture f("nul_async_listener");
  pgpipe::async_listener listener(f.client, params_for(app_conninfo("nul_async_listener"), 1));
  const auto channel = "chan\0nel"s;
  const std::error_code ec = listener.async_subscribe(channel, pgpipe::test::use_future_ec).get();
  EXPECT_EQ(ec, errc::invalid_argument) << ec.message();
  const std::error_code ok = listener.async_subscribe("chan", pgpipe::test::use_future_ec).get();
  EXPECT_FALSE(ok) << ok.message();
}

TEST(sql_text_nul, async_read_router_refuses_it) {
  const auto t = fresh_table("nul_async_router");
  std::vector<pgpipe::async_client> replicas;
  replicas.emplace_back(params_for(app_conninfo("nul_async_router_r"), 1), pgpipe::async_client_options{.loops = 1});
  pgpipe::async_read_router router(pgpipe::async_client(params_for(app_conninfo("nul_async_router"), 1), {.loops = 1}),
                                   std::move(replicas));
  const auto sql = cut_delete(t);
  {
    auto [ec, r] = router.async_query(sql, pgpipe::test::use_future_ec).get();
    expect_refused(ec, r.diag().to_string(), nul_offset(sql));
  }
  {
    const auto read = "select 1\0 union select 2"s;
    auto [ec, r] = router.async_query(read_only(), read, pgpipe::test::use_future_ec).get();
    expect_refused(ec, r.diag().to_string(), 8);
  }
  EXPECT_EQ(ids_of(t), "1,2,3");
}

// ---- blocking driver ------------------------------------------------------------

template <class Fn>
void expect_throws_refusal(Fn&& fn, std::size_t offset) {
  try {
    fn();
    ADD_FAILURE() << "accepted a text holding a NUL byte";
  } catch (const pgpipe::error& e) {
    expect_refused(e.code(), e.what() + (" | " + e.diag().to_string()), offset);
  }
}

TEST(sql_text_nul, blocking_exec_on_the_pool_a_lease_and_in_a_transaction_refuse_it) {
  const auto t = fresh_table("nul_blocking_exec");
  pgpipe::blocking_pool pool(params_for(app_conninfo("nul_blocking_exec"), 2));
  const auto sql = cut_delete(t);
  const auto at = nul_offset(sql);
  expect_throws_refusal([&] { (void)pool.exec(sql); }, at);
  {
    auto lease = pool.acquire();
    expect_throws_refusal([&] { (void)lease.exec(sql); }, at);
    EXPECT_EQ(lease.exec("select 7")[0][0].get<int>(), 7);
  }
  expect_throws_refusal(
      [&] {
        pool.transaction([&](pgpipe::blocking_lease& l) {
          (void)l.exec("insert into " + t + " values (10)");
          (void)l.exec(sql);
        });
      },
      at);
  EXPECT_EQ(ids_of(t), "1,2,3");
}

TEST(sql_text_nul, blocking_copy_and_script_refuse_it) {
  const auto t = fresh_table("nul_blocking_copy");
  pgpipe::blocking_pool pool(params_for(app_conninfo("nul_blocking_copy"), 1));
  auto lease = pool.acquire();
  const auto copy_sql = "copy " + t + " from stdin\0 with (format binary)"s;
  expect_throws_refusal(
      [&] {
        pgpipe::blocking_copy_in in(lease, copy_sql);
        in.write("4\n");
        (void)in.finish();
      },
      nul_offset(copy_sql));
  const auto sql = cut_delete(t);
  expect_throws_refusal([&] { (void)lease.execute_script(sql); }, nul_offset(sql));
  EXPECT_EQ(ids_of(t), "1,2,3");
}

TEST(sql_text_nul, blocking_listener_refuses_a_channel_name_holding_it) {
  pgpipe::blocking_listener listener(params_for(app_conninfo("nul_blocking_listener"), 1));
  try {
    listener.subscribe("chan\0nel"s);
    ADD_FAILURE() << "subscribed to a channel name holding a NUL byte";
  } catch (const pgpipe::error& e) {
    EXPECT_EQ(e.code(), errc::invalid_argument) << e.what();
  }
  listener.subscribe("chan");
}

TEST(sql_text_nul, blocking_read_router_refuses_it) {
  const auto t = fresh_table("nul_blocking_router");
  std::vector<std::unique_ptr<pgpipe::blocking_pool>> replicas;
  replicas.push_back(std::make_unique<pgpipe::blocking_pool>(params_for(app_conninfo("nul_blocking_router_r"), 1)));
  pgpipe::blocking_read_router router(std::make_unique<pgpipe::blocking_pool>(params_for(app_conninfo("nul_blocking_router"), 1)),
                                      std::move(replicas));
  const auto sql = cut_delete(t);
  expect_throws_refusal([&] { (void)router.exec(sql); }, nul_offset(sql));
  expect_throws_refusal([&] { (void)router.exec(pgpipe::read_only, "select 1\0 union select 2"s); }, 8);
  EXPECT_EQ(ids_of(t), "1,2,3");
}

}  // namespace
