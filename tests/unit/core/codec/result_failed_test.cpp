// A failed query's result remembers its error: every read of what the query
// produced throws that error (SQLSTATE and the server's message), never
// "row 0 out of range" or zero rows. No server: the results are built
// client-side, and the completion glue is driven on an io_context.
#include <pgpipe/detail/async_glue.hpp>
#include <pgpipe/result.hpp>

#include <boost/asio/io_context.hpp>

#include <gtest/gtest.h>
#include <libpq-fe.h>

#include <functional>
#include <string>

namespace {

pgpipe::diagnostics syntax_error_diag() {
  pgpipe::diagnostics d;
  d.severity = "ERROR";
  d.sqlstate = "42601";
  d.message = "syntax error at or near \"selec\"";
  return d;
}

// Runs `read` and checks it throws the query's own error.
void expect_throws_query_error(const char* what, const std::function<void()>& read) {
  try {
    read();
    ADD_FAILURE() << what << ": did not throw";
  } catch (const pgpipe::error& e) {
    EXPECT_EQ(e.code(), pgpipe::make_sqlstate("42601")) << what << ": " << e.what();
    EXPECT_EQ(pgpipe::sqlstate_of(e.code()), "42601") << what;
    EXPECT_EQ(e.diag().sqlstate, "42601") << what;
    EXPECT_NE(std::string(e.what()).find("syntax error at or near \"selec\""), std::string::npos)
        << what << ": " << e.what();
    EXPECT_EQ(std::string(e.what()).find("out of range"), std::string::npos) << what << ": " << e.what();
  }
}

void expect_every_read_throws(const pgpipe::result& r) {
  expect_throws_query_error("value<int>()", [&] { (void)r.value<int>(); });
  expect_throws_query_error("operator[]", [&] { (void)r[0]; });
  expect_throws_query_error("at()", [&] { (void)r.at(0); });
  expect_throws_query_error("size()", [&] { (void)r.size(); });
  expect_throws_query_error("empty()", [&] { (void)r.empty(); });
  expect_throws_query_error("columns()", [&] { (void)r.columns(); });
  expect_throws_query_error("column_name()", [&] { (void)r.column_name(0); });
  expect_throws_query_error("begin()", [&] { (void)r.begin(); });
  expect_throws_query_error("range-for", [&] {
    for (pgpipe::row row : r) (void)row;
  });
  expect_throws_query_error("affected_rows()", [&] { (void)r.affected_rows(); });
  expect_throws_query_error("command_tag()", [&] { (void)r.command_tag(); });
  expect_throws_query_error("throw_if_failed()", [&] { r.throw_if_failed(); });
}

TEST(ResultFailed, EveryReadThrowsTheQueryErrorWithoutAPGresult) {
  const pgpipe::result r(pgpipe::make_sqlstate("42601"), syntax_error_diag());
  EXPECT_TRUE(r.failed());
  EXPECT_EQ(r.code(), pgpipe::make_sqlstate("42601"));
  EXPECT_FALSE(r.has_value());
  EXPECT_FALSE(static_cast<bool>(r));
  EXPECT_EQ(r.diag().message, "syntax error at or near \"selec\"");
  expect_every_read_throws(r);
}

TEST(ResultFailed, EveryReadThrowsTheQueryErrorWithTheServersErrorResult) {
  // The server's error arrives as a PGresult with no rows: reading it must
  // not look like an empty SELECT.
  const pgpipe::result r(pgpipe::make_sqlstate("42601"), syntax_error_diag(),
                         PQmakeEmptyPGresult(nullptr, PGRES_FATAL_ERROR));
  EXPECT_NE(r.native_handle(), nullptr);
  EXPECT_FALSE(r.has_value());
  expect_every_read_throws(r);
}

TEST(ResultFailed, AResultWithoutAnErrorReadsNormally) {
  const pgpipe::result none;
  EXPECT_FALSE(none.failed());
  EXPECT_FALSE(none.code());
  EXPECT_TRUE(none.empty());
  EXPECT_NO_THROW(none.throw_if_failed());

  const pgpipe::result ok(PQmakeEmptyPGresult(nullptr, PGRES_COMMAND_OK));
  EXPECT_TRUE(ok.has_value());
  EXPECT_FALSE(ok.failed());
  EXPECT_EQ(ok.size(), 0u);
  EXPECT_EQ(ok.affected_rows(), 0u);
}

TEST(ResultFailed, TheErrorSurvivesAMove) {
  pgpipe::result a(pgpipe::make_sqlstate("42601"), syntax_error_diag());
  pgpipe::result b(std::move(a));
  EXPECT_TRUE(b.failed());
  expect_every_read_throws(b);
}

// The completion glue gives every failed result handed to a caller the
// operation's error, whichever layer built the result (a server error, or a
// client-side one such as a timeout that only had a message).
TEST(ResultFailed, TheCompletionGivesTheResultItsError) {
  boost::asio::io_context io;
  pgpipe::result got;
  std::error_code got_ec;
  auto handler = [&](std::error_code ec, pgpipe::result r) {
    got_ec = ec;
    got = std::move(r);
  };
  auto done = std::make_unique<pgpipe::detail::completion_impl<pgpipe::result, decltype(handler)>>(handler);
  done->complete(io.get_executor(), true, pgpipe::make_sqlstate("42601"),
                 pgpipe::result(PQmakeEmptyPGresult(nullptr, PGRES_FATAL_ERROR), syntax_error_diag()));
  io.run();
  EXPECT_EQ(got_ec, pgpipe::make_sqlstate("42601"));
  EXPECT_EQ(got.code(), got_ec);
  expect_every_read_throws(got);

  pgpipe::diagnostics timeout;
  timeout.client_message = "query timed out before it was sent";
  auto done2 = std::make_unique<pgpipe::detail::completion_impl<pgpipe::result, decltype(handler)>>(handler);
  done2->complete(io.get_executor(), true, pgpipe::errc::query_timeout, pgpipe::result(std::move(timeout)));
  io.restart();
  io.run();
  EXPECT_EQ(got.code(), pgpipe::errc::query_timeout);
  try {
    (void)got.empty();
    ADD_FAILURE() << "empty() on a timed-out query did not throw";
  } catch (const pgpipe::error& e) {
    EXPECT_EQ(e.code(), pgpipe::errc::query_timeout);
    EXPECT_NE(std::string(e.what()).find("timed out before it was sent"), std::string::npos) << e.what();
  }
}

}  // namespace
