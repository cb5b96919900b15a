// The async transaction and savepoint helpers: coroutines on the caller's
// executor (else the client's loop), built on the public lease API, so they
// see exactly what a caller writing BEGIN/COMMIT by hand would see; only
// BEGIN goes out as a chain (lease_chain.hpp), so that it shares the work's
// first write and Sync instead of a round trip of its own.
//
// Why the work's outcome is captured into variables first: a coroutine may
// not co_await inside a catch block, and ROLLBACK is an awaited query.
// Why ROLLBACK is sent explicitly even though a released lease rolls back:
// the next acquire must find the connection idle, and a ROLLBACK that fails
// tells us the connection is gone (the lease then replaces it on release).
#include <pgpipe/transaction.hpp>

#include "async/api/lease_chain.hpp"
#include "core/sql/commit_check.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <atomic>


namespace pgpipe::detail {
namespace {

namespace asio = boost::asio;

struct work_outcome {
  std::error_code ec;
  diagnostics diag;
  bool threw_other = false;  ///< not a system_error: never retried
};

asio::awaitable<work_outcome> run_work(const async_transaction_work& work, async_lease& l) {
  work_outcome out;
  try {
    out.ec = co_await work(l);
  } catch (const error& e) {
    out.ec = e.code();
    out.diag = e.diag();
  } catch (const std::system_error& e) {
    out.ec = e.code();
    out.diag.client_message = e.what();
  } catch (const std::exception& e) {
    // The report has one place for a failure, the code and the diagnostics:
    // what any other exception says goes into the client message.
    out.threw_other = true;
    out.ec = std::make_error_code(std::errc::state_not_recoverable);
    out.diag.client_message = std::string("the transaction's work threw: ") + e.what();
  } catch (...) {
    out.threw_other = true;
    out.ec = std::make_error_code(std::errc::state_not_recoverable);
    out.diag.client_message = "the transaction's work threw an exception that is not a std::exception";
  }
  co_return out;
}

asio::awaitable<std::pair<std::error_code, async_transaction_report>> run_transaction(async_client& client,
                                                                                transaction_options opts,
                                                                                async_transaction_work work) {
  async_transaction_report report;
  const unsigned max_attempts = std::max(1u, opts.retry.max_attempts);
  const std::string begin = begin_statement(opts);
  for (unsigned attempt = 1;; ++attempt) {
    auto [aec, l] = co_await client.async_acquire(asio::as_tuple(asio::use_awaitable));
    if (aec) {
      // The failed lease carries the connect error's server text (28P01...).
      report.diag = l.diag();
      if (!report.diag.has_server_error()) {
        report.diag.client_message = "could not acquire a lease for the transaction: " + aec.message();
      }
      co_return std::pair{aec, std::move(report)};
    }
    report.attempts = attempt;
    // BEGIN is not awaited before the work: it is written with the work's
    // first query (and shares its Sync when both go out in one write, so a
    // failed BEGIN skips that query). The rest of the work is the unit
    // BEGIN opens (lease_impl::submit_chain): after a failed BEGIN none of it
    // is sent (errc::not_sent), and BEGIN's error is the report.
    std::vector<query_spec> begin_spec;
    begin_spec.push_back(query_spec{begin, {}, std::nullopt});
    auto begun = start_chain(*lease_access::impl(l), std::move(begin_spec), true);
    work_outcome w = co_await run_work(work, l);
    co_await wait_chain(begun);
    if (auto& [bec, br] = begun->out[0]; bec) {
      report.diag = br.diag();
      co_return std::pair{bec, std::move(report)};  // the lease's release cleans up
    }
    if (!w.ec) {
      // A work that swallowed an error and returned success: the server
      // answers that COMMIT with ROLLBACK, which the lease reports as 25P02
      // (core/sql/commit_check.hpp), never as committed.
      auto [cec, cr] = co_await l.async_query("COMMIT", asio::as_tuple(asio::use_awaitable));
      if (!cec) {
        report.diag = diagnostics{};
        co_return std::pair{std::error_code{}, std::move(report)};
      } else {
        w.ec = cec;
        w.diag = cr.diag();
        note_commit_in_doubt(cec, w.diag);
      }
      // A failed COMMIT has ended the transaction already: nothing to roll back.
    } else {
      co_await l.async_query("ROLLBACK", asio::as_tuple(asio::use_awaitable));
    }
    l.release();
    report.diag = std::move(w.diag);
    if (w.threw_other || !is_retryable_transaction_error(w.ec) || attempt >= max_attempts) {
      co_return std::pair{w.ec, std::move(report)};
    }
    asio::steady_timer backoff(co_await asio::this_coro::executor);
    backoff.expires_after(retry_backoff(opts.retry, attempt + 1, retry_jitter_bits()));
    co_await backoff.async_wait(asio::as_tuple(asio::use_awaitable));
  }
}

asio::awaitable<std::pair<std::error_code, async_transaction_report>> run_savepoint(async_lease& l, async_transaction_work work) {
  async_transaction_report report;
  report.attempts = 1;
  auto [sec, sr] = co_await l.async_query("SAVEPOINT pgpipe_savepoint", asio::as_tuple(asio::use_awaitable));
  if (sec) {
    report.diag = sr.diag();
    co_return std::pair{sec, std::move(report)};
  }
  work_outcome w = co_await run_work(work, l);
  if (!w.ec) {
    auto [rec, rr] = co_await l.async_query("RELEASE SAVEPOINT pgpipe_savepoint", asio::as_tuple(asio::use_awaitable));
    if (rec) report.diag = rr.diag();
    co_return std::pair{rec, std::move(report)};
  }
  // ROLLBACK TO keeps the savepoint; RELEASE drops it, so an enclosing
  // savepoint of the same name is the innermost one again.
  // (Two statements: pipeline mode takes one per query.)
  co_await l.async_query("ROLLBACK TO SAVEPOINT pgpipe_savepoint", asio::as_tuple(asio::use_awaitable));
  co_await l.async_query("RELEASE SAVEPOINT pgpipe_savepoint", asio::as_tuple(asio::use_awaitable));
  report.diag = std::move(w.diag);
  co_return std::pair{w.ec, std::move(report)};
}

template <class Coro>
void spawn_to_completion(const asio::any_io_executor& ex, Coro coro,
                         std::unique_ptr<completion<async_transaction_report>> done) {
  asio::co_spawn(ex, std::move(coro),
                 [done = std::move(done), ex](std::exception_ptr e,
                                              std::pair<std::error_code, async_transaction_report> out) mutable {
                   if (e) {  // only allocation failures get here: the coroutines catch the work's exceptions
                     out.first = std::make_error_code(std::errc::state_not_recoverable);
                     out.second.diag = diagnostics{};
                     out.second.diag.client_message = "the transaction's coroutine failed to run";
                   }
                   done->complete(ex, true, out.first, std::move(out.second));
                 });
}

}  // namespace

// The callback's `done` resumes the coroutine by posting to its executor
// (never inline: done may be called from any thread, even from inside the
// work), at most once.
asio::awaitable<std::error_code> run_callback_work(const async_transaction_callback& work, async_lease& l) {
  auto ex = co_await asio::this_coro::executor;
  auto token = asio::as_tuple(asio::use_awaitable);
  auto [ec] = co_await asio::async_initiate<decltype(token), void(std::error_code)>(
      [&work, &l, ex](auto handler) {
        auto h = std::make_shared<decltype(handler)>(std::move(handler));
        auto called = std::make_shared<std::atomic<bool>>(false);
        work(l, [h, called, ex](std::error_code outcome) {
          if (called->exchange(true)) return;
          asio::post(ex, [h, outcome]() mutable { std::move (*h)(outcome); });
        });
      },
      token);
  co_return ec;
}

void start_transaction(async_client& client, transaction_options opts, async_transaction_work work,
                       std::unique_ptr<completion<async_transaction_report>> done) {
  start_transaction(client, std::move(opts), std::move(work), client.get_executor(), std::move(done));
}

void start_transaction(async_client& client, transaction_options opts, async_transaction_work work,
                       asio::any_io_executor ex, std::unique_ptr<completion<async_transaction_report>> done) {
  spawn_to_completion(ex, run_transaction(client, std::move(opts), std::move(work)), std::move(done));
}

void start_savepoint(async_lease& l, async_transaction_work work, std::unique_ptr<completion<async_transaction_report>> done) {
  auto ex = l.get_executor();
  if (!ex) {
    async_transaction_report report;
    report.diag.client_message = "savepoint on an empty lease";
    // No loop to run on: complete on the system executor, still never inline.
    done->complete(asio::system_executor(), true, make_error_code(errc::closed), std::move(report));
    return;
  }
  spawn_to_completion(ex, run_savepoint(l, std::move(work)), std::move(done));
}

}  // namespace pgpipe::detail
