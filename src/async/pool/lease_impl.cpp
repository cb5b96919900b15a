// lease_impl (contract in lease_impl.hpp): queries, streams and COPYs on one
// exclusively held connection, and its return to the pool.
#include "async/pool/lease_impl.hpp"

#include "async/connection/copy_state.hpp"
#include "async/connection/pipelined_connection.hpp"
#include "async/pool/client_impl.hpp"
#include "async/pool/request_hooks.hpp"
#include "async/pool/waiter_failure.hpp"
#include "core/sql/copy_statement.hpp"
#include "core/sql/script_statement.hpp"

#include <boost/asio/post.hpp>
#include <boost/asio/system_executor.hpp>

#include <limits>
#include <string>

namespace pgpipe::detail {

namespace asio = boost::asio;

lease_impl::lease_impl(std::shared_ptr<pipelined_connection> conn, slot_id slot, std::shared_ptr<client_impl> owner)
    : conn_(std::move(conn)), slot_(slot), owner_(std::move(owner)), handoff_(std::make_shared<lease_handoff>()) {}

const asio::any_io_executor& lease_impl::get_executor() const noexcept { return conn_->get_executor(); }

void lease_impl::submit_query(query_spec spec, std::unique_ptr<completion<result>> done,
                              asio::cancellation_slot slot) {
  auto req = owner_->new_query_request(std::move(spec), std::move(done), pool_clock::now(), true);
  if (owner_->loops_stopped()) {
    // The client is gone: its loops will never run this handler.
    owner_->finish_unstarted(req, asio::system_executor(), make_error_code(errc::closed),
                             client_error_result("the client was destroyed before this lease"));
    return;
  }
  if (released_.load(std::memory_order_acquire)) {
    owner_->finish_unstarted(req, conn_->get_executor(), make_error_code(errc::closed),
                             client_error_result("the lease was released"));
    return;
  }
  if (owner_->refuse_unencodable(req, conn_->get_executor())) return;
  note_session_change(leaves_session_changed(req->spec.sql));
  req->in_unit = in_unit_.load(std::memory_order_acquire);
  if (slot.is_connected()) slot.template emplace<lease_cancel_hook>(lease_cancel_hook{req, conn_});
  owner_->post_handoff(conn_, handoff_, lease_handoff::entry{{req}});
}

void lease_impl::submit_chain(std::vector<query_spec> specs, std::vector<std::unique_ptr<completion<result>>> done,
                              bool open_end) {
  const auto now = pool_clock::now();
  std::vector<std::shared_ptr<query_request>> reqs;
  reqs.reserve(specs.size());
  for (std::size_t i = 0; i < specs.size(); ++i) {
    reqs.push_back(owner_->new_query_request(std::move(specs[i]), std::move(done[i]), now, true));
    reqs.back()->chained = i + 1 < specs.size() || open_end;
    reqs.back()->opens_unit = i == 0;
    reqs.back()->in_unit = i > 0;
    // A whole transaction (BEGIN to COMMIT): its deadline asks the server.
    reqs.back()->cancel_at_deadline = !open_end;
  }
  // All or nothing: a chain with a piece missing would be another transaction.
  std::error_code refused;
  std::string why;
  std::size_t culprit = reqs.size();
  if (owner_->loops_stopped()) {
    refused = make_error_code(errc::closed);
    why = "the client was destroyed before this lease";
  } else if (released_.load(std::memory_order_acquire)) {
    refused = make_error_code(errc::closed);
    why = "the lease was released";
  } else {
    for (std::size_t i = 0; i < reqs.size() && !refused; ++i) {
      if (reqs[i]->spec.params.ec) {
        refused = reqs[i]->spec.params.ec;
        why = reqs[i]->spec.params.error_message;
        culprit = i;
      }
    }
  }
  if (refused) {
    const auto ex = owner_->loops_stopped() ? asio::any_io_executor(asio::system_executor()) : conn_->get_executor();
    for (std::size_t i = 0; i < reqs.size(); ++i) {
      if (i == culprit) {
        owner_->refuse_unencodable(reqs[i], ex);
      } else if (culprit == reqs.size()) {
        owner_->finish_unstarted(reqs[i], ex, refused, client_error_result(why));
      } else {
        owner_->finish_unstarted(reqs[i], ex, make_error_code(errc::not_sent),
                                 client_error_result("not sent: statement " + std::to_string(culprit) +
                                                     " of the same pipeline was refused (" + why + ")"));
      }
    }
    return;
  }
  for (auto& req : reqs) note_session_change(leaves_session_changed(req->spec.sql));
  if (open_end) in_unit_.store(true, std::memory_order_release);
  if (!reqs.empty()) owner_->post_handoff(conn_, handoff_, lease_handoff::entry{std::move(reqs)});
}

std::shared_ptr<query_request> lease_impl::make_handle_request(request_sink sink) const {
  auto req = std::make_shared<query_request>();
  req->sink = std::move(sink);
  req->on_lease = true;
  req->metrics = owner_->metrics();
  req->in_unit = in_unit_.load(std::memory_order_acquire);
  return req;
}

bool lease_impl::refused_as_released(std::error_code& ec, std::string& why) const {
  if (!released_.load(std::memory_order_acquire)) return false;
  ec = make_error_code(errc::closed);
  why = "the lease was released";
  return true;
}

void lease_impl::note_session_change(bool changed) noexcept {
  // A session change on a lease (SET, LISTEN, temp tables...: the statements
  // the shared path refuses) must not leak to the shared callers this
  // connection serves next: such a connection is retired when the lease ends.
  if (changed) changed_session_.store(true, std::memory_order_relaxed);
}

void lease_impl::post_failure(const std::shared_ptr<query_request>& req, std::error_code ec, std::string why) const {
  asio::post(conn_->get_executor(), [c = conn_, req, ec, why = std::move(why)] {
    c->fail_request(req, ec, client_error_result(why));
  });
}

std::shared_ptr<stream_state> lease_impl::start_stream(query_spec spec) {
  auto st = std::make_shared<stream_state>();
  st->conn = conn_;
  auto req = make_handle_request(stream_sink{st});
  req->submitted = pool_clock::now();
  st->req = req;
  std::error_code ec;
  std::string why;
  if (!refused_as_released(ec, why)) {
    if (spec.params.ec) {
      ec = spec.params.ec;
      why = spec.params.error_message;
    } else if (spec.stream_chunk_rows == 0 ||
               spec.stream_chunk_rows > static_cast<std::size_t>(std::numeric_limits<int>::max())) {
      // libpq takes the row count as an int.
      ec = make_error_code(errc::invalid_argument);
      why = "query_options::stream_chunk_rows must be between 1 and " +
            std::to_string(std::numeric_limits<int>::max()) + " (got " + std::to_string(spec.stream_chunk_rows) +
            "); nothing was sent";
    }
  }
  req->spec = std::move(spec);
  if (ec) {
    post_failure(req, ec, std::move(why));
  } else {
    owner_->post_handoff(conn_, handoff_, lease_handoff::entry{{req}});
  }
  return st;
}

std::shared_ptr<copy_state> lease_impl::start_copy(std::string sql, std::optional<std::chrono::milliseconds> timeout,
                                                   bool out) {
  auto st = std::make_shared<copy_state>(out);
  st->conn = conn_;
  auto req = make_handle_request(copy_sink{st});
  st->req = req;
  std::error_code ec;
  std::string why;
  if (!refused_as_released(ec, why)) {
    // One COPY only (core/sql/copy_statement.hpp), refused before sending
    // as in the blocking driver.
    if (std::string refusal = copy_statement_refusal(sql); !refusal.empty()) {
      ec = make_error_code(errc::invalid_argument);
      why = std::move(refusal);
    }
  }
  // No timeout unless asked: the caller paces a COPY.
  if (timeout && timeout->count() > 0) req->deadline = pool_clock::now() + *timeout;
  req->spec.sql = std::move(sql);
  if (ec) {
    post_failure(req, ec, std::move(why));
  } else {
    lease_handoff::entry e{{req}};
    e.observed = false;
    owner_->post_handoff(conn_, handoff_, std::move(e));
  }
  return st;
}

void lease_impl::submit_script(std::string sql, std::optional<std::chrono::milliseconds> timeout,
                               std::unique_ptr<completion<result>> done, asio::cancellation_slot slot) {
  auto req = make_handle_request(script_sink{std::move(done)});
  const auto now = pool_clock::now();
  req->submitted = now;
  if (owner_->loops_stopped()) {
    req->spec.sql = std::move(sql);
    owner_->finish_unstarted(req, asio::system_executor(), make_error_code(errc::closed),
                             client_error_result("the client was destroyed before this lease"));
    return;
  }
  std::error_code ec;
  std::string why;
  if (!refused_as_released(ec, why)) {
    if (auto check = check_script(sql, "async_execute_script"); !check.refusal.empty()) {
      ec = make_error_code(errc::invalid_argument);
      why = std::move(check.refusal);
    } else {
      note_session_change(check.changes_session);
    }
  }
  if (ec) {
    req->spec.sql = std::move(sql);
    owner_->finish_unstarted(req, conn_->get_executor(), ec, client_error_result(std::move(why)));
    return;
  }
  req->deadline = add_or_max(now, timeout.value_or(owner_->params().query_timeout));
  req->spec.sql = std::move(sql);
  if (slot.is_connected()) slot.template emplace<lease_cancel_hook>(lease_cancel_hook{req, conn_});
  owner_->post_handoff(conn_, handoff_, lease_handoff::entry{{req}});
}

void lease_impl::release() noexcept {
  if (released_.exchange(true, std::memory_order_acq_rel)) return;
  if (owner_->loops_stopped()) return;  // nothing left to give the connection back to
  try {
    if (changed_session_.load(std::memory_order_relaxed)) owner_->retire_after_lease(slot_);
    // Behind everything the lease started, whichever thread started it.
    lease_handoff::entry e;
    e.returns = true;
    owner_->post_handoff(conn_, handoff_, std::move(e));
  } catch (...) {
    // Posting allocates; if that fails the connection is lost to the pool
    // until the client closes, which is the best we can do in a destructor.
  }
}

}  // namespace pgpipe::detail
