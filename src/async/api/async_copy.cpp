// async_copy_in / async_copy_out: thin handles over a copy_state, and
// lease::copy_in/copy_out, which start them (through lease_impl::start_copy).
// The COPY itself runs in copy_state.cpp, on its connection's loop.
#include <pgpipe/async_copy.hpp>
#include <pgpipe/async_lease.hpp>

#include "async/connection/copy_state.hpp"
#include "async/connection/pipelined_connection.hpp"
#include "async/pool/lease_impl.hpp"

#include <boost/asio/post.hpp>
#include <boost/asio/system_executor.hpp>

namespace pgpipe {

namespace detail {

namespace {

// Runs `fn(copy, done)` on the COPY's loop, or completes `done` with
// errc::closed when there is no COPY behind the handle.
template <class T, class Fn>
void on_loop(const std::shared_ptr<copy_state>& st, std::unique_ptr<completion<T>> done, Fn fn) {
  if (!st) {
    done->complete(boost::asio::system_executor(), true, make_error_code(errc::closed), T{});
    return;
  }
  boost::asio::post(st->conn->get_executor(), [st, d = std::move(done), fn = std::move(fn)]() mutable {
    fn(*st, std::move(d));
  });
}

}  // namespace
}  // namespace detail

// ---- lease -----------------------------------------------------------------------

async_copy_in async_lease::copy_in(std::string_view copy_sql, const query_options& opts) {
  if (!impl_) return async_copy_in();
  return async_copy_in(impl_->start_copy(std::string(copy_sql), opts.timeout, false));
}

async_copy_out async_lease::copy_out(std::string_view copy_sql, const query_options& opts) {
  if (!impl_) return async_copy_out();
  return async_copy_out(impl_->start_copy(std::string(copy_sql), opts.timeout, true));
}

// ---- async_copy_in ------------------------------------------------------------------

async_copy_in& async_copy_in::operator=(async_copy_in&& other) noexcept {
  if (this != &other) {
    async_copy_in old(std::move(*this));  // aborts the COPY this one held
    st_ = std::move(other.st_);
  }
  return *this;
}

async_copy_in::~async_copy_in() {
  if (!st_) return;
  try {
    // Aborted unless it already ended (then this is a no-op on the loop).
    auto noop = [](std::error_code) {};
    submit_abort(st_, "copy_in destroyed before async_finish",
                 std::make_unique<detail::completion_impl<std::monostate, decltype(noop)>>(noop));
  } catch (...) {
    // Out of memory posting: the COPY stays open until the lease's
    // connection is closed, which rolls it back.
  }
}

void async_copy_in::submit_write(const std::shared_ptr<detail::copy_state>& st, std::string data,
                                 std::unique_ptr<detail::completion<std::monostate>> done) {
  detail::on_loop(st, std::move(done),
                  [data = std::move(data)](detail::copy_state& s,
                                           std::unique_ptr<detail::completion<std::monostate>> d) mutable {
                    s.write(std::move(data), std::move(d));
                  });
}

void async_copy_in::submit_finish(const std::shared_ptr<detail::copy_state>& st,
                                  std::unique_ptr<detail::completion<result>> done) {
  if (!st) {
    done->complete(boost::asio::system_executor(), true, make_error_code(errc::closed),
                   detail::client_error_result("empty async_copy_in"));
    return;
  }
  detail::on_loop(st, std::move(done), [](detail::copy_state& s, std::unique_ptr<detail::completion<result>> d) {
    s.finish(std::move(d));
  });
}

void async_copy_in::submit_abort(const std::shared_ptr<detail::copy_state>& st, std::string reason,
                                 std::unique_ptr<detail::completion<std::monostate>> done) {
  detail::on_loop(st, std::move(done),
                  [reason = std::move(reason)](detail::copy_state& s,
                                               std::unique_ptr<detail::completion<std::monostate>> d) mutable {
                    s.abort(std::move(reason), std::move(d));
                  });
}

// ---- async_copy_out -----------------------------------------------------------------

async_copy_out& async_copy_out::operator=(async_copy_out&& other) noexcept {
  if (this != &other) {
    cancel();
    st_ = std::move(other.st_);
  }
  return *this;
}

async_copy_out::~async_copy_out() { cancel(); }

std::uint64_t async_copy_out::rows() const noexcept { return st_ ? st_->rows.load(std::memory_order_acquire) : 0; }

void async_copy_out::cancel() noexcept {
  if (!st_) return;
  try {
    boost::asio::post(st_->conn->get_executor(), [st = st_] { st->cancel(); });
  } catch (...) {
    // Out of memory posting: the rest is read when the lease is returned.
  }
}

void async_copy_out::submit_next(const std::shared_ptr<detail::copy_state>& st,
                                 std::unique_ptr<detail::completion<std::string>> done) {
  detail::on_loop(st, std::move(done), [](detail::copy_state& s, std::unique_ptr<detail::completion<std::string>> d) {
    s.next(std::move(d));
  });
}

}  // namespace pgpipe
