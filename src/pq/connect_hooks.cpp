// connect_hooks: see connect_hooks.hpp.
#include "pq/connect_hooks.hpp"

#include "pq/libpq_failure.hpp"

#include <libpq-fe.h>

#include <poll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <exception>
#include <memory>
#include <mutex>
#include <numeric>
#include <optional>
#include <string_view>
#include <system_error>
#include <thread>

namespace pgpipe::detail {

namespace {

std::vector<std::string> split_commas(std::string_view s) {
  std::vector<std::string> out;
  std::size_t from = 0;
  for (;;) {
    const std::size_t comma = s.find(',', from);
    out.emplace_back(s.substr(from, comma == std::string_view::npos ? std::string_view::npos : comma - from));
    if (comma == std::string_view::npos) return out;
    from = comma + 1;
  }
}

std::string join_commas(const std::vector<std::string>& parts, const std::vector<std::size_t>& order) {
  std::string out;
  for (std::size_t k = 0; k < order.size(); ++k) {
    if (k > 0) out += ',';
    out += parts[order[k]];
  }
  return out;
}

// A value as libpq's key=value syntax reads it back: single-quoted, with
// backslash and quote escaped.
void append_quoted(std::string& out, std::string_view v) {
  out += '\'';
  for (char c : v) {
    if (c == '\'' || c == '\\') out += '\\';
    out += c;
  }
  out += '\'';
}

struct options_deleter {
  void operator()(PQconninfoOption* o) const noexcept { PQconninfoFree(o); }
};

}  // namespace

connect_hooks connect_hooks_of(const pool_params& params) {
  return {params.before_connect, params.load_balance_hosts};
}

std::string with_hosts_shuffled(const std::string& conninfo, std::mt19937_64& rng) {
  std::unique_ptr<PQconninfoOption, options_deleter> opts(PQconninfoParse(conninfo.c_str(), nullptr));
  if (!opts) return conninfo;
  std::vector<std::string> host, hostaddr, port;
  for (PQconninfoOption* o = opts.get(); o->keyword != nullptr; ++o) {
    if (o->val == nullptr) continue;
    const std::string_view k = o->keyword;
    if (k == "host") host = split_commas(o->val);
    if (k == "hostaddr") hostaddr = split_commas(o->val);
    if (k == "port") port = split_commas(o->val);
  }
  const std::size_t n = std::max(host.size(), hostaddr.size());
  if (n <= 1) return conninfo;
  // libpq's rule: each list has one entry per host, or (port) one for all.
  if ((!host.empty() && host.size() != n) || (!hostaddr.empty() && hostaddr.size() != n) ||
      (port.size() > 1 && port.size() != n))
    return conninfo;
  std::vector<std::size_t> order(n);
  std::iota(order.begin(), order.end(), std::size_t{0});
  std::shuffle(order.begin(), order.end(), rng);
  std::string out;
  for (PQconninfoOption* o = opts.get(); o->keyword != nullptr; ++o) {
    if (o->val == nullptr) continue;
    const std::string_view k = o->keyword;
    std::string value = o->val;
    if (k == "host" && host.size() == n) value = join_commas(host, order);
    if (k == "hostaddr" && hostaddr.size() == n) value = join_commas(hostaddr, order);
    if (k == "port" && port.size() == n) value = join_commas(port, order);
    if (!out.empty()) out += ' ';
    out += k;
    out += '=';
    append_quoted(out, value);
  }
  return out;
}

connect_target prepare_connect(const connect_hooks& hooks, const std::string& conninfo,
                               const std::vector<std::string>& secrets) {
  connect_target t{conninfo, secrets, {}, {}};
  if (hooks.before_connect) {
    try {
      t.conninfo = hooks.before_connect(conninfo);
    } catch (const std::exception& e) {
      t.ec = make_error_code(errc::connect_failed);
      t.error_message = clean_message(std::string("pool_params::before_connect failed: ") + e.what(), secrets);
      return t;
    } catch (...) {
      t.ec = make_error_code(errc::connect_failed);
      t.error_message = "pool_params::before_connect failed (a non-standard exception)";
      return t;
    }
    for (std::string& s : passwords_of(t.conninfo)) t.secrets.push_back(std::move(s));
  }
  if (hooks.load_balance_hosts == load_balance::random) {
    thread_local std::mt19937_64 rng{std::random_device{}()};
    t.conninfo = with_hosts_shuffled(t.conninfo, rng);
  }
  return t;
}

void prepare_connect_off_thread(connect_hooks hooks, std::string conninfo, std::vector<std::string> secrets,
                                std::function<void(connect_target)> done) {
  auto call = std::make_shared<std::function<void(connect_target)>>(std::move(done));
  try {
    std::thread([hooks = std::move(hooks), conninfo = std::move(conninfo), secrets = std::move(secrets), call] {
      (*call)(prepare_connect(hooks, conninfo, secrets));
    }).detach();
  } catch (const std::system_error& e) {
    connect_target t;
    t.ec = make_error_code(errc::connect_failed);
    t.error_message = std::string("could not start a thread for pool_params::before_connect: ") + e.what();
    (*call)(std::move(t));
  }
}

std::string before_connect_timeout_text(std::chrono::milliseconds timeout) {
  return "pool_params::before_connect did not return within connect_timeout (" + std::to_string(timeout.count()) +
         " ms)";
}

namespace {

connect_target failed_target(std::string why) {
  connect_target t;
  t.ec = make_error_code(errc::connect_failed);
  t.error_message = std::move(why);
  return t;
}

// The callback thread's outcome, and an eventfd it signals when it is there
// (an eventfd: a waiter that gave up leaves no pipe to break).
struct hook_outcome {
  std::mutex m;
  std::optional<connect_target> target;
  int ready_fd = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  hook_outcome() = default;
  hook_outcome(const hook_outcome&) = delete;
  hook_outcome& operator=(const hook_outcome&) = delete;
  ~hook_outcome() {
    if (ready_fd >= 0) ::close(ready_fd);
  }
};

}  // namespace

connect_target prepare_connect_within(const connect_hooks& hooks, const std::string& conninfo,
                                      const std::vector<std::string>& secrets, std::chrono::milliseconds timeout,
                                      int wake_fd) {
  // Without a callback nothing here can block.
  if (!hooks.before_connect) return prepare_connect(hooks, conninfo, secrets);
  auto out = std::make_shared<hook_outcome>();
  if (out->ready_fd < 0) return failed_target("could not wait for pool_params::before_connect (eventfd failed)");
  prepare_connect_off_thread(hooks, conninfo, secrets, [out](connect_target t) {
    {
      std::lock_guard lk(out->m);
      out->target = std::move(t);
    }
    const std::uint64_t one = 1;
    (void)!::write(out->ready_fd, &one, sizeof one);
  });
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    {
      std::lock_guard lk(out->m);
      if (out->target) return std::move(*out->target);
    }
    const auto left = std::chrono::ceil<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) return failed_target(before_connect_timeout_text(timeout));
    pollfd fds[2] = {{out->ready_fd, POLLIN, 0}, {wake_fd, POLLIN, 0}};
    const int wait_ms = left.count() > 60'000 ? 60'000 : static_cast<int>(left.count());
    const int n = ::poll(fds, wake_fd >= 0 ? 2 : 1, wait_ms);
    if (n < 0 && errno != EINTR) return failed_target("could not wait for pool_params::before_connect (poll failed)");
    if (n > 0 && wake_fd >= 0 && (fds[1].revents & POLLIN) != 0) return failed_target("stopped");
  }
}

}  // namespace pgpipe::detail
