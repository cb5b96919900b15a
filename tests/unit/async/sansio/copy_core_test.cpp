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
#include "pq/copy_pieces.hpp"

#include <pgpipe/error.hpp>

#include <gtest/gtest.h>

#include <algorithm>
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

// libpq takes an int length: a chunk larger than one piece goes to libpq
// piece after piece (each once the one before is on the socket), whole and
// in order, and its write completes after the last piece.
TEST(copy_core, a_chunk_larger_than_a_piece_goes_out_whole_in_pieces) {
  using pgpipe::detail::copy_piece_max;
  copy_core c = open_copy_in();
  std::string chunk(2 * copy_piece_max + 3, 'a');
  for (std::size_t i = 0; i < chunk.size(); i += 4099) chunk[i] = static_cast<char>('b' + i % 23);
  const std::string expected = chunk;
  EXPECT_FALSE(c.write(std::move(chunk)).answered);
  std::string sent;
  std::vector<std::size_t> sizes;
  for (int round = 0; round < 5; ++round) {
    auto a = take(c);
    if (kinds(a) == "complete_write") break;
    ASSERT_EQ(kinds(a), "put_data") << "round " << round;
    sizes.push_back(a[0].data.size());
    if (round == 1) {  // a full buffer: the same piece again after the flush
      c.on_put_data(copy_put::full);
      EXPECT_EQ(kinds(take(c)), "");
      c.on_flush(copy_flushed::done);
      a = take(c);
      ASSERT_EQ(kinds(a), "put_data");
      EXPECT_EQ(a[0].data.size(), sizes.back());
    }
    sent.append(a[0].data);
    c.on_put_data(copy_put::sent);
    ASSERT_EQ(kinds(take(c)), "flush");
    c.on_flush(copy_flushed::done);
  }
  EXPECT_EQ(sizes, (std::vector<std::size_t>{copy_piece_max, copy_piece_max, 3}));
  EXPECT_TRUE(sent == expected) << "the pieces, joined, are not the chunk";
  EXPECT_EQ(kinds(take(c)), "");
  EXPECT_FALSE(c.write("next").answered);  // the next chunk is accepted
  auto a = take(c);
  ASSERT_EQ(kinds(a), "put_data");
  EXPECT_EQ(a[0].data, "next");
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

TEST(copy_core, a_deadline_before_copydone_went_out_turns_the_end_into_copyfail) {
  // Nothing of a COPY that timed out may stay: the finish asked for CopyDone,
  // but the caller was told query_timeout before it was sent.
  copy_core c = open_copy_in();
  EXPECT_FALSE(c.write("1\n").answered);
  ASSERT_EQ(kinds(take(c)), "put_data");
  c.on_put_data(copy_put::sent);
  ASSERT_EQ(kinds(take(c)), "flush");
  c.on_flush(copy_flushed::done);
  ASSERT_EQ(kinds(take(c)), "complete_write");
  EXPECT_FALSE(c.finish().answered);
  ASSERT_EQ(kinds(take(c)), "put_end");
  c.on_put_end(copy_put::full);  // CopyDone did not fit: it is still ours
  c.on_outcome(make_error_code(errc::query_timeout), result(), true);
  auto a = take(c);
  ASSERT_EQ(kinds(a), "complete_finish");
  EXPECT_EQ(a[0].ec, make_error_code(errc::query_timeout));
  c.on_flush(copy_flushed::done);
  a = take(c);
  ASSERT_EQ(kinds(a), "put_end");
  EXPECT_EQ(a[0].text, "COPY ended: " + make_error_code(errc::query_timeout).message());

  copy_core d(false);  // finished before the server opened it
  EXPECT_FALSE(d.finish().answered);
  d.on_started();
  d.on_outcome(make_error_code(errc::query_timeout), result(), true);
  (void)take(d);
  (void)d.on_result(copy_result::copy_in);
  a = take(d);
  ASSERT_EQ(kinds(a), "put_end");
  EXPECT_FALSE(a[0].text.empty());
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

TEST(copy_core, a_deadline_mid_copy_out_answers_the_waiting_reader_with_the_timeout) {
  copy_core c = open_copy_out();
  EXPECT_FALSE(c.next().answered);
  c.on_outcome(make_error_code(errc::query_timeout), result(), true);
  auto a = take(c);
  ASSERT_EQ(kinds(a), "stop_request complete_next");
  EXPECT_EQ(a[1].ec, make_error_code(errc::query_timeout));
  auto r = c.next();  // reported once, then the end
  EXPECT_TRUE(r.answered);
  EXPECT_FALSE(r.ec);
}

TEST(copy_core, a_deadline_mid_copy_out_is_reported_to_the_next_read) {
  copy_core c = open_copy_out();
  c.on_data("1\n");
  c.on_outcome(make_error_code(errc::query_timeout), result(), true);
  EXPECT_EQ(kinds(take(c)), "stop_request");
  EXPECT_EQ(c.next().ec, make_error_code(errc::query_timeout));  // the rows of a failed COPY are dropped
  c.cancel();
  EXPECT_EQ(c.next().ec, make_error_code(errc::cancelled));  // after cancel(), cancelled
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

// ---- randomized: whole COPYs against a model of the caller's contract ----------------

std::uint64_t env_or(const char* name, std::uint64_t fallback) {
  const char* v = std::getenv(name);
  return v != nullptr && *v != '\0' ? std::strtoull(v, nullptr, 10) : fallback;
}

bool is_lost(const std::error_code& ec) {
  return ec == errc::connection_lost || ec == errc::not_sent || ec == errc::closed;
}

// What the caller may expect, restated from <pgpipe/async_copy.hpp> without
// the wire: the pending operations, whether the outcome is known and what it
// is, and (copy_out) the bytes read for the reader and not yet handed over.
struct caller_model {
  bool out = false;
  bool write = false, finish = false, abort = false, next = false;  ///< pending
  bool ended = false;      ///< finish or abort accepted
  bool cancelled = false;  ///< copy_out's cancel()
  bool stopped = false;    ///< copy_out: rows are dropped from now on
  bool wrong = false;      ///< the server opened the other direction, or no COPY
  bool decided = false;
  std::error_code ec;
  bool error_reported = false;
  std::string buffered;

  std::error_code lost_or_none() const { return is_lost(ec) ? ec : std::error_code{}; }

  /// The immediate answer of each operation; nullopt: accepted.
  std::optional<std::error_code> on_write() const {
    if (ended) return make_error_code(errc::invalid_argument);
    if (decided) return ec ? ec : make_error_code(errc::closed);
    if (write) return make_error_code(errc::invalid_argument);
    return std::nullopt;
  }
  std::optional<std::error_code> on_finish() const {
    if (decided) return ec;
    if (ended || write) return make_error_code(errc::invalid_argument);
    return std::nullopt;
  }
  std::optional<std::error_code> on_abort() const {
    if (decided) return lost_or_none();
    if (abort || finish) return make_error_code(errc::invalid_argument);
    return std::nullopt;
  }
  std::optional<std::error_code> on_next() const {
    if (next) return make_error_code(errc::invalid_argument);
    if (cancelled) return make_error_code(errc::cancelled);
    if (!buffered.empty()) return std::error_code{};
    if (decided) return ec && !error_reported ? ec : std::error_code{};
    return std::nullopt;
  }
};

// One COPY from start to end: the caller, pipeline_core's view of the
// COPY's request, libpq and the server are all played here, at random, and
// every answer of the core is checked against the model and the wire.
class copy_run {
 public:
  copy_run(std::uint64_t seed, std::uint64_t steps)
      : seed_(seed), steps_(steps), rng_(seed), out_(seed % 2 == 0), faults_(seed % 3 == 0), core_(out_) {
    model_.out = out_;
    const unsigned s = pick(100);
    answer_ = s < 70 ? answer::same : s < 80 ? answer::other : s < 90 ? answer::no_copy : answer::error;
  }

  void run() {
    for (step_ = 0; step_ < steps_ && !::testing::Test::HasFatalFailure(); ++step_) random_event();
    if (::testing::Test::HasFatalFailure()) return;
    drain();
    if (::testing::Test::HasFatalFailure()) return;
    ASSERT_TRUE(model_.decided) << where() << "the COPY never got its outcome";
    ASSERT_FALSE(model_.write || model_.finish || model_.abort || model_.next)
        << where() << "an operation was never answered (write " << model_.write << ", finish " << model_.finish
        << ", abort " << model_.abort << ", next " << model_.next << ")";
    if (started_ && !dead_) {
      ASSERT_EQ(core_.phase(), copy_phase::over) << where() << "the COPY never left the wire";
    }
    if (!out_ && finish_ok_) {
      ASSERT_TRUE(end_sent_ && end_text_.empty()) << where() << "finish succeeded without CopyDone";
      ASSERT_EQ(server_bytes_, acked_bytes_) << where() << "the server got other bytes than the writes that succeeded";
    }
    if (out_ && end_delivered_ && !model_.ec && !model_.cancelled && !model_.wrong && answer_ == answer::same) {
      ASSERT_EQ(read_bytes_, rows_sent_) << where() << "copy_out's reader did not get every row";
    }
  }

 private:
  enum class answer { same, other, no_copy, error };
  struct item {
    enum class what { result, row, data_end } w;
    copy_result r = copy_result::other;
    std::string row;
  };

  unsigned pick(unsigned n) { return static_cast<unsigned>(rng_() % n); }
  bool chance(unsigned percent) { return pick(100) < percent; }
  std::string where() const { return "seed " + std::to_string(seed_) + ", step " + std::to_string(step_) + ": "; }

  void random_event() {
    const unsigned ev = pick(100);
    if (ev < 30) {
      caller_op();
    } else if (ev < 36) {
      if (!enqueued_) enqueued_ = true;
    } else if (ev < 42) {
      if (enqueued_ && !started_ && !completed_) start();
    } else if (ev < 70) {
      readable();
    } else if (ev < 90) {
      writable();
    } else if (ev < 92) {
      if (enqueued_ && !completed_ && chance(30)) deliver_outcome(make_error_code(errc::query_timeout), !dead_);
    } else if (ev < 93) {
      if (faults_ && started_ && !dead_ && chance(30)) broken();
    } else {
      caller_op();
    }
  }

  // ---- the caller ----

  void caller_op() {
    if (!out_) {
      const unsigned op = pick(100);
      if (op < 80) {
        do_write();
      } else if (op < 92) {
        do_finish();
      } else {
        do_abort();
      }
    } else {
      if (pick(100) < 95) {
        do_next();
      } else {
        do_cancel();
      }
    }
  }

  void do_write() {
    std::string chunk(1 + pick(chance(5) ? 70000 : 3000), static_cast<char>('a' + pick(26)));
    const auto expect = model_.on_write();
    copy_reply r = core_.write(chunk);
    ASSERT_EQ(r.answered, expect.has_value()) << where() << "write";
    if (r.answered) {
      ASSERT_EQ(r.ec, *expect) << where() << "write refused with " << r.ec.message();
    } else {
      model_.write = true;
      write_chunk_ = chunk;
      chunk_in_libpq_ = false;
    }
    apply();
  }

  void do_finish() {
    const auto expect = model_.on_finish();
    copy_reply r = core_.finish();
    ASSERT_EQ(r.answered, expect.has_value()) << where() << "finish";
    if (r.answered) {
      ASSERT_EQ(r.ec, *expect) << where() << "finish answered " << r.ec.message();
    } else {
      model_.finish = true;
      model_.ended = true;
    }
    apply();
  }

  void do_abort() {
    const auto expect = model_.on_abort();
    copy_reply r = core_.abort(chance(50) ? "" : "changed my mind");
    ASSERT_EQ(r.answered, expect.has_value()) << where() << "abort";
    if (r.answered) {
      ASSERT_EQ(r.ec, *expect) << where() << "abort answered " << r.ec.message();
    } else {
      model_.abort = true;
      model_.ended = true;
      aborted_ = true;
    }
    apply();
  }

  void do_next() {
    const auto expect = model_.on_next();
    copy_reply r = core_.next();
    ASSERT_EQ(r.answered, expect.has_value()) << where() << "next";
    if (r.answered) {
      ASSERT_EQ(r.ec, *expect) << where() << "next answered " << r.ec.message();
      took_next(r.ec, r.data);
    } else {
      model_.next = true;
    }
    apply();
  }

  void do_cancel() {
    core_.cancel();
    if (!model_.cancelled) {
      if (model_.next) {
        expect_next_ = make_error_code(errc::cancelled);
      }
      model_.cancelled = true;
    }
    model_.stopped = true;
    model_.buffered.clear();
    apply();
    ASSERT_FALSE(model_.next) << where() << "cancel left the reader waiting";
  }

  // A chunk or an answer handed to copy_out's reader (now or by an action).
  void took_next(std::error_code ec, const std::string& data) {
    if (!ec && !data.empty()) {
      ASSERT_EQ(data, model_.buffered) << where() << "a chunk is every row read for the reader so far";
      ASSERT_LE(data.size(), copy_chunk_bytes + max_row_) << where() << "a chunk past the bound";
      read_bytes_ += data;
      model_.buffered.clear();
      return;
    }
    if (ec) {
      model_.error_reported = model_.error_reported || ec == model_.ec;
      return;
    }
    ASSERT_TRUE(model_.decided) << where() << "the end before the outcome";
    end_delivered_ = true;
  }

  // ---- pipeline_core and the connection ----

  void start() {
    started_ = true;
    core_.on_started();
    switch (answer_) {
      case answer::same:
        if (out_) {
          push_out_stream();
        } else {
          queue_.push_back({item::what::result, copy_result::copy_in, {}});
        }
        break;
      case answer::other:
        if (out_) {
          queue_.push_back({item::what::result, copy_result::copy_in, {}});
        } else {
          push_out_stream();
        }
        break;
      case answer::no_copy:
        queue_.push_back({item::what::result, copy_result::other, {}});
        break;
      case answer::error:
        queue_.push_back({item::what::result, copy_result::error, {}});
        break;
    }
    flush_by_shell();  // the shell flushes the statement, then watches the socket
  }

  void push_out_stream() {
    queue_.push_back({item::what::result, copy_result::copy_out, {}});
    const unsigned rows = pick(chance(20) ? 400 : 40);
    for (unsigned i = 0; i < rows; ++i) {
      std::string row(1 + pick(static_cast<unsigned>(max_row_)), static_cast<char>('0' + i % 10));
      queue_.push_back({item::what::row, copy_result::other, row});
    }
    queue_.push_back({item::what::data_end, copy_result::other, {}});
    queue_.push_back({item::what::result, final_result(copy_result::other), {}});
  }

  copy_result final_result(copy_result r) { return faults_ && chance(5) ? copy_result::session_fatal : r; }

  bool wire_usable() const { return started_ && !dead_ && core_.on_wire(); }

  void writable() {
    if (wire_usable() && core_.flush_pending()) flush_by_shell();
  }

  void readable() {
    if (wire_usable() && !core_.paused()) pump();
  }

  void flush_by_shell() {
    if (!wire_usable()) return;
    core_.on_flush(flush_answer());
    apply();
  }

  copy_flushed flush_answer() {
    const unsigned r = pick(100);
    if (faults_ && r < 2) return copy_flushed::failed;
    return r < 70 ? copy_flushed::done : copy_flushed::pending;
  }

  copy_put put_answer() {
    const unsigned r = pick(100);
    if (faults_ && r < 2) return copy_put::failed;
    return r < 75 ? copy_put::sent : copy_put::full;
  }

  void broken() {
    dead_ = true;
    if (!completed_) deliver_outcome(make_error_code(errc::connection_lost), false);
  }

  // pipeline_core completes the COPY's request: the shell hands it to the core.
  void deliver_outcome(std::error_code ec, bool ready) {
    ASSERT_FALSE(completed_) << where() << "the request completed twice";
    completed_ = true;
    const bool on_wire = core_.on_wire();
    model_.decided = true;
    model_.ec = model_.wrong && !is_lost(ec) ? make_error_code(errc::invalid_argument) : ec;
    if (out_ && model_.ec && ready && on_wire) {
      model_.stopped = true;
      model_.buffered.clear();
    }
    core_.on_outcome(ec, result(), ready);
    apply();
  }

  // The shell's copy_pump: read what the core allows.
  void pump() {
    for (int guard = 0; wire_usable(); ++guard) {
      ASSERT_LT(guard, 100000) << where() << "the pump never stops";
      switch (core_.next_read()) {
        case copy_read::nothing:
          apply();
          return;
        case copy_read::data: {
          if (queue_.empty() || chance(15)) {  // nothing more until readable
            core_.on_data_wait();
            apply();
            return;
          }
          item it = queue_.front();
          ASSERT_NE(it.w, item::what::result) << where() << "the core reads data where the server sends a result";
          queue_.pop_front();
          if (it.w == item::what::row) {
            rows_sent_ += it.row;
            if (!model_.stopped && !model_.wrong) model_.buffered += it.row;
            core_.on_data(it.row);
          } else {
            core_.on_data_end();
          }
          apply();
          continue;
        }
        case copy_read::result: {
          if (chance(10)) return;  // PQisBusy
          if (queue_.empty()) {
            if (server_in_open_) return;  // the server waits for CopyDone/CopyFail
            core_.on_results_done();
            apply();
            return;
          }
          item it = queue_.front();
          ASSERT_EQ(it.w, item::what::result) << where() << "the core reads a result where the server sends data";
          queue_.pop_front();
          if (core_.phase() == copy_phase::starting) {
            if (it.r == copy_result::copy_in) model_.wrong = out_;
            if (it.r == copy_result::copy_out) model_.wrong = !out_;
            if (it.r == copy_result::other) model_.wrong = true;
          }
          if (it.r == copy_result::copy_in) server_in_open_ = true;
          const auto v = core_.on_result(it.r);
          if (v.keep == copy_keep::as_error) ++kept_errors_;
          if (v.keep == copy_keep::as_ok) ++kept_oks_;
          ASSERT_LE(kept_errors_, 1) << where() << "two errors kept";
          ASSERT_LE(kept_oks_, 1) << where() << "two command results kept";
          if (v.ends_session) {
            ASSERT_EQ(it.r, copy_result::session_fatal);
            if (!completed_) deliver_outcome(make_error_code(errc::connection_lost), true);
            dead_ = true;
            return;
          }
          apply();
          continue;
        }
      }
    }
  }

  // The shell's copy_apply: carry out the actions in order, depth first.
  void apply() {
    std::vector<copy_action> as;
    for (core_.take_actions(as); !as.empty(); core_.take_actions(as)) {
      for (auto& a : as) {
        carry_out(a);
        if (::testing::Test::HasFatalFailure()) return;
      }
    }
  }

  void carry_out(copy_action& a) {
    switch (a.what) {
      case kind::put_data:
      case kind::put_end:
      case kind::flush:
      case kind::read:
        ASSERT_TRUE(started_ && core_.on_wire()) << where() << name(a.what) << " while the COPY is not on the wire";
        if (dead_) return;  // the shell drops it: the connection is gone
        break;
      default:
        break;
    }
    switch (a.what) {
      case kind::put_data: {
        ASSERT_FALSE(end_sent_) << where() << "data after the end";
        ASSERT_TRUE(model_.write) << where() << "data with no write pending";
        ASSERT_EQ(a.data, write_chunk_) << where() << "put_data is not the pending write's chunk";
        const copy_put r = put_answer();
        if (r == copy_put::sent) {
          server_bytes_ += write_chunk_;
          chunk_in_libpq_ = true;
        }
        core_.on_put_data(r);
        apply();
        return;
      }
      case kind::put_end: {
        ASSERT_FALSE(end_sent_) << where() << "a second end";
        const bool wrong_end = a.text == "copy_out needs COPY ... TO STDOUT";
        if (a.text.empty()) {
          ASSERT_TRUE(model_.finish && !aborted_ && !model_.decided)
              << where() << "CopyDone without a pending finish, or after the outcome";
        }
        const copy_put r = put_answer();
        if (r == copy_put::sent || (wrong_end && r == copy_put::full)) {
          end_sent_ = true;
          end_text_ = a.text;
          if (server_in_open_) {
            server_in_open_ = false;
            queue_.push_back({item::what::result, final_result(a.text.empty() ? copy_result::other : copy_result::error), {}});
          }
        }
        core_.on_put_end(r);
        apply();
        return;
      }
      case kind::flush:
        flush_by_shell();
        return;
      case kind::read:
        pump();
        return;
      case kind::stop_request:
        if (!enqueued_) return;  // still on its way: it starts stopped
        if (!started_) {
          if (!completed_) {
            removed_ = true;
            deliver_outcome(make_error_code(errc::cancelled), !dead_);
          }
          return;
        }
        if (!dead_ && core_.on_wire() && !cancel_sent_) {  // PQcancel: the server stops where it is
          cancel_sent_ = true;
          // Mid COPY TO the data ends, then the error; before the COPY
          // opened (or after its data) only the error comes.
          const bool streaming = core_.phase() == copy_phase::out_data &&
                                 std::any_of(queue_.begin(), queue_.end(), [](const item& i) { return i.w == item::what::data_end; });
          queue_.clear();
          server_in_open_ = false;
          if (streaming) queue_.push_back({item::what::data_end, copy_result::other, {}});
          queue_.push_back({item::what::result, copy_result::error, {}});
        }
        return;
      case kind::break_connection:
        ASSERT_FALSE(a.text.empty());
        if (!dead_) broken();
        return;
      case kind::wire_done:
        ASSERT_EQ(core_.phase(), copy_phase::over) << where();
        ASSERT_TRUE(started_ && !dead_) << where() << "wire_done without a live COPY";
        ASSERT_TRUE(queue_.empty()) << where() << "wire_done with results unread";
        if (!completed_) {
          std::error_code ec;
          if (a.failed) ec = cancel_sent_ ? make_error_code(errc::cancelled) : make_sqlstate("22P02");
          deliver_outcome(ec, true);
        }
        return;
      case kind::complete_write:
        ASSERT_TRUE(model_.write) << where() << "complete_write with no write pending";
        model_.write = false;
        if (!a.ec) {
          ASSERT_TRUE(chunk_in_libpq_) << where() << "a write succeeded before its chunk went to libpq";
          acked_bytes_ += write_chunk_;
        } else if (a.ec == errc::cancelled) {
          ASSERT_TRUE(aborted_) << where() << "a write cancelled without an abort";
        } else {
          ASSERT_TRUE(model_.decided) << where() << "a write failed before the outcome";
          ASSERT_EQ(a.ec, model_.ec ? model_.ec : make_error_code(errc::closed)) << where();
          if (chunk_in_libpq_) acked_bytes_ += write_chunk_;  // handed over already: the server may see it
        }
        return;
      case kind::complete_finish:
        ASSERT_TRUE(model_.finish && model_.decided) << where() << "complete_finish out of turn";
        model_.finish = false;
        ASSERT_EQ(a.ec, model_.ec) << where() << "finish got " << a.ec.message();
        finish_ok_ = !a.ec;
        return;
      case kind::complete_abort:
        ASSERT_TRUE(model_.abort && model_.decided) << where() << "complete_abort out of turn";
        model_.abort = false;
        ASSERT_EQ(a.ec, model_.lost_or_none()) << where() << "abort got " << a.ec.message();
        return;
      case kind::complete_next:
        ASSERT_TRUE(model_.next) << where() << "complete_next with no next pending";
        model_.next = false;
        if (expect_next_) {
          ASSERT_EQ(a.ec, *expect_next_) << where();
          expect_next_.reset();
          return;
        }
        if (a.ec) {
          ASSERT_EQ(a.ec, model_.ec) << where() << "the reader got " << a.ec.message();
        }
        took_next(a.ec, a.text);
        return;
    }
  }

  // Whatever happened, the caller ends the COPY and the server answers
  // until it is over.
  void drain() {
    for (int i = 0; i < 20000 && !::testing::Test::HasFatalFailure(); ++i) {
      const bool wire_open = started_ && !dead_ && core_.phase() != copy_phase::over;
      if (model_.decided && !wire_open && !model_.write && !model_.finish && !model_.abort &&
          (!model_.next || (!started_ && !enqueued_)))
        return;
      if (!out_ && !model_.ended && !model_.decided) {
        if (!model_.write) chance(80) ? do_finish() : do_abort();
      } else if (out_ && !model_.next && !end_delivered_ && !model_.cancelled) {
        do_next();
      }
      if (!enqueued_) enqueued_ = true;
      if (!started_ && !completed_) start();
      if (!started_ && completed_ && !model_.next) return;  // removed or timed out before it ran
      writable();
      readable();
      if (i > 15000 && !completed_) deliver_outcome(make_error_code(errc::query_timeout), !dead_);
    }
    FAIL() << where() << "the COPY never ended";
  }

  const std::uint64_t seed_;
  const std::uint64_t steps_;
  std::uint64_t step_ = 0;
  std::mt19937_64 rng_;
  const bool out_;
  const bool faults_;
  answer answer_ = answer::same;
  copy_core core_;
  caller_model model_;
  static constexpr std::size_t max_row_ = 3000;

  bool enqueued_ = false, started_ = false, completed_ = false, dead_ = false, removed_ = false;
  bool cancel_sent_ = false, server_in_open_ = false;
  std::deque<item> queue_;
  std::string write_chunk_;
  bool chunk_in_libpq_ = false;
  bool aborted_ = false, end_sent_ = false, finish_ok_ = false, end_delivered_ = false;
  std::string end_text_;
  std::string server_bytes_, acked_bytes_;  // copy_in: what reached libpq / what the caller was told went
  std::string rows_sent_, read_bytes_;      // copy_out: what the server sent / what the reader got
  int kept_errors_ = 0, kept_oks_ = 0;
  std::optional<std::error_code> expect_next_;
};

TEST(copy_core_model, random_copies_answer_every_operation_once_as_the_contract_says) {
  const std::uint64_t only = env_or("PGPIPE_COPY_MODEL_SEED", 0);
  const std::uint64_t seeds = env_or("PGPIPE_COPY_MODEL_SEEDS", 300);
  const std::uint64_t steps = env_or("PGPIPE_COPY_MODEL_STEPS", 200);
  for (std::uint64_t seed = only != 0 ? only : 1; seed <= (only != 0 ? only : seeds); ++seed) {
    copy_run(seed, steps).run();
    if (::testing::Test::HasFatalFailure()) return;
  }
}

}  // namespace
