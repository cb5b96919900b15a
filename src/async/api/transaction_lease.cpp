// async_client::async_begin and async_transaction_lease's end (contract in
// <pgpipe/async_transaction_lease.hpp>). Built on the public lease API and the
// transaction helpers' chain (lease_chain.hpp): BEGIN is submitted as an
// open chain, so it is written with the transaction's first statement and
// shares its Sync, as async_transaction does; nobody waits for it alone.
#include <pgpipe/async_client.hpp>
#include <pgpipe/async_transaction_lease.hpp>

#include "async/api/acquire_failure.hpp"
#include "async/api/lease_chain.hpp"
#include "core/sql/commit_check.hpp"
#include "async/connection/request.hpp"

#include <boost/asio/system_executor.hpp>

#include <mutex>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace pgpipe {

namespace asio = boost::asio;

void async_client::submit_begin(const std::shared_ptr<detail::client_impl>& impl, transaction_options opts,
                                std::unique_ptr<detail::completion<async_transaction_lease>> done,
                                asio::cancellation_slot slot) {
  if (opts.retry.max_attempts > 1) {
    diagnostics d;
    d.client_message =
        "async_begin cannot retry: the driver cannot run a transaction you drive yourself again; use "
        "async_transaction with transaction_options::retry";
    done->complete(asio::system_executor(), true, make_error_code(errc::invalid_argument),
                   async_transaction_lease(std::move(d)));
    return;
  }
  std::shared_ptr<detail::completion<async_transaction_lease>> d(std::move(done));
  auto acquired = [d, begin = begin_statement(opts)](std::error_code ec, async_lease l) {
    if (ec) {
      d->complete(asio::system_executor(), true, ec, async_transaction_lease(detail::acquire_failure(l, ec, "the transaction")));
      return;
    }
    std::vector<detail::query_spec> specs;
    specs.push_back(detail::query_spec{begin, {}, std::nullopt});
    auto begun = detail::start_chain(*detail::lease_access::impl(l), std::move(specs), true);
    auto ex = l.get_executor();
    d->complete(ex, false, {}, async_transaction_lease(std::move(l), std::move(begun)));
  };
  submit_acquire(impl, std::make_unique<detail::completion_impl<async_lease, decltype(acquired)>>(std::move(acquired)),
                 slot);
}

void async_transaction_lease::finish(async_lease l, std::shared_ptr<detail::chain_state> begun, const char* sql,
                               std::unique_ptr<detail::completion<result>> done) {
  if (!l.valid()) {
    done->complete(asio::system_executor(), true, make_error_code(errc::closed),
                   detail::client_error_result(std::string("the transaction was already ended (") + sql +
                                               " on an async_transaction_lease that was committed, rolled back or "
                                               "never begun)"));
    return;
  }
  auto held = std::make_shared<async_lease>(std::move(l));
  const auto ex = held->get_executor();
  std::shared_ptr<detail::completion<result>> d(std::move(done));
  held->async_query(sql, [held, begun, d, ex, sql](std::error_code ec, result r) {
    // BEGIN was answered before this statement (one connection, in order):
    // if it failed, its error is the transaction's, not the statement's.
    if (begun) {
      std::lock_guard lk(begun->m);
      if (!begun->out.empty() && begun->out[0].first) {
        ec = begun->out[0].first;
        r = result(diagnostics(begun->out[0].second.diag()));
      }
    }
    if (std::string_view(sql) == "COMMIT") {
      diagnostics why = r.diag();
      if (detail::note_commit_in_doubt(ec, why)) r = result(std::move(why));
    }
    held->release();
    d->complete(ex, false, ec, std::move(r));
  });
}

}  // namespace pgpipe
