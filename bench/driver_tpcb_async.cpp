// --workload tpcb on the async driver, three ways a user writes the same
// transaction: async_transaction with each statement awaited (awaited);
// async_transaction_batch, BEGIN, the five statements and COMMIT in one
// write with one Sync (batch); BEGIN ... COMMIT by hand on a lease, each
// awaited (by_hand). One coroutine per logical client, spread over the
// client's loops as in the coroutine driver.
#include "async_common.hpp"
#include "driver.hpp"
#include "tpcb.hpp"

#include <pgpipe/async_client.hpp>
#include <pgpipe/transaction.hpp>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <thread>

namespace pgpipe::bench {
namespace {

namespace asio = boost::asio;

// The select's one row, read as an application would.
std::string check_balance(const pgpipe::result& r) {
  try {
    if (r.size() != 1) return "wrong_row_count";
    return r[0].get<std::int64_t>(0) == std::numeric_limits<std::int64_t>::min() ? "unexpected_value" : "";
  } catch (const pgpipe::error&) {
    return "conversion_error";
  }
}

class tpcb_async_driver final : public driver {
 public:
  tpcb_async_driver(driver_params p, tpcb_mode mode) : p_(std::move(p)), mode_(mode) {}
  ~tpcb_async_driver() override { close(); }

  void start(measurement& m) override {
    m_ = &m;
    if (mode_ == tpcb_mode::batch_on_lease && p_.concurrency > p_.pool) {
      throw std::runtime_error("async-pipelined-lease holds a lease per client: --concurrency " +
                               std::to_string(p_.concurrency) + " exceeds the pool (" + std::to_string(p_.pool) + ")");
    }
    const std::size_t loops = p_.loops ? p_.loops : std::max(1u, std::thread::hardware_concurrency());
    client_ = std::make_unique<pgpipe::async_client>(async_pool_params(p_), pgpipe::async_client_options{.loops = loops});
    const std::size_t n = client_->loop_count();
    for (std::size_t i = 0; i < p_.concurrency; ++i) {
      asio::co_spawn(client_->get_executor(i % n), logical_client(), asio::detached);
    }
  }

  bool pool_open() const override {
    const auto s = client_->stats();
    return s.idle + s.busy + s.checking >= p_.pool;
  }

  void close() override { client_.reset(); }

 private:
  asio::awaitable<void> logical_client() {
    if (mode_ == tpcb_mode::batch_on_lease) co_return co_await lease_holder();
    while (m_->begin_query()) {
      const tpcb_draw d = draw_tpcb(p_.work.scale, thread_rng());
      const auto started = bench_clock::now();
      std::string bad;
      std::error_code ec;
      switch (mode_) {
        case tpcb_mode::awaited: ec = co_await awaited(d, bad); break;
        case tpcb_mode::batch: ec = co_await batch(d, bad); break;
        case tpcb_mode::by_hand: ec = co_await by_hand(d, bad); break;
        case tpcb_mode::batch_on_lease: break;  // lease_holder()
      }
      if (!ec && !bad.empty()) {
        m_->end_query_failed(started, bad);
      } else {
        m_->end_query(started, ec);
      }
    }
  }

  asio::awaitable<std::error_code> awaited(const tpcb_draw& d, std::string& bad) {
    auto [ec, report] = co_await pgpipe::async_transaction(
        *client_, pgpipe::transaction_options{},
        [&d, &bad](pgpipe::async_lease& l) -> asio::awaitable<std::error_code> {
          auto run = [&l](auto&&... a) { return l.async_query(a..., asio::as_tuple(asio::use_awaitable)); };
          if (auto [e, r] = co_await run(tpcb_statements[0], d.delta, d.aid); e) co_return e;
          auto [e1, balance] = co_await run(tpcb_statements[1], d.aid);
          if (e1) co_return e1;
          bad = check_balance(balance);
          if (auto [e, r] = co_await run(tpcb_statements[2], d.delta, d.tid); e) co_return e;
          if (auto [e, r] = co_await run(tpcb_statements[3], d.delta, d.bid); e) co_return e;
          if (auto [e, r] = co_await run(tpcb_statements[4], d.tid, d.bid, d.aid, d.delta); e) co_return e;
          co_return std::error_code{};
        },
        asio::as_tuple(asio::use_awaitable));
    (void)report;
    co_return ec;
  }

