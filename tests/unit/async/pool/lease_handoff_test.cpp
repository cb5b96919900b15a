// The lease handoff (async/pool/lease_handoff.hpp) driving a fake connection
// on a real io_context: what a lease started reaches its connection in the
// order it was started, whichever thread started it, and each entry goes to
// its call (one request, a chain, the lease's end), told to the query
// observer unless it asked not to be.
#include "async/pool/lease_handoff.hpp"

#include <pgpipe/query_observer.hpp>

#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>

#include <gtest/gtest.h>

#include <cstdint>
#include <memory>
#include <string>
#include <thread>
#include <vector>

namespace {

namespace asio = boost::asio;
using pgpipe::query_event;
using pgpipe::query_observer;
using pgpipe::detail::hand_off;
using pgpipe::detail::lease_handoff;
using pgpipe::detail::query_request;

struct recording_observer final : query_observer {
  void* on_start(const query_event& e) override {
    started.emplace_back(e.sql);
    slots.push_back(e.slot);
    return nullptr;
  }
  std::vector<std::string> started;
  std::vector<std::uint64_t> slots;
};

// What lease_handoff asks of a connection, recorded.
struct fake_connection {
  explicit fake_connection(asio::io_context& io) : ex(io.get_executor()) {}
  const asio::io_context::executor_type& get_executor() const noexcept { return ex; }
  query_observer* observer() const noexcept { return obs; }
  std::uint64_t slot() const noexcept { return 7; }
  int backend_pid() const noexcept { return 4242; }
  void enqueue(const std::shared_ptr<query_request>& r) { calls.push_back(r->spec.sql); }
  void enqueue_chain(const std::vector<std::shared_ptr<query_request>>& rs) {
    std::string c = "chain:";
    for (const auto& r : rs) c += " " + r->spec.sql;
    calls.push_back(c);
  }
  void lease_returned() { calls.emplace_back("returned"); }

  asio::io_context::executor_type ex;
  query_observer* obs = nullptr;
  std::vector<std::string> calls;
};

std::shared_ptr<query_request> req(std::string sql) {
  auto r = std::make_shared<query_request>();
  r->spec.sql = std::move(sql);
  return r;
}

lease_handoff::entry one(std::string sql) { return lease_handoff::entry{{req(std::move(sql))}}; }

// A loop with one thread, as the client's loops are: a post made inside a
// running handler waits until the handler returns, so a post made on
// another thread meanwhile runs first.
TEST(LeaseHandoff, AStartMadeOnTheLoopIsNotOvertakenByOneMadeElsewhere) {
  asio::io_context io(1);
  auto conn = std::make_shared<fake_connection>(io);
  auto handoff = std::make_shared<lease_handoff>();
  std::vector<std::string> raw;  // the same two starts as plain posts
  asio::post(io, [&] {
    hand_off(conn, handoff, one("begin"));
    asio::post(io, [&] { raw.emplace_back("begin"); });
    std::thread other([&] {
      hand_off(conn, handoff, one("insert"));
      asio::post(io, [&] { raw.emplace_back("insert"); });
    });
    other.join();
  });
  io.run();
  ASSERT_EQ(raw, (std::vector<std::string>{"insert", "begin"}))
      << "the scenario must make a plain post overtake the loop's own, or it proves nothing";
  EXPECT_EQ(conn->calls, (std::vector<std::string>{"begin", "insert"}));
}

TEST(LeaseHandoff, EachEntryGoesToItsCallInOrder) {
  asio::io_context io(1);
  auto conn = std::make_shared<fake_connection>(io);
  auto handoff = std::make_shared<lease_handoff>();
  hand_off(conn, handoff, one("select 1"));
  hand_off(conn, handoff, lease_handoff::entry{{req("begin"), req("update t"), req("commit")}});
  lease_handoff::entry end;
  end.returns = true;
  hand_off(conn, handoff, std::move(end));
  io.run();
  EXPECT_EQ(conn->calls, (std::vector<std::string>{"select 1", "chain: begin update t commit", "returned"}));
}

TEST(LeaseHandoff, TheObserverHearsOfWhatReachesTheConnectionUnlessItsEntrySaysNot) {
  asio::io_context io(1);
  recording_observer obs;
  auto conn = std::make_shared<fake_connection>(io);
  conn->obs = &obs;
  auto handoff = std::make_shared<lease_handoff>();
  hand_off(conn, handoff, one("select 1"));
  auto copy = one("copy t from stdin");
  copy.observed = false;  // a COPY is not a query the observer times
  hand_off(conn, handoff, std::move(copy));
  auto cancelled = one("select 2");
  cancelled.reqs.front()->completed = true;  // cancelled on its way: the connection drops it
  hand_off(conn, handoff, std::move(cancelled));
  io.run();
  EXPECT_EQ(obs.started, (std::vector<std::string>{"select 1"}));
  EXPECT_EQ(obs.slots, (std::vector<std::uint64_t>{7}));
  EXPECT_EQ(conn->calls, (std::vector<std::string>{"select 1", "copy t from stdin", "select 2"}));
}

}  // namespace
