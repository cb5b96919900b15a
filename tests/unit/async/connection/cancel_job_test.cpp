// cancel_job (async/connection/cancel_job.hpp) against a fake of libpq 17's
// cancel calls over a socketpair: it polls only when the socket is ready,
// reports once, from a handler, and never after abandon(). The real calls
// run in the integration suites when .ci/compat loads libpq 18.
#include "async/connection/cancel_job.hpp"

#include <gtest/gtest.h>
#include <libpq-fe.h>

#include <boost/asio/io_context.hpp>

#include <sys/socket.h>
#include <unistd.h>

#include <string>
#include <vector>

namespace {

using pgpipe::detail::cancel_job;
using pgpipe::detail::libpq_features;

struct fake_cancel {
  int fd = -1;
  ConnStatusType status = CONNECTION_STARTED;  // anything but CONNECTION_BAD (libpq 17 says ALLOCATED)
  int start_result = 1;
  std::vector<PostgresPollingStatusType> answers;  ///< PQcancelPoll's, in order
  std::size_t polls = 0;
  int finishes = 0;
  const char* message = "";
};

fake_cancel* fake = nullptr;

libpq_features fake_calls() {
  libpq_features f;
  f.cancel_create = [](PGconn*) -> void* { return fake; };
  f.cancel_start = [](void*) { return fake->start_result; };
  f.cancel_poll = [](void*) {
    const std::size_t i = fake->polls++;
    return i < fake->answers.size() ? fake->answers[i] : PGRES_POLLING_FAILED;
  };
  f.cancel_status = [](const void*) { return fake->status; };
  f.cancel_socket = [](const void*) { return fake->fd; };
  f.cancel_error_message = [](const void*) { return fake->message; };
  f.cancel_finish = [](void*) { ++fake->finishes; };
  return f;
}

class cancel_job_test : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds_), 0);
    state_.fd = fds_[0];
    fake = &state_;
  }
  void TearDown() override {
    fake = nullptr;
    ::close(fds_[0]);
    ::close(fds_[1]);
  }
  std::shared_ptr<cancel_job> make_job() {
    return std::make_shared<cancel_job>(io_.get_executor(), calls_, [this](bool sent, std::string message) {
      reports_.push_back({sent, std::move(message)});
    });
  }
  void server_answers() { ASSERT_EQ(::write(fds_[1], "x", 1), 1); }
  /// Runs every handler that is ready now.
  void run_ready() {
    io_.restart();
    io_.poll();
  }

  struct report {
    bool sent;
    std::string message;
  };
  int fds_[2] = {-1, -1};
  fake_cancel state_;
  libpq_features calls_ = fake_calls();
  boost::asio::io_context io_;
  std::vector<report> reports_;
  PGconn* const pg_ = reinterpret_cast<PGconn*>(&state_);  // never dereferenced by the fake
};

TEST_F(cancel_job_test, it_polls_when_the_socket_is_ready_and_reports_sent_once_the_postmaster_is_done) {
  state_.answers = {PGRES_POLLING_READING, PGRES_POLLING_OK};
  auto job = make_job();
  ASSERT_TRUE(job->start(pg_));
  EXPECT_TRUE(reports_.empty()) << "the report comes from a handler, never from inside start()";
  run_ready();  // writable at once: the first poll asks to wait for reading
  EXPECT_EQ(state_.polls, 1u);
  run_ready();
  EXPECT_EQ(state_.polls, 1u) << "polled again before the socket was readable";
  EXPECT_TRUE(reports_.empty());
  server_answers();
  run_ready();
  EXPECT_EQ(state_.polls, 2u);
  ASSERT_EQ(reports_.size(), 1u);
  EXPECT_TRUE(reports_[0].sent);
  EXPECT_EQ(state_.finishes, 1) << "the cancel connection is freed once it is done";
}

TEST_F(cancel_job_test, a_failed_cancel_reports_libpqs_message) {
  state_.answers = {PGRES_POLLING_FAILED};
  state_.message = "connection to server was lost";
  auto job = make_job();
  ASSERT_TRUE(job->start(pg_));
  run_ready();
  ASSERT_EQ(reports_.size(), 1u);
  EXPECT_FALSE(reports_[0].sent);
  EXPECT_EQ(reports_[0].message, "connection to server was lost");
  EXPECT_EQ(state_.finishes, 1);
}

TEST_F(cancel_job_test, a_cancel_libpq_cannot_start_is_refused_at_once_and_never_reported) {
  state_.start_result = 0;
  auto job = make_job();
  EXPECT_FALSE(job->start(pg_));
  EXPECT_EQ(state_.finishes, 1);
  server_answers();
  run_ready();
  EXPECT_TRUE(reports_.empty());
  EXPECT_EQ(state_.polls, 0u);
}

TEST_F(cancel_job_test, a_cancel_connection_created_bad_is_refused) {
  state_.status = CONNECTION_BAD;
  auto job = make_job();
  EXPECT_FALSE(job->start(pg_));
  EXPECT_EQ(state_.finishes, 1);
}

TEST_F(cancel_job_test, an_abandoned_job_never_reports_and_frees_its_connection) {
  state_.answers = {PGRES_POLLING_READING, PGRES_POLLING_OK};
  auto job = make_job();
  ASSERT_TRUE(job->start(pg_));
  run_ready();
  job->abandon();
  EXPECT_EQ(state_.finishes, 1);
  server_answers();
  run_ready();
  EXPECT_TRUE(reports_.empty());
  EXPECT_EQ(state_.polls, 1u);
  job.reset();
  EXPECT_EQ(state_.finishes, 1) << "freed twice";
}

TEST_F(cancel_job_test, a_socket_libpq_does_not_give_is_a_failure_reported_from_a_handler) {
  state_.fd = -1;
  auto job = make_job();
  ASSERT_TRUE(job->start(pg_));
  EXPECT_TRUE(reports_.empty());
  run_ready();
  ASSERT_EQ(reports_.size(), 1u);
  EXPECT_FALSE(reports_[0].sent);
  EXPECT_NE(reports_[0].message.find("no socket"), std::string::npos) << reports_[0].message;
}

}  // namespace
