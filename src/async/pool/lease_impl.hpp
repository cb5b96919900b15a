// lease_impl: what a lease is made of. One pool connection held exclusively
// (a pool_core `exclusive` grant): its queries go straight to that
// connection, unchecked by the sharing rules, and it starts the row streams
// and COPYs only a lease may run. Giving it back (release, or the destructor)
// returns the connection to the pool on its own loop.
#pragma once

#include "async/connection/request.hpp"
#include "async/pool/lease_handoff.hpp"
#include "core/pool/pool_core.hpp"

#include <pgpipe/detail/async_glue.hpp>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/cancellation_signal.hpp>

#include <atomic>
#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <system_error>
#include <vector>

namespace pgpipe::detail {

class client_impl;
class pipelined_connection;

class lease_impl final : public query_target, public std::enable_shared_from_this<lease_impl> {
 public:
  lease_impl(std::shared_ptr<pipelined_connection> conn, slot_id slot, std::shared_ptr<client_impl> owner);
  ~lease_impl() override { release(); }
  void submit_query(query_spec spec, std::unique_ptr<completion<result>> done,
                    boost::asio::cancellation_slot slot) override;
  /// A transaction as one pipeline segment (pipeline_core "Chains"):
  /// specs[0] is its BEGIN, the rest its statements; enqueued together, in
  /// order, so that they are written in one pass with one Sync after the
  /// last. BEGIN opens a unit (pipeline_core "Units"): nothing of the chain
  /// runs outside the transaction, whatever splits it. `open_end` leaves the
  /// last one chained too (it shares its Sync with the next query started
  /// on the lease, if that one is written in the same pass), and makes every
  /// later request of the lease part of the transaction's work: none runs
  /// if BEGIN failed. done[i] gets specs[i]'s outcome; the sizes must match.
  /// Never completes inline. Not cancellable.
  void submit_chain(std::vector<query_spec> specs, std::vector<std::unique_ptr<completion<result>>> done,
                    bool open_end);
  void release() noexcept;
  /// lease::stream.
  std::shared_ptr<stream_state> start_stream(query_spec spec);
  /// lease::copy_in/copy_out.
  std::shared_ptr<copy_state> start_copy(std::string sql, std::optional<std::chrono::milliseconds> timeout, bool out);
  /// async_execute_script: `sql` as one simple query, alone outside
  /// pipeline mode (connection_script.cpp). Refused before sending: a text
  /// with no statement or with a NUL byte (errc::invalid_argument).
  void submit_script(std::string sql, std::optional<std::chrono::milliseconds> timeout,
                     std::unique_ptr<completion<result>> done, boost::asio::cancellation_slot slot);
  const boost::asio::any_io_executor& get_executor() const noexcept;

 private:
  /// A request that a stream or COPY handle drives on this lease's
  /// connection: `sink` (the handle's state) gets the outcome.
  std::shared_ptr<query_request> make_handle_request(request_sink sink) const;
  /// True (with the error a stream or COPY then fails with) once released.
  bool refused_as_released(std::error_code& ec, std::string& why) const;
  /// Completes `req` with `ec` and `why` on its loop (the handle sees it).
  void post_failure(const std::shared_ptr<query_request>& req, std::error_code ec, std::string why) const;
  /// Remembers that a statement sent on the lease changed the session
  /// (leaves_session_changed): the connection is retired when the lease ends.
  void note_session_change(bool changed) noexcept;

  std::shared_ptr<pipelined_connection> conn_;
  slot_id slot_;
  // Strong: the loops (and their io_contexts) must outlive a lease's posts.
  std::shared_ptr<client_impl> owner_;
  /// Every start and the return go through it, so they reach the connection
  /// in the order they were made, whatever the threads (lease_handoff.hpp).
  std::shared_ptr<lease_handoff> handoff_;
  std::atomic<bool> released_{false};
  std::atomic<bool> changed_session_{false};  ///< ran a statement the shared path refuses as session-changing
  /// A transaction helper's BEGIN was submitted with an open end: every later
  /// request is the transaction's work (submit_chain).
  std::atomic<bool> in_unit_{false};
};

}  // namespace pgpipe::detail
