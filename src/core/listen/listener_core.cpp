// listener_core: see listener_core.hpp for the contract.
//
// Policy reasons:
//  - Channels are recorded when the caller asks, not when the server
//    accepts, so a subscription made while disconnected is part of the next
//    re-LISTEN; the price is that a LISTEN the server will refuse is in that
//    re-LISTEN until its own answer forgets it.
//  - The re-LISTEN goes to the front of the queue: the gap it delivers must
//    come before anything the callers' commands could make the server send.
//  - A loss reconnects at once and a failed connect backs off: a server that
//    went away for a moment (a terminated backend) is back at the first try,
//    one that refuses is not hammered.
#include "core/listen/listener_core.hpp"

#include <algorithm>
#include <utility>

namespace pgpipe::detail {

listener_core::listener_core(settings s, listen_clock::time_point now) : settings_(s), connect_at_(now) {}

command_id listener_core::subscribe(std::string_view channel) {
  return queue_command(listen_command::kind::listen, channel);
}

command_id listener_core::unsubscribe(std::string_view channel) {
  return queue_command(listen_command::kind::unlisten, channel);
}

command_id listener_core::queue_command(listen_command::kind what, std::string_view channel) {
  const command_id id = next_id_++;
  listen_command c;
  c.what = what;
  c.channels.emplace_back(channel);
  c.sql = (what == listen_command::kind::listen ? "LISTEN " : "UNLISTEN ") + quote_identifier(channel);
  c.id = id;
  if (closed()) {
    diagnostics d;
    d.client_message = "the listener is closed: " + c.sql + " was not sent";
    acks_.push_back({id, make_error_code(errc::closed), std::move(d)});
    return id;
  }
  if (what == listen_command::kind::listen) {
    channels_.emplace(channel);
  } else {
    channels_.erase(std::string(channel));
  }
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

void listener_core::on_connect_failed(listen_clock::time_point now) noexcept {
  if (closed()) return;
  back_off(now);
}

void listener_core::on_lost(listen_clock::time_point now) noexcept {
  if (closed()) return;
  in_flight_ = false;
  gap_pending_ = true;
  connect_at_ = now;
  phase_ = listener_phase::waiting;
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
  if (ec && c.what == listen_command::kind::listen) channels_.erase(c.channels.front());
  if (c.id != 0) acks_.push_back({c.id, ec, std::move(diag)});
  if (c.what != listen_command::kind::relisten) return after_command::carry_on;
  if (ec) {
    // Delivering the gap now would claim the channels are listened again
    // when the server refused: connect again after the back-off, gap pending.
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
