#include "async/connection/session_setup.hpp"

#include "async/connection/pipelined_connection.hpp"
#include "pq/libpq_failure.hpp"

#include <boost/asio/post.hpp>

namespace pgpipe::detail {

namespace {
// Shared by the statements' completions; they all run on the connection's
// loop. Weak: the connection holds the requests that hold this.
struct setup_state {
  std::weak_ptr<pipelined_connection> conn;
  std::size_t left = 0;
  std::error_code first_ec;
  std::string first_message;
};
}  // namespace

void run_session_setup(const std::shared_ptr<pipelined_connection>& conn, const std::vector<std::string>& statements,
                       std::chrono::milliseconds timeout) {
  auto st = std::make_shared<setup_state>();
  st->conn = conn;
  st->left = statements.size();
  for (std::size_t i = 0; i < statements.size(); ++i) {
    auto req = std::make_shared<query_request>();
    req->internal = true;
    req->spec.sql = statements[i];
    // A hung server must not keep the connection "connecting" forever.
    if (timeout.count() > 0) req->deadline = pool_clock::now() + timeout;
    auto cb = [st, i, sql = statements[i]](std::error_code ec, result r) {
      if (ec && !st->first_ec) {
        st->first_ec = ec;
        st->first_message = on_connect_failure(i, sql, r.diag().to_string());
      }
      if (--st->left == 0) {
        // Posted: this may run inside the connection's read loop, and a
        // failure closes the PGconn that loop is still reading.
        auto c = st->conn.lock();
        if (!c) return;
        boost::asio::post(c->get_executor(), [c, ec = st->first_ec, m = std::move(st->first_message)] {
          c->session_setup_done(ec, m);
        });
      }
    };
    req->set_handler(std::make_unique<completion_impl<result, decltype(cb)>>(std::move(cb)));
    conn->enqueue(std::move(req));
  }
}

}  // namespace pgpipe::detail
