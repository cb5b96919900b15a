// listener_core, transition by transition, with a fake clock: what both
// listeners promise (listener.hpp, blocking_listener.hpp, docs/service.md)
// without a server. The randomized comparison with a model is
// listener_core_model_test.cpp.
#include "core/listen/listener_core.hpp"

#include <pgpipe/error.hpp>

#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <vector>

namespace {

using namespace std::chrono_literals;
using pgpipe::notification;
using pgpipe::detail::after_command;
using pgpipe::detail::command_id;
using pgpipe::detail::listen_ack;
using pgpipe::detail::listen_clock;
using pgpipe::detail::listen_command;
using pgpipe::detail::listener_core;
using pgpipe::detail::listener_phase;

const listen_clock::time_point t0{std::chrono::hours(1)};

listener_core::settings small_settings() { return {50ms, 500ms, 3}; }

std::error_code refused() { return pgpipe::make_sqlstate("42601"); }

notification note(const std::string& channel, const std::string& payload) {
  notification n;
  n.channel = channel;
  n.payload = payload;
  return n;
}

// A listener_core with its clock, connected the way the drivers do it.
struct fixture {
  listener_core core{small_settings(), t0};
  listen_clock::time_point now = t0;

  void connect() {
    ASSERT_EQ(core.phase(), listener_phase::waiting);
    ASSERT_LE(core.connect_at(), now) << "connect not due yet";
    core.on_connect_started();
    ASSERT_EQ(core.phase(), listener_phase::connecting);
    core.on_connected();
    ASSERT_EQ(core.phase(), listener_phase::ready);
  }
  // Sends the next command and answers it; returns what was sent.
  listen_command answer(std::error_code ec = {}) {
    const listen_command* c = core.next_command();
    EXPECT_NE(c, nullptr) << "nothing to send";
    if (c == nullptr) return {};
    listen_command sent = *c;
    EXPECT_EQ(core.on_command_done(now, ec, {}), after_command::carry_on);
    return sent;
  }
  std::vector<notification> drain() {
    std::vector<notification> out;
    while (core.has_notification()) out.push_back(core.pop());
    return out;
  }
};

TEST(listener_core, the_first_connect_is_due_at_once_and_a_fresh_connection_sends_nothing) {
  fixture f;
  EXPECT_EQ(f.core.connect_at(), t0);
  f.connect();
  EXPECT_EQ(f.core.next_command(), nullptr);
  EXPECT_FALSE(f.core.has_notification()) << "no gap on the first connection";
}

TEST(listener_core, a_subscription_made_while_disconnected_is_sent_once_ready_and_acknowledged) {
  fixture f;
  const command_id id = f.core.subscribe("orders", f.now);
  EXPECT_EQ(f.core.next_command(), nullptr) << "nothing is sent before the connection is ready";
  EXPECT_TRUE(f.core.take_acks().empty());
  EXPECT_TRUE(f.core.channels().empty()) << "a subscription once the server accepts it";
  f.connect();
  const listen_command sent = f.answer();
  EXPECT_EQ(sent.what, listen_command::kind::listen);
  EXPECT_EQ(sent.sql, "LISTEN \"orders\"");
  EXPECT_EQ(sent.id, id);
  const auto acks = f.core.take_acks();
  ASSERT_EQ(acks.size(), 1u);
  EXPECT_EQ(acks[0].id, id);
  EXPECT_FALSE(acks[0].ec);
  EXPECT_EQ(f.core.channels().count("orders"), 1u);
}

// quote_identifier keeps a NUL byte, and libpq would cut the LISTEN there:
// the command is refused at once and nothing is queued.
TEST(listener_core, a_channel_name_holding_a_nul_byte_is_refused_and_nothing_is_sent) {
  using namespace std::string_literals;
  fixture f;
  f.connect();
  const command_id id = f.core.subscribe("chan\0nel"s, f.now);
  const auto acks = f.core.take_acks();
  ASSERT_EQ(acks.size(), 1u);
  EXPECT_EQ(acks[0].id, id);
  EXPECT_EQ(acks[0].ec, pgpipe::errc::invalid_argument);
  EXPECT_NE(acks[0].diag.client_message.find("NUL byte at offset 4"), std::string::npos) << acks[0].diag.client_message;
  EXPECT_EQ(f.core.next_command(), nullptr);
  EXPECT_TRUE(f.core.channels().empty());
}

TEST(listener_core, commands_go_one_at_a_time_in_order) {
  fixture f;
  f.connect();
  const command_id a = f.core.subscribe("a", f.now);
  const command_id b = f.core.unsubscribe("b", f.now);
  const listen_command* first = f.core.next_command();
  ASSERT_NE(first, nullptr);
  EXPECT_EQ(first->id, a);
  EXPECT_TRUE(f.core.in_flight());
  EXPECT_EQ(f.core.next_command(), nullptr) << "one in flight at a time";
  EXPECT_EQ(f.core.on_command_done(f.now, {}, {}), after_command::carry_on);
  const listen_command* second = f.core.next_command();
  ASSERT_NE(second, nullptr);
  EXPECT_EQ(second->id, b);
  EXPECT_EQ(second->what, listen_command::kind::unlisten);
  EXPECT_EQ(second->sql, "UNLISTEN \"b\"");
}

TEST(listener_core, failed_connects_back_off_doubling_to_the_maximum_and_a_success_resets_it) {
  fixture f;
  std::vector<std::chrono::milliseconds> waits;
  for (int i = 0; i < 6; ++i) {
    f.core.on_connect_started();
    f.core.on_connect_failed(f.now);
    ASSERT_EQ(f.core.phase(), listener_phase::waiting);
    waits.push_back(std::chrono::duration_cast<std::chrono::milliseconds>(f.core.connect_at() - f.now));
    f.now = f.core.connect_at();
  }
  EXPECT_EQ(waits, (std::vector<std::chrono::milliseconds>{50ms, 100ms, 200ms, 400ms, 500ms, 500ms}));
  f.connect();
  EXPECT_EQ(f.core.backoff(), 0ms);
  f.core.on_lost(f.now);
  EXPECT_EQ(f.core.connect_at(), f.now) << "a loss reconnects at once";
  f.core.on_connect_started();
  f.core.on_connect_failed(f.now);
  EXPECT_EQ(f.core.connect_at(), f.now + 50ms) << "the back-off starts over after a success";
}

TEST(listener_core, after_a_loss_every_channel_is_listened_again_first_and_the_gap_follows_its_acknowledgement) {
  fixture f;
  f.connect();
  f.core.subscribe("b", f.now);
  f.core.subscribe("a", f.now);
  f.answer();
  f.answer();
  f.core.take_acks();
  f.core.on_notification(note("a", "before"));
  f.core.on_lost(f.now);
  EXPECT_TRUE(f.core.gap_pending());
  const command_id later = f.core.subscribe("c", f.now);  // queued behind the re-LISTEN
  f.connect();
  const auto before = f.drain();
  ASSERT_EQ(before.size(), 1u) << "no gap before the re-LISTEN is acknowledged";
  EXPECT_EQ(before[0].payload, "before");
  const listen_command* c = f.core.next_command();
  ASSERT_NE(c, nullptr);
  EXPECT_EQ(c->what, listen_command::kind::relisten);
  EXPECT_EQ(c->id, 0u);
  // The channels the server accepted; "c" is not one yet: its own LISTEN follows.
  EXPECT_EQ(c->channels, (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(c->sql, "LISTEN \"a\";LISTEN \"b\";");
  EXPECT_EQ(f.core.on_command_done(f.now, {}, {}), after_command::carry_on);
  EXPECT_TRUE(f.core.take_acks().empty()) << "the listener's own command has no caller";
  f.core.on_notification(note("a", "after"));  // read with or after the acknowledgement
  const auto after = f.drain();
  ASSERT_EQ(after.size(), 2u);
  EXPECT_TRUE(after[0].gap);
  EXPECT_EQ(after[1].payload, "after");
  const listen_command* next = f.core.next_command();
  ASSERT_NE(next, nullptr);
  EXPECT_EQ(next->id, later);
}

TEST(listener_core, the_gap_comes_after_what_was_read_before_the_loss_and_before_anything_newer) {
  fixture f;
  f.connect();
  f.core.subscribe("a", f.now);
  f.answer();
  f.core.on_notification(note("a", "1"));
  f.core.on_notification(note("a", "2"));
  f.core.on_lost(f.now);
  f.connect();
  f.answer();  // the re-LISTEN
  f.core.on_notification(note("a", "3"));
  const auto got = f.drain();
  ASSERT_EQ(got.size(), 4u);
  EXPECT_EQ(got[0].payload, "1");
  EXPECT_EQ(got[1].payload, "2");
  EXPECT_TRUE(got[2].gap);
  EXPECT_TRUE(got[2].channel.empty() && got[2].payload.empty());
  EXPECT_EQ(got[3].payload, "3");
}

TEST(listener_core, with_nothing_subscribed_a_reconnect_gives_no_gap) {
  fixture f;
  f.connect();
  f.core.subscribe("a", f.now);
  f.answer();
  f.core.unsubscribe("a", f.now);
  f.answer();
  f.core.on_lost(f.now);
  f.connect();
  EXPECT_EQ(f.core.next_command(), nullptr) << "nothing to listen again";
  EXPECT_FALSE(f.core.gap_pending());
  EXPECT_FALSE(f.core.has_notification());
}

TEST(listener_core, a_command_in_flight_at_a_loss_is_sent_again_on_the_next_connection) {
  fixture f;
  f.connect();
  f.core.subscribe("b", f.now);
  f.answer();
  f.core.take_acks();
  const command_id id = f.core.subscribe("a", f.now);
  ASSERT_NE(f.core.next_command(), nullptr);
  f.core.on_lost(f.now);
  EXPECT_FALSE(f.core.in_flight());
  EXPECT_TRUE(f.core.take_acks().empty()) << "not answered by the loss";
  f.connect();
  const listen_command relisten = f.answer();
  EXPECT_EQ(relisten.what, listen_command::kind::relisten);
  EXPECT_EQ(relisten.channels, (std::vector<std::string>{"b"})) << "\"a\" is not accepted yet";
  const listen_command again = f.answer();
  EXPECT_EQ(again.what, listen_command::kind::listen);
  EXPECT_EQ(again.id, id);
  const auto acks = f.core.take_acks();
  ASSERT_EQ(acks.size(), 1u);
  EXPECT_EQ(acks[0].id, id);
}

TEST(listener_core, a_refused_listen_is_answered_with_its_error_and_not_kept) {
  fixture f;
  f.connect();
  f.core.subscribe("good", f.now);
  f.answer();
  const command_id bad = f.core.subscribe("", f.now);
  pgpipe::diagnostics d;
  d.sqlstate = "42601";
  ASSERT_NE(f.core.next_command(), nullptr);
  EXPECT_EQ(f.core.on_command_done(f.now, refused(), d), after_command::carry_on);
  auto acks = f.core.take_acks();
  ASSERT_EQ(acks.size(), 2u);
  EXPECT_EQ(acks[1].id, bad);
  EXPECT_EQ(acks[1].ec, refused());
  EXPECT_EQ(acks[1].diag.sqlstate, "42601");
  EXPECT_EQ(f.core.channels(), (std::set<std::string>{"good"}));
  f.core.on_lost(f.now);
  f.connect();
  const listen_command* c = f.core.next_command();
  ASSERT_NE(c, nullptr);
  EXPECT_EQ(c->channels, (std::vector<std::string>{"good"})) << "the refused channel is not listened again";
}

// A channel the server will refuse, asked for while disconnected, must not
// join the re-LISTEN: one refused name would refuse every channel on every
// reconnect, and no gap, notification or answer would ever come.
TEST(listener_core, a_listen_refused_after_a_loss_is_answered_and_dropped_and_the_others_are_listened_again) {
  fixture f;
  f.connect();
  f.core.subscribe("good", f.now);
  f.answer();
  f.core.take_acks();
  f.core.on_lost(f.now);
  const command_id bad = f.core.subscribe("", f.now);  // asked while disconnected
  f.connect();
  const listen_command relisten = f.answer();
  EXPECT_EQ(relisten.what, listen_command::kind::relisten);
  EXPECT_EQ(relisten.channels, (std::vector<std::string>{"good"})) << "only what the server accepted";
  const auto got = f.drain();
  ASSERT_EQ(got.size(), 1u);
  EXPECT_TRUE(got[0].gap) << "the gap follows the re-LISTEN of the accepted channels";
  const listen_command* c = f.core.next_command();
  ASSERT_NE(c, nullptr);
  EXPECT_EQ(c->id, bad);
  EXPECT_EQ(f.core.on_command_done(f.now, refused(), {}), after_command::carry_on);
  const auto acks = f.core.take_acks();
  ASSERT_EQ(acks.size(), 1u);
  EXPECT_EQ(acks[0].id, bad);
  EXPECT_EQ(acks[0].ec, refused());
  EXPECT_EQ(f.core.channels(), (std::set<std::string>{"good"}));
  f.core.on_lost(f.now);
  f.connect();
  EXPECT_EQ(f.answer().channels, (std::vector<std::string>{"good"})) << "the next re-LISTEN succeeds too";
  ASSERT_EQ(f.drain().size(), 1u);
}

TEST(listener_core, a_refused_relisten_reconnects_after_the_back_off_with_the_gap_still_pending) {
  fixture f;
  f.connect();
  f.core.subscribe("a", f.now);
  f.answer();
  f.core.on_lost(f.now);
  f.connect();
  ASSERT_NE(f.core.next_command(), nullptr);
  EXPECT_EQ(f.core.on_command_done(f.now, refused(), {}), after_command::reconnect);
  EXPECT_EQ(f.core.phase(), listener_phase::waiting);
  EXPECT_EQ(f.core.connect_at(), f.now + 50ms);
  EXPECT_TRUE(f.core.gap_pending());
  EXPECT_FALSE(f.core.has_notification()) << "no gap while a channel is not listened";
  EXPECT_EQ(f.core.channels().count("a"), 1u) << "a refused re-LISTEN forgets no channel";
  f.now = f.core.connect_at();
  f.connect();
  EXPECT_EQ(f.answer().what, listen_command::kind::relisten);
  const auto got = f.drain();
  ASSERT_EQ(got.size(), 1u);
  EXPECT_TRUE(got[0].gap);
}

TEST(listener_core, a_full_buffer_stops_reading_unless_a_command_waits_for_its_answer) {
  fixture f;  // max_buffered 3
  f.connect();
  for (int i = 0; i < 3; ++i) {
    EXPECT_TRUE(f.core.wants_read());
    f.core.on_notification(note("a", std::to_string(i)));
  }
  EXPECT_TRUE(f.core.full());
  EXPECT_FALSE(f.core.wants_read());
  f.core.subscribe("b", f.now);
  ASSERT_NE(f.core.next_command(), nullptr);
  EXPECT_TRUE(f.core.wants_read()) << "the answer must be read";
  EXPECT_EQ(f.core.on_command_done(f.now, {}, {}), after_command::carry_on);
  EXPECT_FALSE(f.core.wants_read());
  f.core.pop();
  EXPECT_TRUE(f.core.wants_read());
}

TEST(listener_core, close_answers_every_pending_command_with_closed_and_refuses_the_rest) {
  fixture f;
  f.connect();
  const command_id a = f.core.subscribe("a", f.now);
  const command_id b = f.core.subscribe("b", f.now);
  ASSERT_NE(f.core.next_command(), nullptr);
  f.core.on_notification(note("x", "buffered"));
  f.core.close();
  EXPECT_TRUE(f.core.closed());
  EXPECT_FALSE(f.core.has_notification()) << "close drops what is buffered";
  auto acks = f.core.take_acks();
  ASSERT_EQ(acks.size(), 2u);
  EXPECT_EQ(acks[0].id, a);
  EXPECT_EQ(acks[1].id, b);
  for (const auto& ack : acks) EXPECT_EQ(ack.ec, pgpipe::errc::closed);
  // Everything afterwards is refused or ignored.
  const command_id c = f.core.subscribe("c", f.now);
  acks = f.core.take_acks();
  ASSERT_EQ(acks.size(), 1u);
  EXPECT_EQ(acks[0].id, c);
  EXPECT_EQ(acks[0].ec, pgpipe::errc::closed);
  EXPECT_EQ(f.core.on_command_done(f.now, {}, {}), after_command::carry_on);
  EXPECT_TRUE(f.core.take_acks().empty()) << "an answer after close is not a second ack";
  f.core.on_notification(note("x", "late"));
  f.core.on_lost(f.now);
  f.core.on_connect_failed(f.now);
  EXPECT_TRUE(f.core.closed());
  EXPECT_FALSE(f.core.has_notification());
  EXPECT_EQ(f.core.next_command(), nullptr);
  f.core.close();  // idempotent
  EXPECT_TRUE(f.core.take_acks().empty());
}

TEST(listener_core, unsubscribe_forgets_the_channel_and_keeps_what_is_buffered) {
  fixture f;
  f.connect();
  f.core.subscribe("a", f.now);
  f.answer();
  f.core.on_notification(note("a", "kept"));
  f.core.unsubscribe("a", f.now);
  EXPECT_TRUE(f.core.channels().empty());
  f.answer();
  const auto got = f.drain();
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].payload, "kept");
}

TEST(listener_core, channel_names_are_quoted_as_identifiers) {
  fixture f;
  f.connect();
  f.core.subscribe("Mixed \"q\"", f.now);
  EXPECT_EQ(f.answer().sql, "LISTEN \"Mixed \"\"q\"\"\"");
  EXPECT_EQ(pgpipe::detail::relisten_sql({"a\"b", "Z"}), "LISTEN \"Z\";LISTEN \"a\"\"b\";");
}

// A listener that cannot connect (a wrong password) must not hold its
// callers forever: after acquire_timeout they hear why it cannot connect.
TEST(listener_core, commands_waiting_for_a_connection_fail_with_the_last_connect_error_after_acquire_timeout) {
  listener_core::settings s = small_settings();
  s.acquire_timeout = 1000ms;
  listener_core core(s, t0);
  auto now = t0;
  const command_id early = core.subscribe("a", now);
  EXPECT_EQ(core.next_deadline(), t0 + 1000ms);
  core.on_connect_started();
  pgpipe::diagnostics why;
  why.client_message = "password authentication failed";
  core.on_connect_failed(now, pgpipe::make_error_code(pgpipe::errc::auth_failed), why);
  now += 400ms;
  const command_id later = core.unsubscribe("b", now);
  core.expire(now);
  EXPECT_TRUE(core.take_acks().empty()) << "not before acquire_timeout";
  now = t0 + 1000ms;
  core.expire(now);
  auto acks = core.take_acks();
  ASSERT_EQ(acks.size(), 1u);
  EXPECT_EQ(acks[0].id, early);
  EXPECT_EQ(acks[0].ec, pgpipe::errc::auth_failed);
  EXPECT_NE(acks[0].diag.client_message.find("password authentication failed"), std::string::npos)
      << acks[0].diag.client_message;
  EXPECT_EQ(core.next_deadline(), t0 + 1400ms);
  // Connected in time, the other one is sent, and no deadline runs while ready.
  core.on_connect_started();
  core.on_connected();
  EXPECT_EQ(core.next_deadline(), listen_clock::time_point::max());
  core.expire(now + 1h);
  EXPECT_TRUE(core.take_acks().empty()) << "a ready connection answers for itself";
  const listen_command* c = core.next_command();
  ASSERT_NE(c, nullptr);
  EXPECT_EQ(c->id, later);
  EXPECT_TRUE(core.channels().empty()) << "the expired LISTEN subscribed nothing";
}

TEST(listener_core, with_no_connect_failed_yet_a_command_expires_with_pool_timeout) {
  fixture f;
  const command_id id = f.core.subscribe("a", f.now);
  f.core.on_connect_started();  // a connect still in progress (connect_timeout > acquire_timeout)
  f.core.expire(f.now + listener_core::settings{}.acquire_timeout);
  const auto acks = f.core.take_acks();
  ASSERT_EQ(acks.size(), 1u);
  EXPECT_EQ(acks[0].id, id);
  EXPECT_EQ(acks[0].ec, pgpipe::errc::pool_timeout);
}

TEST(listener_core, a_huge_acquire_timeout_means_no_deadline_not_an_overflowed_one) {
  listener_core::settings s = small_settings();
  s.acquire_timeout = std::chrono::milliseconds::max();
  listener_core core(s, t0);
  core.subscribe("a", t0);
  core.on_connect_started();
  core.expire(t0 + 24h);
  EXPECT_TRUE(core.take_acks().empty());
}

TEST(listener_core, a_loss_gives_every_waiting_command_acquire_timeout_again) {
  fixture f;
  f.connect();
  const command_id id = f.core.subscribe("a", f.now);
  ASSERT_NE(f.core.next_command(), nullptr);
  f.now += 1h;  // a slow server, answering nothing for an hour
  f.core.on_lost(f.now);
  EXPECT_EQ(f.core.next_deadline(), f.now + listener_core::settings{}.acquire_timeout);
  f.core.expire(f.now);
  EXPECT_TRUE(f.core.take_acks().empty());
  f.connect();
  const listen_command again = f.answer();
  EXPECT_EQ(again.id, id);
}

}  // namespace