  // As pgbench holds its connection: one lease per logical client for the
  // whole run (taken again only if its connection broke), each transaction
  // one async_transaction_batch on it.
  asio::awaitable<void> lease_holder() {
    pgpipe::async_lease l;
    while (m_->begin_query()) {
      const tpcb_draw d = draw_tpcb(p_.work.scale, thread_rng());
      const auto started = bench_clock::now();
      if (!l) {
        auto [aec, acquired] = co_await client_->async_acquire(asio::as_tuple(asio::use_awaitable));
        if (aec) {
          m_->end_query(started, aec);
          continue;
        }
        l = std::move(acquired);
      }
      auto [ec, out] = co_await pgpipe::async_transaction_batch(l, pgpipe::transaction_options{}, statements_of(d),
                                                                asio::as_tuple(asio::use_awaitable));
      if (ec == pgpipe::errc::connection_lost || ec == pgpipe::errc::not_sent) l.release();
      const std::string bad = ec ? "" : out.results.size() == tpcb_statements.size() ? check_balance(out.results[1])
                                                                                      : "wrong_result_count";
      if (!ec && !bad.empty()) {
        m_->end_query_failed(started, bad);
      } else {
        m_->end_query(started, ec);
      }
    }
  }

  static std::vector<pgpipe::statement> statements_of(const tpcb_draw& d) {
    std::vector<pgpipe::statement> work;
    work.reserve(tpcb_statements.size());
    work.emplace_back(tpcb_statements[0], d.delta, d.aid);
    work.emplace_back(tpcb_statements[1], d.aid);
    work.emplace_back(tpcb_statements[2], d.delta, d.tid);
    work.emplace_back(tpcb_statements[3], d.delta, d.bid);
    work.emplace_back(tpcb_statements[4], d.tid, d.bid, d.aid, d.delta);
    return work;
  }

  asio::awaitable<std::error_code> batch(const tpcb_draw& d, std::string& bad) {
    std::vector<pgpipe::statement> work;
    work.reserve(tpcb_statements.size());
    work.emplace_back(tpcb_statements[0], d.delta, d.aid);
    work.emplace_back(tpcb_statements[1], d.aid);
    work.emplace_back(tpcb_statements[2], d.delta, d.tid);
    work.emplace_back(tpcb_statements[3], d.delta, d.bid);
    work.emplace_back(tpcb_statements[4], d.tid, d.bid, d.aid, d.delta);
    auto [ec, out] = co_await pgpipe::async_transaction_batch(*client_, pgpipe::transaction_options{},
                                                              std::move(work), asio::as_tuple(asio::use_awaitable));
    if (!ec) bad = out.results.size() == tpcb_statements.size() ? check_balance(out.results[1]) : "wrong_result_count";
    co_return ec;
  }

  asio::awaitable<std::error_code> by_hand(const tpcb_draw& d, std::string& bad) {
    auto [aec, l] = co_await client_->async_acquire(asio::as_tuple(asio::use_awaitable));
    if (aec) co_return aec;
    auto run = [&l](auto&&... a) { return l.async_query(a..., asio::as_tuple(asio::use_awaitable)); };
    std::error_code failed;
    std::string balance_check;
    // The release rolls back whatever failed (the lease's contract).
    if (auto [e, r] = co_await run("begin"); e) co_return e;
    if (auto [e, r] = co_await run(tpcb_statements[0], d.delta, d.aid); e) co_return e;
    auto [e1, balance] = co_await run(tpcb_statements[1], d.aid);
    if (e1) co_return e1;
    bad = check_balance(balance);
    if (auto [e, r] = co_await run(tpcb_statements[2], d.delta, d.tid); e) co_return e;
    if (auto [e, r] = co_await run(tpcb_statements[3], d.delta, d.bid); e) co_return e;
    if (auto [e, r] = co_await run(tpcb_statements[4], d.tid, d.bid, d.aid, d.delta); e) co_return e;
    auto [ce, cr] = co_await run("commit");
    if (!ce && cr.command_tag() != "COMMIT") bad = "commit_rolled_back";
    co_return ce;
  }

  driver_params p_;
  tpcb_mode mode_;
  measurement* m_ = nullptr;
  std::unique_ptr<pgpipe::async_client> client_;
};

}  // namespace

std::unique_ptr<driver> make_tpcb_async_driver(const driver_params& p, tpcb_mode mode) {
  return std::make_unique<tpcb_async_driver>(p, mode);
}

}  // namespace pgpipe::bench
