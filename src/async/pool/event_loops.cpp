// event_loops: see event_loops.hpp for the contract.
#include "async/pool/event_loops.hpp"

#include <boost/asio/post.hpp>
#include <boost/asio/strand.hpp>

#include <algorithm>

namespace pgpipe::detail {

namespace asio = boost::asio;
using std::chrono::duration_cast;
using std::chrono::microseconds;
using std::chrono::milliseconds;
using std::chrono::nanoseconds;

namespace {
std::int64_t steady_ns() {
  return duration_cast<nanoseconds>(std::chrono::steady_clock::now().time_since_epoch()).count();
}
}  // namespace

event_loops::event_loops(const async_client_options& options, asio::io_context* external, log_fn log)
    : options_(options), external_(external), log_(std::move(log)) {
  options_.logger = nullptr;  // the client owns the logger; we log through log_
  const std::size_t n = external_ ? 1 : std::max<std::size_t>(1, options_.loops);
  for (std::size_t i = 0; i < n; ++i) {
    auto l = std::make_unique<loop>();
    if (external_) {
      l->ex = asio::make_strand(*external_);
    } else {
      // One thread per io_context: tell Asio it need not lock internally.
      l->own = std::make_unique<asio::io_context>(1);
      l->ex = l->own->get_executor();
      l->work.emplace(l->own->get_executor());
    }
    loops_.push_back(std::move(l));
  }
  if (!external_) {
    connector_ = std::make_unique<asio::io_context>(1);
    connector_work_.emplace(connector_->get_executor());
  }
}

event_loops::~event_loops() {
  stop_watchdog();
  stop_connector();
  for (auto& l : loops_)
    if (l->thread.joinable()) l->thread.detach();
}

void event_loops::start() {
  for (std::size_t i = 0; i < loops_.size(); ++i) start_probe(i);
  if (!external_) {
    for (std::size_t i = 0; i < loops_.size(); ++i) {
      loop* l = loops_[i].get();
      l->thread = std::thread([this, l, i] { run_guarded(*l->own, "event loop " + std::to_string(i)); });
    }
    connector_thread_ = std::thread([this] { run_guarded(*connector_, "connector"); });
  }
  if (options_.blocked_loop_threshold.count() > 0) watchdog_ = std::thread([this] { watchdog_main(); });
}

void event_loops::run_guarded(asio::io_context& ctx, const std::string& name) {
  for (;;) {
    try {
      ctx.run();
      return;
    } catch (const std::exception& e) {
      // A handler threw: report it and keep the thread alive; the remaining
      // work on it must still run.
      log_(log_level::error, name + ": a handler threw: " + e.what());
    } catch (...) {
      log_(log_level::error, name + ": a handler threw a non-standard exception");
    }
  }
}

void event_loops::stop_connector() {
  if (!connector_) return;
  // Connects still running belong to connections already aborted: drop them
  // (their PGconns are finished when the io_context destroys their handlers).
  connector_work_.reset();
  connector_->stop();
  if (connector_thread_.joinable() && connector_thread_.get_id() != std::this_thread::get_id())
    connector_thread_.join();
}

void event_loops::stop_watchdog() {
  watchdog_stopping_ = true;
  {
    std::lock_guard lk(watchdog_mu_);
  }
  watchdog_cv_.notify_all();
  if (watchdog_.joinable()) watchdog_.join();
}

void event_loops::join() {
  if (external_) return;
  // First: the connector posts hand-overs to the loops.
  stop_connector();
  for (auto& l : loops_) l->work.reset();
  // Joining ourselves would deadlock: the loops finish on their own, and the
  // threads are detached when this object goes away.
  if (on_own_thread()) return;
  for (auto& l : loops_)
    if (l->thread.joinable()) l->thread.join();
  // A loop that ran out of work before another posted to it leaves those
  // handlers queued (a late completion, a lease grant): run them here rather
  // than drop them, so every operation still completes exactly once.
  for (int round = 0; round < 100; ++round) {
    std::size_t ran = 0;
    for (auto& l : loops_) {
      l->own->restart();
      ran += l->own->poll();
    }
    if (ran == 0) break;
  }
  stopped_ = true;
  stop_watchdog();
}

bool event_loops::on_own_thread() const noexcept {
  return std::any_of(loops_.begin(), loops_.end(),
                     [](auto& l) { return l->thread.get_id() == std::this_thread::get_id(); });
}

event_loops::connection_home event_loops::home_for_new_connection() {
  if (external_) return {asio::make_strand(*external_), std::nullopt};
  const std::size_t i = next_loop_.fetch_add(1, std::memory_order_relaxed) % loops_.size();
  return {loops_[i]->ex, i};
}

std::optional<std::size_t> event_loops::current_loop() const noexcept {
  if (external_) return std::nullopt;
  for (std::size_t i = 0; i < loops_.size(); ++i)
    if (loops_[i]->own->get_executor().running_in_this_thread()) return i;
  return std::nullopt;
}

asio::any_io_executor event_loops::connector_for(const asio::any_io_executor& conn_ex) const {
  return connector_ ? asio::any_io_executor(connector_->get_executor()) : conn_ex;
}

std::size_t event_loops::thread_count() const noexcept {
  return (external_ ? 0 : loops_.size() + 1) + (watchdog_.joinable() ? 1 : 0);
}

std::chrono::microseconds event_loops::lag_last() const noexcept {
  std::int64_t v = 0;
  for (auto& l : loops_) v = std::max(v, l->lag_last_us.load(std::memory_order_relaxed));
  return microseconds(v);
}

std::chrono::microseconds event_loops::lag_max() const noexcept {
  std::int64_t v = 0;
  for (auto& l : loops_) v = std::max(v, l->lag_max_us.load(std::memory_order_relaxed));
  return microseconds(v);
}

// ---- loop lag probe and blocked-loop watchdog --------------------------------------------

void event_loops::stop_probes() {
  if (probes_stopped_.exchange(true)) return;
  for (std::size_t i = 0; i < loops_.size(); ++i) {
    if (!loops_[i]->probe) continue;
    // Weak: on a caller's io_context this can run after we and the loops'
    // timers are gone.
    asio::post(loops_[i]->ex, [w = weak_from_this(), i] {
      if (auto self = w.lock(); self && self->loops_[i]->probe) self->loops_[i]->probe->cancel();
    });
  }
}

void event_loops::start_probe(std::size_t i) {
  loop* l = loops_[i].get();
  if (options_.loop_probe_interval.count() <= 0) return;
  l->probe = std::make_unique<asio::steady_timer>(l->ex);
  l->last_probe_ns = steady_ns();
  // Weak: on a caller's io_context a wait that completed is still queued
  // when the client (and we) go away; the handler must not touch us then.
  // Holding us while it runs is safe: our destructor detaches, never joins.
  struct prober {
    std::weak_ptr<event_loops> w;
    loop* l;
    void arm(const event_loops& self) const {
      l->probe->expires_after(self.options_.loop_probe_interval);
      l->probe->async_wait(*this);
    }
    void operator()(const boost::system::error_code& ec) const {
      if (ec) return;
      const auto self = w.lock();
      if (!self || self->probes_stopped_.load(std::memory_order_relaxed)) return;
      // How late the loop ran a timer that was due: a handler blocking the
      // loop shows up here.
      const auto now = std::chrono::steady_clock::now();
      const auto lag = duration_cast<microseconds>(now - l->probe->expiry()).count();
      l->lag_last_us.store(lag, std::memory_order_relaxed);
      if (lag > l->lag_max_us.load(std::memory_order_relaxed)) l->lag_max_us.store(lag, std::memory_order_relaxed);
      l->last_probe_ns.store(steady_ns(), std::memory_order_relaxed);
      arm(*self);
    }
  };
  asio::post(l->ex, [p = prober{weak_from_this(), l}] {
    if (const auto self = p.w.lock()) p.arm(*self);
  });
}

void event_loops::watchdog_main() {
  const auto threshold = options_.blocked_loop_threshold;
  const auto period = std::max(milliseconds(10), std::min(threshold / 4, milliseconds(100)));
  const auto probe_ns = duration_cast<nanoseconds>(options_.loop_probe_interval).count();
  std::unique_lock lk(watchdog_mu_);
  while (!watchdog_stopping_.load()) {
    watchdog_cv_.wait_for(lk, period, [this] { return watchdog_stopping_.load(); });
    if (watchdog_stopping_.load()) return;
    if (probes_stopped_.load()) continue;
    const auto now = steady_ns();
    for (std::size_t i = 0; i < loops_.size(); ++i) {
      auto& l = *loops_[i];
      const auto late_ns = now - l.last_probe_ns.load(std::memory_order_relaxed) - probe_ns;
      const bool blocked = late_ns > duration_cast<nanoseconds>(threshold).count();
      if (blocked && !l.blocked_reported) {
        l.blocked_reported = true;
        log_(log_level::warning, "event loop " + std::to_string(i) + " blocked for " +
                                     std::to_string(late_ns / 1'000'000) +
                                     " ms: a handler is doing blocking work on it (threshold " +
                                     std::to_string(threshold.count()) + " ms)");
      } else if (!blocked && l.blocked_reported) {
        l.blocked_reported = false;
        log_(log_level::info, "event loop " + std::to_string(i) + " is running again");
      }
    }
  }
}

}  // namespace pgpipe::detail
