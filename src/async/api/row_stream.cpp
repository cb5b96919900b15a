// async_row_stream: a thin handle over the connection's stream_state.
#include <pgpipe/async_row_stream.hpp>

#include "async/pool/client_impl.hpp"

#include <boost/asio/post.hpp>
#include <boost/asio/system_executor.hpp>

namespace pgpipe {

async_row_stream& async_row_stream::operator=(async_row_stream&& other) noexcept {
  if (this != &other) {
    cancel();
    st_ = std::move(other.st_);
    owner_ = std::move(other.owner_);  // the lease this one held goes back after its cancel
    failure_ = std::move(other.failure_);
  }
  return *this;
}

async_row_stream::~async_row_stream() { cancel(); }

boost::asio::any_io_executor async_row_stream::get_executor() const noexcept {
  if (!st_) return boost::asio::system_executor();
  return st_->conn->get_executor();
}

void async_row_stream::cancel() noexcept {
  if (!st_) return;
  try {
    auto c = st_->conn;
    boost::asio::post(c->get_executor(), [c, st = st_] { c->stream_cancel(st); });
  } catch (...) {
    // Out of memory posting: the rows are drained when the lease is returned.
  }
}

void async_row_stream::submit_next(const std::shared_ptr<detail::stream_state>& st,
                             std::unique_ptr<detail::completion<result>> done) {
  if (!st) {
    done->complete(boost::asio::system_executor(), true, make_error_code(errc::closed),
                   detail::client_error_result("empty async_row_stream"));
    return;
  }
  auto c = st->conn;
  boost::asio::post(c->get_executor(), [c, st, d = std::move(done)]() mutable { c->stream_next(st, std::move(d)); });
}

}  // namespace pgpipe
