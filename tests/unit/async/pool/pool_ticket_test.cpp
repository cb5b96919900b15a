// The pool ticket and its wire request (async/pool/pool_ticket.hpp): one
// allocation, two owners. Pins: the connection's pointer to the wire request
// keeps the ticket alive (a cancel hook finds the query while a connection
// holds it), the ticket is freed with the connection's last pointer (no
// cycle), and the query completes once whoever holds which half.
#include "async/pool/pool_ticket.hpp"

#include <boost/asio/io_context.hpp>

#include <gtest/gtest.h>

#include <memory>
#include <system_error>

namespace {

using pgpipe::result;
using pgpipe::detail::completion;
using pgpipe::detail::pool_ticket;
using pgpipe::detail::query_request;
using pgpipe::detail::wire_of;

struct counting_completion final : completion<result> {
  explicit counting_completion(int& calls) : calls_(calls) {}
  void complete(const boost::asio::any_io_executor&, bool, std::error_code, result) override { ++calls_; }
  int& calls_;
};

TEST(PoolTicket, TheConnectionsPointerKeepsTheTicketForItsCancelHook) {
  auto t = std::make_shared<pool_ticket>();
  pool_ticket* const at = t.get();
  const std::weak_ptr<pool_ticket> hook = t;  // what pool_cancel_hook holds

  // The pool hands the query to a connection and forgets its ticket.
  std::shared_ptr<query_request> on_connection = wire_of(std::move(t));
  ASSERT_EQ(on_connection.get(), &at->wire) << "the connection must hold the ticket's own wire request";
  auto found = hook.lock();
  ASSERT_NE(found, nullptr) << "a cancel while the connection holds the query must find its ticket";
  EXPECT_EQ(found.get(), at);
  found.reset();

  on_connection.reset();
  EXPECT_TRUE(hook.expired()) << "the ticket must go with the connection's last pointer";
}

TEST(PoolTicket, TheQueryCompletesOnceWhicheverHalfIsUsed) {
  boost::asio::io_context io;
  int calls = 0;
  auto t = std::make_shared<pool_ticket>();
  t->wire.set_handler(std::make_unique<counting_completion>(calls));
  const std::shared_ptr<query_request> on_connection = wire_of(t);

  // The connection's result and the pool's cancel race: one answers.
  EXPECT_TRUE(on_connection->try_complete(io.get_executor(), false, {}, result{}));
  EXPECT_TRUE(t->wire.completed.load()) << "the pool's half must see the connection's completion";
  EXPECT_FALSE(wire_of(t)->try_complete(io.get_executor(), false, std::make_error_code(std::errc::operation_canceled),
                                        result{}));
  EXPECT_EQ(calls, 1);
}

}  // namespace
