// listener_core: see listener_core.hpp for the contract.
//
// Policy reasons:
//  - A channel is recorded when the server accepts it, not when the caller
//    asks: the re-LISTEN is one implicit transaction, so a single name the
//    server refuses in it would refuse every channel on every reconnect. A
//    LISTEN asked while disconnected runs after the re-LISTEN as its own
//    command, where a refusal is that caller's answer alone.
//  - An UNLISTEN forgets its channel when asked: the caller no longer wants
//    it, and a re-LISTEN made before its UNLISTEN runs would only listen to
//    it again for a moment.
//  - A caller's command waits for a connection at most acquire_timeout, as
//    a query waits for the pool: the listener's connect error is the
//    caller's answer, and a listener that cannot connect (a wrong password,
//    a server gone for good) does not hold its callers forever.
//  - The re-LISTEN goes to the front of the queue: the gap it delivers must
//    come before anything the callers' commands could make the server send.
//  - A loss reconnects at once and a failed connect backs off: a server that
//    went away for a moment (a terminated backend) is back at the first try,
//    one that refuses is not hammered.
#include "core/listen/listener_core.hpp"

#include "core/sql/sql_text.hpp"

#include <algorithm>
#include <utility>

namespace pgpipe::detail {

namespace {

// `now` + `d`, saturated: a huge acquire_timeout means "no deadline", not an
// overflowed time point in the past.
listen_clock::time_point after(listen_clock::time_point now, std::chrono::milliseconds d) noexcept {
  const auto room = std::chrono::duration_cast<std::chrono::milliseconds>(listen_clock::time_point::max() - now);
  return d >= room ? listen_clock::time_point::max() : now + d;
}

}  // namespace

listener_core::listener_core(settings s, listen_clock::time_point now) : settings_(s), connect_at_(now) {}

command_id listener_core::subscribe(std::string_view channel, listen_clock::time_point now) {
  return queue_command(listen_command::kind::listen, channel, now);
}

command_id listener_core::unsubscribe(std::string_view channel, listen_clock::time_point now) {
  return queue_command(listen_command::kind::unlisten, channel, now);
}

command_id listener_core::queue_command(listen_command::kind what, std::string_view channel,
                                        listen_clock::time_point now) {
  const command_id id = next_id_++;
  listen_command c;
  c.what = what;
  c.channels.emplace_back(channel);
  c.sql = (what == listen_command::kind::listen ? "LISTEN " : "UNLISTEN ") + quote_identifier(channel);
  c.id = id;
  c.deadline = after(now, settings_.acquire_timeout);
  if (std::string why = nul_byte_refusal(channel, "the channel name"); !why.empty()) {
    // quote_identifier keeps the byte, and libpq would cut the LISTEN there.
    diagnostics d;
    d.client_message = std::move(why);
    acks_.push_back({id, make_error_code(errc::invalid_argument), std::move(d)});
    return id;
  }
  if (closed()) {
    diagnostics d;
    d.client_message = "the listener is closed: " + c.sql + " was not sent";
    acks_.push_back({id, make_error_code(errc::closed), std::move(d)});
    return id;
  }
  if (what == listen_command::kind::unlisten) channels_.erase(std::string(channel));
  commands_.push_back(std::move(c));
  return id;
}

void listener_core::close() {
  if (closed()) return;
  phase_ = listener_phase::closed;
  for (auto& c : commands_) {
    if (c.id == 0) continue;
    diagnostics d;
    d.client_message = "the listener was closed before " + c.sql + " was acknowledged";
    acks_.push_back({c.id, make_error_code(errc::closed), std::move(d)});
  }
  commands_.clear();
  in_flight_ = false;
  buffer_.clear();
}

std::vector<listen_ack> listener_core::take_acks() { return std::exchange(acks_, {}); }

void listener_core::on_connect_started() noexcept {
  if (phase_ == listener_phase::waiting) phase_ = listener_phase::connecting;
}

void listener_core::on_connected() {
  if (phase_ != listener_phase::connecting) return;
  phase_ = listener_phase::ready;
  backoff_ = std::chrono::milliseconds{0};
  last_connect_error_ = {};
  last_connect_diag_ = {};
  if (ever_ready_ && !channels_.empty()) {
    listen_command c;
    c.what = listen_command::kind::relisten;
    c.channels.assign(channels_.begin(), channels_.end());
    c.sql = relisten_sql(channels_);
    commands_.push_front(std::move(c));
  } else {
    // Nothing subscribed: nothing could have been missed.
    gap_pending_ = false;
  }
  ever_ready_ = true;
}

void listener_core::back_off(listen_clock::time_point now) noexcept {
  backoff_ = backoff_.count() == 0 ? settings_.backoff_initial : std::min(backoff_ * 2, settings_.backoff_max);
  connect_at_ = now + backoff_;
  phase_ = listener_phase::waiting;
  in_flight_ = false;
}

void listener_core::on_connect_failed(listen_clock::time_point now, std::error_code ec, diagnostics diag) {
  if (closed()) return;
  if (ec) {
    last_connect_error_ = ec;
    last_connect_diag_ = std::move(diag);
  }
  back_off(now);
}

void listener_core::on_lost(listen_clock::time_point now) noexcept {
  if (closed()) return;
  in_flight_ = false;
  gap_pending_ = true;
  connect_at_ = now;
  phase_ = listener_phase::waiting;
  for (auto& c : commands_) c.deadline = after(now, settings_.acquire_timeout);
}

void listener_core::expire(listen_clock::time_point now) {
  if (phase_ == listener_phase::ready || closed()) return;
  for (auto it = commands_.begin(); it != commands_.end();) {
    if (it->id == 0 || it->deadline > now) {
      ++it;
      continue;
    }
    diagnostics d = last_connect_diag_;
    std::error_code ec = last_connect_error_;
    const std::string why = "no connection within acquire_timeout (" +
                            std::to_string(settings_.acquire_timeout.count()) + " ms): " + it->sql + " was not sent";
    if (!ec) {
      ec = make_error_code(errc::pool_timeout);
      d.client_message = why;
    } else {
      d.client_message = why + (d.client_message.empty() ? std::string() : "; the last connect failed: " +
                                                                               d.client_message);
    }
    acks_.push_back({it->id, ec, std::move(d)});
    it = commands_.erase(it);
  }
}

listen_clock::time_point listener_core::next_deadline() const noexcept {
  auto at = listen_clock::time_point::max();
  if (phase_ == listener_phase::ready || closed()) return at;
  for (const auto& c : commands_)
    if (c.id != 0) at = std::min(at, c.deadline);
  return at;
}

const listen_command* listener_core::next_command() noexcept {
  if (phase_ != listener_phase::ready || in_flight_ || commands_.empty()) return nullptr;
  in_flight_ = true;
  return &commands_.front();
}

after_command listener_core::on_command_done(listen_clock::time_point now, std::error_code ec, diagnostics diag) {
  if (!in_flight_ || commands_.empty()) return after_command::carry_on;
  in_flight_ = false;
  listen_command c = std::move(commands_.front());
  commands_.pop_front();
  if (c.what == listen_command::kind::listen && !ec) channels_.insert(c.channels.front());
  // Also after an accepted LISTEN of the channel that was queued before it.
  if (c.what == listen_command::kind::unlisten) channels_.erase(c.channels.front());
  if (c.id != 0) acks_.push_back({c.id, ec, std::move(diag)});
  if (c.what != listen_command::kind::relisten) return after_command::carry_on;
  if (ec) {
    // Delivering the gap now would claim the channels are listened again
    // when the server refused: connect again after the back-off, gap pending.
    last_connect_error_ = ec;
    last_connect_diag_ = std::move(diag);  // a re-LISTEN has no caller: not handed on above
    back_off(now);
    return after_command::reconnect;
  }
  if (gap_pending_) {
    gap_pending_ = false;
    notification gap;
    gap.gap = true;
    buffer_.push_back(std::move(gap));
  }
  return after_command::carry_on;
}

void listener_core::on_notification(notification n) {
  if (closed()) return;
  buffer_.push_back(std::move(n));
}

notification listener_core::pop() {
  notification n = std::move(buffer_.front());
  buffer_.pop_front();
  return n;
}

std::string relisten_sql(const std::set<std::string>& channels) {
  std::string sql;
  for (const auto& c : channels) sql += "LISTEN " + quote_identifier(c) + ";";
  return sql;
}

}  // namespace pgpipe::detail
