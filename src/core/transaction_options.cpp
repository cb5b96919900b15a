// The retry rule and BEGIN text both transaction helpers share.
//
// Why only 40001 and 40P01: they are the errors PostgreSQL documents as
// "retry the whole transaction" (chapter 13.4). A unique violation, a lost
// connection (which may have committed) or a timeout are not made better by
// trying again blindly, so they reach the caller as they are.
//
// Why full jitter: with N transactions colliding on one row, a fixed or
// merely exponential delay makes them collide again together; a random
// delay below the exponential cap spreads them (the AWS architecture
// blog's "Exponential Backoff And Jitter" compares the variants).
#include <pgpipe/error.hpp>
#include <pgpipe/transaction_options.hpp>

#include <algorithm>
#include <random>

namespace pgpipe {

std::string transaction_modes(const transaction_options& opts) {
  std::string out;
  auto add = [&out](const char* m) {
    if (!out.empty()) out += ", ";
    out += m;
  };
  switch (opts.isolation) {
    case isolation_level::server_default: break;
    case isolation_level::read_committed: add("ISOLATION LEVEL READ COMMITTED"); break;
    case isolation_level::repeatable_read: add("ISOLATION LEVEL REPEATABLE READ"); break;
    case isolation_level::serializable: add("ISOLATION LEVEL SERIALIZABLE"); break;
  }
  if (opts.read_only) add("READ ONLY");
  if (opts.deferrable) add("DEFERRABLE");
  return out;
}

std::string begin_statement(const transaction_options& opts) {
  std::string modes = transaction_modes(opts);
  return modes.empty() ? std::string("BEGIN") : "BEGIN " + modes;
}

bool is_retryable_transaction_error(const std::error_code& ec) noexcept {
  return ec == make_sqlstate("40001") || ec == make_sqlstate("40P01");
}

std::chrono::microseconds retry_backoff(const retry_policy& policy, unsigned next_attempt,
                                        std::uint64_t random) noexcept {
  using std::chrono::microseconds;
  const auto cap = std::chrono::duration_cast<microseconds>(policy.max_backoff).count();
  auto ceiling = std::chrono::duration_cast<microseconds>(policy.initial_backoff).count();
  for (unsigned n = 2; n < next_attempt && ceiling < cap; ++n) ceiling *= 2;
  ceiling = std::min(ceiling, cap);
  if (ceiling <= 0) return microseconds{0};
  return microseconds{static_cast<long long>(random % (static_cast<std::uint64_t>(ceiling) + 1))};
}

namespace detail {
std::uint64_t retry_jitter_bits() noexcept {
  thread_local std::mt19937_64 rng{std::random_device{}()};
  return rng();
}
}  // namespace detail

}  // namespace pgpipe
