// copy_core without libpq or a server: scripted transitions through every
// phase (queued, starting, in_data, out_data, ending, over), then a seeded
// randomized run of whole COPYs against a model of the caller's contract,
// with a fake server and a fake libpq that answer at random (buffers full,
// flushes pending, failures, deadlines, breaks, stops).
//
// Reproduce or extend the randomized run from the environment:
//   PGPIPE_COPY_MODEL_SEED=n    run only seed n (the failure message names it)
//   PGPIPE_COPY_MODEL_SEEDS=k   run seeds 1..k (default 300)
#include "async/sansio/copy_core.hpp"

#include <pgpipe/error.hpp>

#include <gtest/gtest.h>

#include <cstdlib>
#include <deque>
#include <optional>
#include <random>
#include <string>
#include <vector>

namespace {

using pgpipe::errc;
using pgpipe::make_error_code;
using pgpipe::make_sqlstate;
using pgpipe::result;
using pgpipe::detail::copy_action;
using pgpipe::detail::copy_chunk_bytes;
using pgpipe::detail::copy_core;
using pgpipe::detail::copy_flushed;
using pgpipe::detail::copy_keep;
using pgpipe::detail::copy_phase;
using pgpipe::detail::copy_put;
using pgpipe::detail::copy_read;
using pgpipe::detail::copy_reply;
using pgpipe::detail::copy_result;

using kind = copy_action::kind;

const char* name(kind k) {
  switch (k) {
    case kind::put_data: return "put_data";
    case kind::put_end: return "put_end";
    case kind::flush: return "flush";
    case kind::read: return "read";
    case kind::stop_request: return "stop_request";
    case kind::break_connection: return "break_connection";
    case kind::wire_done: return "wire_done";
    case kind::complete_write: return "complete_write";
    case kind::complete_finish: return "complete_finish";
    case kind::complete_abort: return "complete_abort";
    case kind::complete_next: return "complete_next";
  }
  return "?";
}

std::vector<copy_action> take(copy_core& c) {
  std::vector<copy_action> out;
  c.take_actions(out);
  return out;
}

std::string kinds(const std::vector<copy_action>& as) {
  std::string s;
  for (const auto& a : as) s += std::string(s.empty() ? "" : " ") + name(a.what);
  return s;
}

result with_message(std::string m) {
  pgpipe::diagnostics d;
  d.client_message = std::move(m);
  return result(std::move(d));
}

// copy_in with its COPY open (in_data) and nothing queued.
copy_core open_copy_in() {
  copy_core c(false);
  c.on_started();
  EXPECT_EQ(c.next_read(), copy_read::result);
  EXPECT_EQ(c.on_result(copy_result::copy_in).keep, copy_keep::drop);
  EXPECT_EQ(c.phase(), copy_phase::in_data);
  EXPECT_EQ(kinds(take(c)), "");
  return c;
}

// copy_out with its COPY open (out_data) and nothing queued.
copy_core open_copy_out() {
  copy_core c(true);
  c.on_started();
  EXPECT_EQ(c.on_result(copy_result::copy_out).keep, copy_keep::drop);
  EXPECT_EQ(c.phase(), copy_phase::out_data);
  EXPECT_EQ(kinds(take(c)), "");
  return c;
}

// Sends copy_in's end (put_end answered `sent`, flush done) and reads the
// server's verdict `r` to the end of the results.
void end_and_read(copy_core& c, copy_result r, bool failed) {
  auto a = take(c);
  ASSERT_EQ(kinds(a), "put_end");
  c.on_put_end(copy_put::sent);
  EXPECT_EQ(c.phase(), copy_phase::ending);
  ASSERT_EQ(kinds(take(c)), "flush");
  c.on_flush(copy_flushed::done);
  ASSERT_EQ(kinds(take(c)), "read");  // the verdict follows the end
  ASSERT_EQ(c.next_read(), copy_read::result);
  (void)c.on_result(r);
  ASSERT_EQ(c.next_read(), copy_read::result);
  c.on_results_done();
  a = take(c);
  ASSERT_EQ(kinds(a), "wire_done");
  EXPECT_EQ(a[0].failed, failed);
  EXPECT_EQ(c.phase(), copy_phase::over);
  EXPECT_FALSE(c.on_wire());
}

// ---- queued -------------------------------------------------------------------------

TEST(copy_core, a_chunk_written_while_queued_waits_for_the_server_to_open_the_copy) {
  copy_core c(false);
  EXPECT_FALSE(c.write("1\tone\n").answered);
  EXPECT_EQ(kinds(take(c)), "");  // nothing on the wire before the COPY started
  EXPECT_EQ(c.next_read(), copy_read::nothing);
  c.on_started();
  EXPECT_EQ(c.phase(), copy_phase::starting);
  EXPECT_EQ(kinds(take(c)), "");
  EXPECT_EQ(c.next_read(), copy_read::result);
  (void)c.on_result(copy_result::copy_in);
  auto a = take(c);
  ASSERT_EQ(kinds(a), "put_data");
  EXPECT_EQ(a[0].data, "1\tone\n");
  EXPECT_EQ(c.next_read(), copy_read::nothing);  // the server speaks only after the end
  c.on_put_data(copy_put::sent);
  ASSERT_EQ(kinds(take(c)), "flush");
  c.on_flush(copy_flushed::done);
  a = take(c);
  ASSERT_EQ(kinds(a), "complete_write");
  EXPECT_FALSE(a[0].ec);
}

TEST(copy_core, aborting_a_queued_copy_removes_it_and_succeeds_with_nothing_sent) {
  copy_core c(false);
  EXPECT_FALSE(c.abort("changed my mind").answered);
  EXPECT_EQ(kinds(take(c)), "stop_request");
  c.on_outcome(make_error_code(errc::cancelled), with_message("cancelled before it was sent"), true);
  auto a = take(c);
  ASSERT_EQ(kinds(a), "complete_abort");
  EXPECT_FALSE(a[0].ec);
  EXPECT_EQ(c.phase(), copy_phase::queued);
  EXPECT_EQ(c.write("x").ec, make_error_code(errc::invalid_argument));  // the caller ended it
}

TEST(copy_core, cancelling_a_queued_copy_out_removes_it_and_the_reader_gets_cancelled) {
  copy_core c(true);
  EXPECT_FALSE(c.next().answered);
  c.cancel();
  auto a = take(c);
  ASSERT_EQ(kinds(a), "complete_next stop_request");
  EXPECT_EQ(a[0].ec, make_error_code(errc::cancelled));
  c.on_outcome(make_error_code(errc::cancelled), result(), true);
  EXPECT_EQ(kinds(take(c)), "");  // cancel answered the reader already
  auto r = c.next();
  EXPECT_TRUE(r.answered);
  EXPECT_EQ(r.ec, make_error_code(errc::cancelled));
  c.cancel();  // idempotent
  EXPECT_EQ(kinds(take(c)), "");
}

// ---- starting -----------------------------------------------------------------------

TEST(copy_core, a_deadline_before_the_copy_opened_ends_it_with_copyfail_once_it_opens) {
  copy_core c(false);
  c.on_started();
  c.on_outcome(make_error_code(errc::query_timeout), with_message("query timeout"), true);
  EXPECT_EQ(kinds(take(c)), "");  // nothing can be sent before the server opens the COPY
  (void)c.on_result(copy_result::copy_in);
  auto a = take(c);
  ASSERT_EQ(kinds(a), "put_end");
  EXPECT_EQ(a[0].text, "COPY ended: " + make_error_code(errc::query_timeout).message());
}

TEST(copy_core, a_statement_that_opens_no_copy_fails_with_invalid_argument) {
  copy_core c(false);
  c.on_started();
  EXPECT_EQ(c.on_result(copy_result::other).keep, copy_keep::as_ok);
  c.on_results_done();
  auto a = take(c);
  ASSERT_EQ(kinds(a), "wire_done");
  EXPECT_TRUE(a[0].failed);
  c.on_outcome({}, result(), true);
  auto r = c.finish();
  EXPECT_EQ(r.ec, make_error_code(errc::invalid_argument));
  EXPECT_EQ(r.res.diag().client_message, "copy_in needs COPY ... FROM STDIN; nothing was copied");
}

TEST(copy_core, copy_out_given_a_copy_from_ends_it_at_once_and_fails_with_invalid_argument) {
  copy_core c(true);
  c.on_started();
  (void)c.on_result(copy_result::copy_in);
  auto a = take(c);
  ASSERT_EQ(kinds(a), "put_end");
  EXPECT_EQ(a[0].text, "copy_out needs COPY ... TO STDOUT");
  EXPECT_EQ(c.phase(), copy_phase::ending);
  c.on_put_end(copy_put::full);  // queued or not, the results that follow say it is over
  ASSERT_EQ(kinds(take(c)), "flush");
  c.on_flush(copy_flushed::done);
  EXPECT_EQ(kinds(take(c)), "");
  EXPECT_EQ(c.next_read(), copy_read::result);
  EXPECT_EQ(c.on_result(copy_result::error).keep, copy_keep::as_error);
  c.on_results_done();
  a = take(c);
  ASSERT_EQ(kinds(a), "wire_done");
  EXPECT_TRUE(a[0].failed);
  EXPECT_FALSE(c.next().answered);
  c.on_outcome(make_sqlstate("57014"), result(), true);
  a = take(c);
  ASSERT_EQ(kinds(a), "complete_next");
  EXPECT_EQ(a[0].ec, make_error_code(errc::invalid_argument));
  auto r = c.next();  // reported once, then the end
  EXPECT_TRUE(r.answered);
  EXPECT_FALSE(r.ec);
  EXPECT_TRUE(r.data.empty());
}

TEST(copy_core, copy_in_given_a_copy_to_drops_its_rows_and_fails_with_invalid_argument) {
  copy_core c(false);
  EXPECT_FALSE(c.write("x").answered);
  c.on_started();
  (void)c.on_result(copy_result::copy_out);
  EXPECT_EQ(c.phase(), copy_phase::out_data);
  EXPECT_EQ(kinds(take(c)), "");  // nothing is written to a COPY TO
  ASSERT_EQ(c.next_read(), copy_read::data);
  c.on_data(std::string(100000, 'r'));
  EXPECT_EQ(c.next_read(), copy_read::data);  // dropped: never a reason to pause
  c.on_data_end();
  EXPECT_EQ(c.on_result(copy_result::other).keep, copy_keep::as_ok);
  c.on_results_done();
  auto a = take(c);
  ASSERT_EQ(kinds(a), "wire_done");
  EXPECT_TRUE(a[0].failed);
  c.on_outcome({}, result(), true);
  a = take(c);
  ASSERT_EQ(kinds(a), "complete_write");
  EXPECT_EQ(a[0].ec, make_error_code(errc::invalid_argument));
}

TEST(copy_core, copy_both_breaks_the_connection_without_a_libpq_message) {
  copy_core c(false);
  c.on_started();
  (void)c.on_result(copy_result::copy_both);
  auto a = take(c);
  ASSERT_EQ(kinds(a), "break_connection");
  EXPECT_EQ(a[0].text, "COPY BOTH (replication) is not supported");
  EXPECT_FALSE(a[0].libpq_detail);
}

// ---- in_data ------------------------------------------------------------------------

TEST(copy_core, a_write_completes_only_once_its_chunk_is_on_the_socket) {
  copy_core c = open_copy_in();
  EXPECT_FALSE(c.write("chunk").answered);
  ASSERT_EQ(kinds(take(c)), "put_data");
  c.on_put_data(copy_put::full);  // libpq's buffer is full: the chunk stays with us
  EXPECT_TRUE(c.flush_pending());
  EXPECT_EQ(kinds(take(c)), "");
  EXPECT_EQ(c.write("next").ec, make_error_code(errc::invalid_argument));  // one at a time
  c.on_flush(copy_flushed::pending);
  EXPECT_EQ(kinds(take(c)), "");
  c.on_flush(copy_flushed::done);
  auto a = take(c);
  ASSERT_EQ(kinds(a), "put_data");  // the same chunk, again
  EXPECT_EQ(a[0].data, "chunk");
  c.on_put_data(copy_put::sent);
  ASSERT_EQ(kinds(take(c)), "flush");
  c.on_flush(copy_flushed::pending);  // handed to libpq, not yet on the socket
  EXPECT_EQ(kinds(take(c)), "");
  c.on_flush(copy_flushed::done);
  EXPECT_EQ(kinds(take(c)), "complete_write");
  EXPECT_FALSE(c.flush_pending());
}

TEST(copy_core, finish_sends_copydone_after_the_chunk_and_gives_the_verdict_again_when_asked) {
  copy_core c = open_copy_in();
  EXPECT_FALSE(c.write("a").answered);
  ASSERT_EQ(kinds(take(c)), "put_data");
  auto busy = c.finish();
  EXPECT_EQ(busy.ec, make_error_code(errc::invalid_argument));
  EXPECT_EQ(busy.res.diag().client_message, "async_finish while another COPY operation is pending");
  c.on_put_data(copy_put::sent);
  ASSERT_EQ(kinds(take(c)), "flush");
  c.on_flush(copy_flushed::done);
  ASSERT_EQ(kinds(take(c)), "complete_write");
  EXPECT_FALSE(c.finish().answered);
  auto a = take(c);
  ASSERT_EQ(kinds(a), "put_end");
  EXPECT_TRUE(a[0].text.empty());  // CopyDone
  c.on_put_end(copy_put::full);
  EXPECT_EQ(kinds(take(c)), "");
  c.on_flush(copy_flushed::done);
  a = take(c);
  ASSERT_EQ(kinds(a), "put_end");
  EXPECT_TRUE(a[0].text.empty());
  c.on_put_end(copy_put::sent);
  ASSERT_EQ(kinds(take(c)), "flush");
  c.on_flush(copy_flushed::pending);
  EXPECT_EQ(kinds(take(c)), "read");  // the verdict may come while the end is still going out
  EXPECT_EQ(c.on_result(copy_result::other).keep, copy_keep::as_ok);
  c.on_results_done();
  a = take(c);
  ASSERT_EQ(kinds(a), "wire_done");
  EXPECT_FALSE(a[0].failed);
  c.on_outcome({}, result(), true);
  a = take(c);
  ASSERT_EQ(kinds(a), "complete_finish");
  EXPECT_FALSE(a[0].ec);
  auto again = c.finish();
  EXPECT_TRUE(again.answered);
  EXPECT_FALSE(again.ec);
  EXPECT_EQ(c.finish().res.diag().client_message, "the COPY's result was already delivered");
  EXPECT_EQ(c.write("late").ec, make_error_code(errc::invalid_argument));
}

TEST(copy_core, abort_drops_the_chunk_in_hand_and_sends_copyfail_with_its_reason) {
  copy_core c = open_copy_in();
  EXPECT_FALSE(c.write("a").answered);
  ASSERT_EQ(kinds(take(c)), "put_data");
  c.on_put_data(copy_put::full);
  EXPECT_FALSE(c.abort("bad batch").answered);
  auto a = take(c);
  ASSERT_EQ(kinds(a), "complete_write");
  EXPECT_EQ(a[0].ec, make_error_code(errc::cancelled));
  EXPECT_EQ(c.abort("again").ec, make_error_code(errc::invalid_argument));
  EXPECT_EQ(c.finish().ec, make_error_code(errc::invalid_argument));
  c.on_flush(copy_flushed::done);
  a = take(c);
  ASSERT_EQ(kinds(a), "put_end");
  EXPECT_EQ(a[0].text, "bad batch");

  copy_core d = open_copy_in();
  EXPECT_FALSE(d.abort("").answered);
  a = take(d);
  ASSERT_EQ(kinds(a), "put_end");
  EXPECT_EQ(a[0].text, "aborted by the client");
}

TEST(copy_core, an_abort_succeeds_once_the_server_confirms_the_copy_failed) {
  copy_core c = open_copy_in();
  EXPECT_FALSE(c.abort("stop").answered);
  end_and_read(c, copy_result::error, true);
  c.on_outcome(make_sqlstate("57014"), result(), true);
  auto a = take(c);
  ASSERT_EQ(kinds(a), "complete_abort");
  EXPECT_FALSE(a[0].ec);
  EXPECT_FALSE(c.abort("later").ec);  // the COPY is over: nothing stays
}

TEST(copy_core, a_deadline_mid_copy_in_drops_the_chunk_sends_copyfail_and_answers_once) {
  copy_core c = open_copy_in();
  EXPECT_FALSE(c.write("a").answered);
  ASSERT_EQ(kinds(take(c)), "put_data");
  c.on_put_data(copy_put::full);
  c.on_outcome(make_error_code(errc::query_timeout), with_message("timed out"), true);
  auto a = take(c);
  ASSERT_EQ(kinds(a), "complete_write");
  EXPECT_EQ(a[0].ec, make_error_code(errc::query_timeout));
  auto f = c.finish();
  EXPECT_EQ(f.ec, make_error_code(errc::query_timeout));
  EXPECT_EQ(f.res.diag().client_message, "timed out");
  EXPECT_EQ(c.write("b").ec, make_error_code(errc::query_timeout));
  c.on_flush(copy_flushed::done);  // the socket took libpq's buffer: now the end
  a = take(c);
  ASSERT_EQ(kinds(a), "put_end");
  EXPECT_EQ(a[0].text, "COPY ended: " + make_error_code(errc::query_timeout).message());
  c.on_put_end(copy_put::sent);
  ASSERT_EQ(kinds(take(c)), "flush");
  c.on_flush(copy_flushed::done);
  ASSERT_EQ(kinds(take(c)), "read");
  (void)c.on_result(copy_result::error);
  c.on_results_done();
  EXPECT_EQ(kinds(take(c)), "wire_done");  // read to its end: the lease serves again
  c.on_outcome({}, result(), true);        // a late verdict changes nothing
  EXPECT_EQ(c.finish().ec, make_error_code(errc::query_timeout));
}

TEST(copy_core, a_break_answers_the_pending_operations_as_lost_and_touches_no_wire) {
  copy_core c = open_copy_in();
  EXPECT_FALSE(c.write("a").answered);
  ASSERT_EQ(kinds(take(c)), "put_data");
  c.on_put_data(copy_put::full);
  c.on_outcome(make_error_code(errc::connection_lost), result(), false);
  auto a = take(c);
  ASSERT_EQ(kinds(a), "complete_write");
  EXPECT_EQ(a[0].ec, make_error_code(errc::connection_lost));
  EXPECT_EQ(c.write("b").ec, make_error_code(errc::connection_lost));
  auto f = c.finish();
  EXPECT_EQ(f.ec, make_error_code(errc::connection_lost));
  EXPECT_EQ(f.res.diag().client_message, "the COPY ended: " + make_error_code(errc::connection_lost).message());
  EXPECT_EQ(c.abort("x").ec, make_error_code(errc::connection_lost));  // the caller must know the lease broke
  EXPECT_EQ(kinds(take(c)), "");
}

TEST(copy_core, a_pending_finish_and_abort_get_the_outcome) {
  copy_core c = open_copy_in();
  EXPECT_FALSE(c.finish().answered);
  (void)take(c);
  c.on_outcome(make_sqlstate("22P02"), with_message("invalid input syntax"), false);
  auto a = take(c);
  ASSERT_EQ(kinds(a), "complete_finish");
  EXPECT_EQ(a[0].ec, make_sqlstate("22P02"));
  EXPECT_EQ(a[0].res.diag().client_message, "invalid input syntax");

  copy_core d = open_copy_in();
  EXPECT_FALSE(d.abort("x").answered);
  (void)take(d);
  d.on_outcome(make_error_code(errc::connection_lost), result(), false);
  a = take(d);
  ASSERT_EQ(kinds(a), "complete_abort");
  EXPECT_EQ(a[0].ec, make_error_code(errc::connection_lost));
}

TEST(copy_core, libpq_failures_break_the_connection_naming_the_step) {
  struct expect_break {
    void operator()(copy_core& c, const std::string& why) const {
      auto a = take(c);
      ASSERT_EQ(kinds(a), "break_connection");
      EXPECT_EQ(a[0].text, why);
      EXPECT_TRUE(a[0].libpq_detail);
    }
  } expect;
  copy_core c = open_copy_in();
  (void)c.write("a");
  (void)take(c);
  c.on_put_data(copy_put::failed);
  expect(c, "sending COPY data failed");
  copy_core d = open_copy_in();
  (void)d.write("a");
  (void)take(d);
  d.on_put_data(copy_put::sent);
  (void)take(d);
  d.on_flush(copy_flushed::failed);
  expect(d, "flush failed during COPY");
  copy_core e = open_copy_in();
  (void)e.finish();
  (void)take(e);
  e.on_put_end(copy_put::failed);
  expect(e, "ending COPY failed");
  copy_core f = open_copy_out();
  f.on_data_failed();
  expect(f, "reading COPY data failed");
}

// ---- out_data -----------------------------------------------------------------------

TEST(copy_core, copy_out_hands_over_what_was_read_and_the_end_after_the_rows) {
  copy_core c = open_copy_out();
  EXPECT_FALSE(c.next().answered);
  ASSERT_EQ(c.next_read(), copy_read::data);
  c.on_data("1\n");
  c.on_data("2\n");
  ASSERT_EQ(c.next_read(), copy_read::data);
  c.on_data_wait();  // nothing more until readable: what we have goes now
  auto a = take(c);
  ASSERT_EQ(kinds(a), "complete_next");
  EXPECT_EQ(a[0].text, "1\n2\n");
  c.on_data("3\n");
  c.on_data_end();
  EXPECT_EQ(c.phase(), copy_phase::ending);
  EXPECT_EQ(kinds(take(c)), "");  // nobody asked
  c.on_outcome({}, result(), true);  // the verdict may come before the reader catches up
  auto r = c.next();
  EXPECT_TRUE(r.answered);
  EXPECT_EQ(r.data, "3\n");  // the rows first
  r = c.next();
  EXPECT_TRUE(r.answered);
  EXPECT_FALSE(r.ec);
  EXPECT_TRUE(r.data.empty());  // then the end
}

TEST(copy_core, copy_out_stops_reading_while_a_full_chunk_waits_for_its_reader) {
  copy_core c = open_copy_out();
  const std::string row(1000, 'x');
  std::size_t fed = 0;
  while (c.next_read() == copy_read::data) {
    c.on_data(row);
    fed += row.size();
    ASSERT_LT(fed, 2 * copy_chunk_bytes) << "never paused";
  }
  EXPECT_TRUE(c.paused());
  EXPECT_GE(fed, copy_chunk_bytes);
  EXPECT_LT(fed, copy_chunk_bytes + row.size());
  EXPECT_EQ(kinds(take(c)), "");
  auto r = c.next();
  EXPECT_TRUE(r.answered);
  EXPECT_EQ(r.data.size(), fed);
  EXPECT_FALSE(c.paused());
  EXPECT_EQ(kinds(take(c)), "read");  // the reader caught up: read again

  // With the reader waiting, the pause hands the chunk over at once.
  EXPECT_FALSE(c.next().answered);
  while (c.next_read() == copy_read::data) c.on_data(row);
  auto a = take(c);
  ASSERT_EQ(kinds(a), "complete_next");
  EXPECT_GE(a[0].text.size(), copy_chunk_bytes);
  EXPECT_TRUE(c.paused());
  EXPECT_FALSE(c.next().answered);
  EXPECT_EQ(kinds(take(c)), "read");
}

TEST(copy_core, cancel_answers_the_reader_stops_the_request_and_drops_the_rest) {
  copy_core c = open_copy_out();
  while (c.next_read() == copy_read::data) c.on_data(std::string(4096, 'y'));
  ASSERT_TRUE(c.paused());
  c.cancel();
  EXPECT_EQ(kinds(take(c)), "stop_request read");  // read on: the server's end must be read
  EXPECT_FALSE(c.paused());
  EXPECT_EQ(c.next_read(), copy_read::data);  // stopped: never pauses again
  c.on_data(std::string(200000, 'z'));
  EXPECT_EQ(c.next_read(), copy_read::data);
  EXPECT_EQ(c.next().ec, make_error_code(errc::cancelled));
  c.on_data_end();
  EXPECT_EQ(c.on_result(copy_result::error).keep, copy_keep::as_error);
  c.on_results_done();
  auto a = take(c);
  ASSERT_EQ(kinds(a), "wire_done");
  EXPECT_TRUE(a[0].failed);
  c.on_outcome(make_error_code(errc::cancelled), result(), true);
  EXPECT_EQ(kinds(take(c)), "");

  copy_core d = open_copy_out();
  EXPECT_FALSE(d.next().answered);
  d.cancel();
  a = take(d);
  ASSERT_EQ(kinds(a), "complete_next stop_request");
  EXPECT_EQ(a[0].ec, make_error_code(errc::cancelled));
}

TEST(copy_core, a_deadline_mid_copy_out_stops_it_on_the_server_and_reads_on_to_its_end) {
  copy_core c = open_copy_out();
  while (c.next_read() == copy_read::data) c.on_data(std::string(4096, 'y'));
  ASSERT_TRUE(c.paused());
  c.on_outcome(make_error_code(errc::query_timeout), result(), true);
  EXPECT_EQ(kinds(take(c)), "stop_request read");  // PQcancel, and the socket is read again
  EXPECT_FALSE(c.paused());
  c.on_data(std::string(100000, 'z'));  // what was in flight is dropped
  EXPECT_EQ(c.next_read(), copy_read::data);
  c.on_data_end();
  (void)c.on_result(copy_result::error);
  c.on_results_done();
  EXPECT_EQ(kinds(take(c)), "wire_done");
}

TEST(copy_core, copy_out_reports_an_error_once_then_the_end) {
  copy_core c(true);
  c.on_started();
  EXPECT_EQ(c.on_result(copy_result::error).keep, copy_keep::as_error);
  EXPECT_EQ(c.on_result(copy_result::error).keep, copy_keep::drop);  // the first error is the verdict
  c.on_results_done();
  auto a = take(c);
  ASSERT_EQ(kinds(a), "wire_done");
  EXPECT_TRUE(a[0].failed);
  c.on_outcome(make_sqlstate("42P01"), result(), true);
  EXPECT_EQ(c.next().ec, make_sqlstate("42P01"));
  auto r = c.next();
  EXPECT_TRUE(r.answered);
  EXPECT_FALSE(r.ec);
}

// ---- ending and over ----------------------------------------------------------------

TEST(copy_core, only_the_first_command_result_is_kept_and_a_session_fatal_error_ends_the_session) {
  copy_core c = open_copy_out();
  c.on_data_end();
  EXPECT_EQ(c.on_result(copy_result::other).keep, copy_keep::as_ok);
  EXPECT_EQ(c.on_result(copy_result::other).keep, copy_keep::drop);
  auto v = c.on_result(copy_result::session_fatal);
  EXPECT_EQ(v.keep, copy_keep::as_error);
  EXPECT_TRUE(v.ends_session);
  v = c.on_result(copy_result::session_fatal);
  EXPECT_EQ(v.keep, copy_keep::drop);
  EXPECT_TRUE(v.ends_session);
}

TEST(copy_core, once_over_nothing_goes_to_the_wire_and_operations_are_answered_at_once) {
  copy_core c = open_copy_in();
  EXPECT_FALSE(c.finish().answered);
  end_and_read(c, copy_result::other, false);
  EXPECT_EQ(c.next_read(), copy_read::nothing);
  c.on_outcome({}, result(), true);
  EXPECT_EQ(kinds(take(c)), "complete_finish");
  EXPECT_TRUE(c.finish().answered);
  EXPECT_TRUE(c.abort("x").answered);
  EXPECT_TRUE(c.write("x").answered);
  EXPECT_EQ(kinds(take(c)), "");
}

}  // namespace
