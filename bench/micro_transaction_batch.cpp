// What one async_transaction_batch costs the client: pgbench's TPC-B-like
// transaction (BEGIN, the five statements of bench/tpcb.hpp, COMMIT in one
// write) against a throwaway server started here, in the two shapes
// --workload tpcb runs it: `client`, a lease of the pool per transaction
// (async-pipelined), or `lease`, one lease held for the whole run
// (async-pipelined-lease). The client lives on this thread's io_context
// (a pool of one connection), so callgrind's count inside
// measured_transactions is the client's own work per transaction (building
// the statements, the batch's coroutine, the pool, the connection, libpq):
//
//   valgrind --tool=callgrind --toggle-collect='*measured_transactions*' build/bench/pgpipe_micro_transaction_batch client 2000
//
// then instructions per transaction = the count inside measured_transactions
// / 2,000. Run without valgrind it prints the mallocs per transaction: every
// malloc/calloc/realloc of the process (libpq's included) while the measured
// transactions ran, divided by their count (operator new calls malloc).
// Every transaction must commit with five results and the select's one row,
// else the program fails: a cheaper path that lost a result would not count.
#include "devcluster/devcluster.hpp"
#include "tpcb.hpp"
#include "malloc_count.hpp"

#include <pgpipe/async_client.hpp>
#include <pgpipe/transaction.hpp>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <stdexcept>
#include <string>
#include <tuple>
#include <vector>

namespace {

namespace asio = boost::asio;
namespace bench = pgpipe::bench;

std::vector<pgpipe::statement> statements_of(const bench::tpcb_draw& d) {
  std::vector<pgpipe::statement> work;
  work.reserve(bench::tpcb_statements.size());
  work.emplace_back(bench::tpcb_statements[0], d.delta, d.aid);
  work.emplace_back(bench::tpcb_statements[1], d.aid);
  work.emplace_back(bench::tpcb_statements[2], d.delta, d.tid);
  work.emplace_back(bench::tpcb_statements[3], d.delta, d.bid);
  work.emplace_back(bench::tpcb_statements[4], d.tid, d.bid, d.aid, d.delta);
  return work;
}

// `count` transactions one after another on `l`; the first failure ends the
// run with its message in `failure`.
// With `l` null, each on a lease of `c`'s pool.
asio::awaitable<void> transactions(pgpipe::async_client& c, pgpipe::async_lease* l, int count, bench::rng& r,
                                   std::string& failure) {
  for (int i = 0; i < count; ++i) {
    const bench::tpcb_draw d = bench::draw_tpcb(1, r);
    // Two statements, not a conditional expression around two co_awaits:
    // g++ 12 destroys that expression's temporaries wrongly.
    std::tuple<std::error_code, pgpipe::async_batch_report> outcome;
    if (l != nullptr) {
      outcome = co_await pgpipe::async_transaction_batch(*l, pgpipe::transaction_options{}, statements_of(d),
                                                         asio::as_tuple(asio::use_awaitable));
    } else {
      outcome = co_await pgpipe::async_transaction_batch(c, pgpipe::transaction_options{}, statements_of(d),
                                                         asio::as_tuple(asio::use_awaitable));
    }
    auto& [ec, out] = outcome;
    if (ec) {
      failure = "transaction " + std::to_string(i) + " failed: " + ec.message() + " " + out.diag.client_message;
      co_return;
    }
    if (out.results.size() != bench::tpcb_statements.size() || out.results[1].size() != 1) {
      failure = "transaction " + std::to_string(i) + ": " + std::to_string(out.results.size()) + " results";
      co_return;
    }
  }
}

void run(asio::io_context& io, pgpipe::async_client& c, pgpipe::async_lease* l, int count, bench::rng& r) {
  std::string failure;
  bool finished = false;
  asio::co_spawn(io, transactions(c, l, count, r, failure), [&finished](std::exception_ptr e) {
    finished = true;
    if (e) std::rethrow_exception(e);
  });
  io.restart();
  while (!finished) io.run_one();
  if (!failure.empty()) throw std::runtime_error(failure);
}

// Apart, so that callgrind can count it alone (--toggle-collect).
[[gnu::noinline]] void measured_transactions(asio::io_context& io, pgpipe::async_client& c, pgpipe::async_lease* l,
                                             int count, bench::rng& r) {
  run(io, c, l, count, r);
}

}  // namespace

int main(int argc, char** argv) {
  try {
    const std::string shape = argc > 1 ? argv[1] : "client";
    if (shape != "client" && shape != "lease") throw std::invalid_argument("the shape is client or lease, not " + shape);
    const int count = argc > 2 ? std::stoi(argv[2]) : 2000;
    if (count <= 0) throw std::invalid_argument("the transaction count must be positive");
    pgpipe::devcluster::cluster_params cp;
    cp.settings["synchronous_commit"] = "off";  // as pgpipe-bench's tpcb server: the clients, not the disk
    pgpipe::devcluster::cluster pg(cp);
    pg.start();
    bench::ensure_tpcb_tables(pg.conninfo(), 1);
    asio::io_context io;
    pgpipe::pool_params p;
    p.conninfo = pg.conninfo();
    p.max_size = 1;
    p.min_size = 1;
    pgpipe::async_client client(p, io);
    pgpipe::async_lease lease;
    pgpipe::async_lease* held = nullptr;
    if (shape == "lease") {
      bool acquired = false;
      std::error_code aec;
      client.async_acquire([&](std::error_code ec, pgpipe::async_lease l) {
        aec = ec;
        lease = std::move(l);
        acquired = true;
      });
      while (!acquired) io.run_one();
      if (aec) throw std::runtime_error("acquire failed: " + aec.message());
      held = &lease;
    }
    bench::rng r(42);
    run(io, client, held, 50, r);  // statements prepared, buffers grown
    pgpipe::bench::malloc_count::start();
    measured_transactions(io, client, held, count, r);
    const auto allocations = pgpipe::bench::malloc_count::stop();
    std::printf("%s transactions %d mallocs_per_transaction %.2f\n", shape.c_str(), count,
                static_cast<double>(allocations) / count);
    lease.release();
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "pgpipe_micro_transaction_batch: %s\n", e.what());
    return 1;
  }
}
