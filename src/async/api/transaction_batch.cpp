// async_transaction_batch (contract in <pgpipe/transaction.hpp>): BEGIN, the
// statements and COMMIT as one chain on a lease (one write, one Sync: see
// pipeline_core "Chains"), awaited once.
//
// Why the first error in wire order is the one reported: the server skips
// every command after an error up to the Sync, and the driver completes
// those as skipped (25P02) behind it; only the first one ran and failed.
// Why ROLLBACK is sent after a failed statement: BEGIN ran, so the
// transaction block stays open (aborted) past the Sync; the next batch or
// acquire must find the connection idle. After COMMIT itself failed there
// is nothing to roll back.
// Why a deadline does not end the batch by itself once it is written: the
// server decides what stays. The connection cancels the statement the server
// runs and waits for its answer (pipeline_core "Written chains past their
// deadline"); that answer is the report. Only a lost connection with COMMIT
// written leaves the outcome unknown.
#include <pgpipe/transaction.hpp>

#include "async/api/lease_chain.hpp"
#include "core/sql/commit_check.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>

namespace pgpipe::detail {
namespace {

namespace asio = boost::asio;

bool connection_gone(const std::error_code& ec) {
  return ec == errc::connection_lost || ec == errc::not_sent || ec == errc::closed;
}

std::error_code refuse(async_batch_report& report, errc code, std::string why) {
  report.diag = diagnostics{};
  report.diag.client_message = std::move(why);
  return make_error_code(code);
}

// One call of async_transaction_batch, in one allocation that its
// coroutine works in and its completion hands the report from. Why the
// report stays here rather than being the coroutine's result: a
// report moved through co_spawn's result and pair is seven moves of its
// thirteen diagnostic strings, about 2,700 instructions a transaction.
struct batch_call {
  async_client* client;
  async_lease* given;
  transaction_options opts;
  std::vector<statement> statements;
  std::unique_ptr<completion<async_batch_report>> done;
  async_batch_report report;
};

}  // namespace

// A batch's last attempt sends its statements' specs without copying them
// (a copy is four allocations per statement: its SQL and three vectors of
// parameters); earlier attempts copy, for the retry.
// Appended in place, not returned: a spec's move is about 180 instructions
// (its parameters sit in small_vectors, moved one by one).
struct statement_access {
  static void add_spec(std::vector<query_spec>& specs, std::vector<statement>& statements, std::size_t i,
                       bool last_attempt) {
    if (last_attempt) {
      specs.push_back(std::move(statements[i].spec_));
    } else {
      specs.push_back(statements[i].spec_);
    }
  }
};

namespace {

// One attempt on `l`: the outcome, with report.results filled on success.
// On the last attempt the statements' specs are moved out.
asio::awaitable<std::error_code> run_once(async_lease& l, const std::string& begin, std::vector<statement>& statements,
                                          bool last_attempt, async_batch_report& report) {
  lease_impl* impl = lease_access::impl(l);
  if (impl == nullptr) {
    report.diag.client_message = "async_transaction_batch on an empty or released lease";
    co_return make_error_code(errc::closed);
  }
  const std::size_t n = statements.size();
  std::vector<query_spec> specs;
  specs.reserve(n + 2);
  specs.emplace_back().sql = begin;
  for (std::size_t i = 0; i < n; ++i) statement_access::add_spec(specs, statements, i, last_attempt);
  specs.emplace_back().sql = "COMMIT";
  auto chain = start_chain(*impl, std::move(specs), false);
  co_await wait_chain(chain);
  auto& out = chain->out;
  std::size_t first = out.size();
  for (std::size_t i = 0; i < out.size(); ++i) {
    if (out[i].first) {
      first = i;
      break;
    }
  }
  std::error_code ec;
  if (first == out.size()) {
    report.results.reserve(n);
    for (std::size_t i = 1; i <= n; ++i) report.results.push_back(std::move(out[i].second));
    co_return std::error_code{};
  }
  ec = out[first].first;
  report.diag = out[first].second.diag();
  if (out.back().first == errc::connection_lost) {
    // COMMIT was written and its answer lost: nothing here says what stayed.
    ec = out.back().first;
    note_commit_in_doubt(ec, report.diag);
    co_return ec;
  }
  if (ec == errc::query_timeout && report.diag.sqlstate == "57014") {
    // The server stopped it at the deadline: its transaction is rolled back.
    const std::string what = first == 0   ? std::string("BEGIN")
                             : first <= n ? "statement " + std::to_string(first - 1) + " of the batch"
                                          : std::string("COMMIT");
    report.diag.client_message = what +
                                 " was still running at the client's deadline; the server stopped it and rolled the "
                                 "transaction back: nothing of the batch stayed";
  }
  if (first == 0) {
    if (report.diag.client_message.empty()) report.diag.client_message = "BEGIN failed: " + ec.message();
  } else {
    report.failed_statement = first - 1;  // n: COMMIT
    if (report.diag.client_message.empty()) {
      report.diag.client_message =
          first <= n ? "statement " + std::to_string(first - 1) + " of the batch failed; the transaction was rolled back"
                     : "COMMIT failed";
    }
  }
  if (first <= n && !connection_gone(ec)) {
    auto [rec, rr] = co_await l.async_query("ROLLBACK", asio::as_tuple(asio::use_awaitable));
    (void)rr;
    (void)rec;  // a failed ROLLBACK means a broken connection: the lease replaces it on release
  }
  co_return ec;
}

// The batch's outcome; the report is left in call.report.
asio::awaitable<std::error_code> run_batch(batch_call& call) {
  async_batch_report& report = call.report;
  std::vector<statement>& statements = call.statements;
  const transaction_options& opts = call.opts;
  if (statements.empty()) co_return refuse(report, errc::invalid_argument, "an empty batch: nothing to run");
  for (std::size_t i = 0; i < statements.size(); ++i) {
    const auto& p = statements[i].spec().params;
    if (p.ec) {
      // Nothing is sent: a batch with a statement missing would be another transaction.
      report.failed_statement = i;
      co_return refuse(report, errc::invalid_argument,
                       "statement " + std::to_string(i) + ": " + p.error_message + "; nothing was sent");
    }
  }
  const unsigned max_attempts = std::max(1u, opts.retry.max_attempts);
  const std::string begin = begin_statement(opts);
  for (unsigned attempt = 1;; ++attempt) {
    async_lease own;
    async_lease* l = call.given;
    if (l == nullptr) {
      auto [aec, acquired] = co_await call.client->async_acquire(asio::as_tuple(asio::use_awaitable));
      if (aec) {
        report.diag = diagnostics{};
        report.diag.client_message = "could not acquire a lease for the transaction: " + aec.message();
        co_return aec;
      }
      own = std::move(acquired);
      l = &own;
    }
    report.attempts = attempt;
    report.failed_statement.reset();
    if (attempt > 1) report.diag = diagnostics{};  // the previous attempt's
    const std::error_code ec = co_await run_once(*l, begin, statements, attempt >= max_attempts, report);
    own.release();
    if (!ec || !is_retryable_transaction_error(ec) || attempt >= max_attempts) co_return ec;
    asio::steady_timer backoff(co_await asio::this_coro::executor);
    backoff.expires_after(retry_backoff(opts.retry, attempt + 1, retry_jitter_bits()));
    co_await backoff.async_wait(asio::as_tuple(asio::use_awaitable));
  }
}

}  // namespace

void start_transaction_batch(async_client* client, async_lease* lease_target, transaction_options opts,
                             std::vector<statement> statements, asio::any_io_executor ex,
                             std::unique_ptr<completion<async_batch_report>> done) {
  std::unique_ptr<batch_call> call(
      new batch_call{client, lease_target, std::move(opts), std::move(statements), std::move(done), {}});
  batch_call& c = *call;  // stays in place when `call` moves into the handler
  asio::co_spawn(ex, run_batch(c), [call = std::move(call), ex](std::exception_ptr e, std::error_code ec) mutable {
    if (e) {  // allocation failures only: nothing in run_batch throws otherwise
      ec = std::make_error_code(std::errc::not_enough_memory);
      call->report.diag.client_message = "the batch's coroutine failed to run";
    }
    call->done->complete(ex, true, ec, std::move(call->report));
  });
}

}  // namespace pgpipe::detail
