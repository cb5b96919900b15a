// A reference model of listener_core (listener_core_model_test.cpp): the
// contract of listener.hpp / blocking_listener.hpp written as plainly as
// possible, with no concern for speed. The back-off is computed from the
// count of failed connects in a row rather than doubled in place, the gap is
// a flag set by a loss and spent by an accepted re-LISTEN, the command
// queue is a list of what the server will be asked, in order, and the
// channels are what the server accepted and no caller has given up since.
#pragma once

#include "core/listen/listener_core.hpp"

#include <pgpipe/error.hpp>

#include <algorithm>
#include <chrono>
#include <deque>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace pgpipe::test::listen_model {

using detail::command_id;
using detail::listen_clock;
using detail::listen_command;
using detail::listener_phase;

/// What the model expects a caller to be told.
struct expected_ack {
  enum class verdict { accepted, refused, closed, expired };
  command_id id = 0;
  verdict what = verdict::accepted;
  std::error_code ec;  ///< for expired: the last connect error, else errc::pool_timeout
};

struct expected_command {
  listen_command::kind what = listen_command::kind::listen;
  std::vector<std::string> channels;
  command_id id = 0;
  listen_clock::time_point deadline{};
};

class model {
 public:
  model(std::chrono::milliseconds initial, std::chrono::milliseconds max, std::size_t max_buffered,
        std::chrono::milliseconds acquire_timeout, listen_clock::time_point now)
      : initial_(initial), max_(max), max_buffered_(max_buffered), acquire_timeout_(acquire_timeout),
        connect_at_(now) {}

  command_id subscribe(const std::string& channel, listen_clock::time_point now) {
    return ask(listen_command::kind::listen, channel, now);
  }
  command_id unsubscribe(const std::string& channel, listen_clock::time_point now) {
    return ask(listen_command::kind::unlisten, channel, now);
  }

  void close() {
    if (phase_ == listener_phase::closed) return;
    phase_ = listener_phase::closed;
    for (const auto& c : queue_)
      if (c.id != 0) acks_.push_back({c.id, expected_ack::verdict::closed, {}});
    queue_.clear();
    sent_ = false;
    buffer_.clear();
  }

  void connect_started() {
    if (phase_ == listener_phase::waiting) phase_ = listener_phase::connecting;
  }
  void connected() {
    if (phase_ != listener_phase::connecting) return;
    phase_ = listener_phase::ready;
    failures_in_a_row_ = 0;
    last_error_ = {};
    if (was_ready_ && !channels_.empty()) {
      queue_.push_front({listen_command::kind::relisten, {channels_.begin(), channels_.end()}, 0, {}});
    } else {
      gap_owed_ = false;
    }
    was_ready_ = true;
  }
  void connect_failed(listen_clock::time_point now, std::error_code why) {
    if (phase_ == listener_phase::closed) return;
    last_error_ = why;
    ++failures_in_a_row_;
    auto wait = initial_;
    for (int i = 1; i < failures_in_a_row_ && wait < max_; ++i) wait *= 2;
    connect_at_ = now + std::min(wait, max_);
    phase_ = listener_phase::waiting;
    sent_ = false;
  }
  void lost(listen_clock::time_point now) {
    if (phase_ == listener_phase::closed) return;
    phase_ = listener_phase::waiting;
    connect_at_ = now;
    gap_owed_ = true;
    sent_ = false;
    for (auto& c : queue_) c.deadline = now + acquire_timeout_;
  }

  listen_clock::time_point next_deadline() const {
    auto at = listen_clock::time_point::max();
    if (phase_ == listener_phase::ready || phase_ == listener_phase::closed) return at;
    for (const auto& c : queue_)
      if (c.id != 0) at = std::min(at, c.deadline);
    return at;
  }

  /// A caller's command that waited acquire_timeout with no connection ready.
  void expire(listen_clock::time_point now) {
    if (phase_ == listener_phase::ready || phase_ == listener_phase::closed) return;
    std::deque<expected_command> kept;
    for (const auto& c : queue_) {
      if (c.id != 0 && c.deadline <= now) {
        acks_.push_back({c.id, expected_ack::verdict::expired,
                         last_error_ ? last_error_ : make_error_code(errc::pool_timeout)});
      } else {
        kept.push_back(c);
      }
    }
    queue_.swap(kept);
  }

  /// The command the core must send now, if any (then in flight).
  std::optional<expected_command> next() {
    if (phase_ != listener_phase::ready || sent_ || queue_.empty()) return std::nullopt;
    sent_ = true;
    return queue_.front();
  }

  /// The server answered the command in flight. Returns whether the core
  /// must reconnect; `gap_queued` says whether the gap was queued now.
  bool answered(listen_clock::time_point now, bool accepted, bool& gap_queued) {
    gap_queued = false;
    if (!sent_) return false;
    sent_ = false;
    const expected_command c = queue_.front();
    queue_.pop_front();
    if (c.what == listen_command::kind::listen && accepted) channels_.insert(c.channels.front());
    if (c.what == listen_command::kind::unlisten) channels_.erase(c.channels.front());
    if (c.id != 0)
      acks_.push_back({c.id, accepted ? expected_ack::verdict::accepted : expected_ack::verdict::refused, {}});
    if (c.what != listen_command::kind::relisten) return false;
    if (!accepted) {
      connect_failed(now, make_sqlstate("42601"));
      return true;
    }
    if (gap_owed_) {
      gap_owed_ = false;
      gap_queued = true;
      notification gap;
      gap.gap = true;
      buffer_.push_back(gap);
    }
    return false;
  }

  void notified(const notification& n) {
    if (phase_ != listener_phase::closed) buffer_.push_back(n);
  }
  std::optional<notification> pop() {
    if (buffer_.empty()) return std::nullopt;
    notification n = buffer_.front();
    buffer_.pop_front();
    return n;
  }

  std::vector<expected_ack> take_acks() {
    std::vector<expected_ack> out;
    out.swap(acks_);
    return out;
  }

  listener_phase phase() const { return phase_; }
  listen_clock::time_point connect_at() const { return connect_at_; }
  bool in_flight() const { return sent_; }
  bool gap_owed() const { return gap_owed_; }
  std::size_t buffered() const { return buffer_.size(); }
  bool reads() const { return buffer_.size() < max_buffered_ || sent_; }
  bool idle() const { return queue_.empty(); }
  const std::set<std::string>& channels() const { return channels_; }

 private:
  command_id ask(listen_command::kind what, const std::string& channel, listen_clock::time_point now) {
    const command_id id = next_id_++;
    if (phase_ == listener_phase::closed) {
      acks_.push_back({id, expected_ack::verdict::closed, {}});
      return id;
    }
    if (what == listen_command::kind::unlisten) channels_.erase(channel);
    queue_.push_back({what, {channel}, id, now + acquire_timeout_});
    return id;
  }

  const std::chrono::milliseconds initial_;
  const std::chrono::milliseconds max_;
  const std::size_t max_buffered_;
  const std::chrono::milliseconds acquire_timeout_;
  listener_phase phase_ = listener_phase::waiting;
  listen_clock::time_point connect_at_;
  int failures_in_a_row_ = 0;
  std::error_code last_error_;
  bool was_ready_ = false;
  bool gap_owed_ = false;
  bool sent_ = false;
  command_id next_id_ = 1;
  std::set<std::string> channels_;
  std::deque<expected_command> queue_;
  std::vector<expected_ack> acks_;
  std::deque<notification> buffer_;
};

}  // namespace pgpipe::test::listen_model
