// Validation of pool_params: one clear message naming the field and its value,
// so a misconfiguration fails at construction instead of as a hang later.
#include <pgpipe/error.hpp>
#include <pgpipe/pool_params.hpp>

#include <string>

namespace pgpipe {
namespace {

[[noreturn]] void reject(const std::string& message) {
  throw error(make_error_code(errc::bad_params), "pool_params." + message);
}

std::string ms(std::chrono::milliseconds d) { return std::to_string(d.count()) + "ms"; }

void non_negative(const char* field, std::chrono::milliseconds d) {
  if (d.count() < 0) reject(std::string(field) + " (" + ms(d) + ") must not be negative");
}

}  // namespace

void validate(const pool_params& p) {
  // The conninfo itself is never quoted: it may hold a password. An empty one
  // is valid (libpq falls back to its defaults and PG* environment variables).
  if (p.conninfo.find('\0') != std::string::npos)
    reject("conninfo contains a NUL byte (libpq would silently truncate it)");

  for (std::size_t i = 0; i < p.on_connect.size(); ++i) {
    const std::string field = "on_connect[" + std::to_string(i) + "]";
    if (p.on_connect[i].find_first_not_of(" \t\r\n") == std::string::npos) reject(field + " is empty");
    if (p.on_connect[i].find('\0') != std::string::npos) reject(field + " contains a NUL byte");
  }

  if (p.max_size == 0) reject("max_size (0) must be at least 1");
  if (p.min_size > p.max_size)
    reject("min_size (" + std::to_string(p.min_size) + ") exceeds max_size (" +
           std::to_string(p.max_size) + ")");
  if (p.pipeline_depth == 0) reject("pipeline_depth (0) must be at least 1");
  // growth_connects == 0 would never let a pool with open connections grow.
  if (p.growth_connects == 0) reject("growth_connects (0) must be at least 1");
  if (p.read_batch_max == 0) reject("read_batch_max (0) must be at least 1 (1 turns Sync coalescing off)");
  // max_queued == 0 is allowed: "never wait", every request that cannot be
  // served at once gets errc::queue_full.

  non_negative("acquire_timeout", p.acquire_timeout);  // 0: fail at once unless capacity is free
  non_negative("query_timeout", p.query_timeout);      // 0: disabled
  non_negative("max_lifetime", p.max_lifetime);        // 0: disabled
  non_negative("idle_timeout", p.idle_timeout);        // 0: disabled
  non_negative("health_check_interval", p.health_check_interval);  // 0: disabled
  non_negative("stall_timeout", p.stall_timeout);      // 0: disabled
  non_negative("growth_interval", p.growth_interval);  // 0: only growth_connects paces
  // Slower than one connect a minute, a pool of 200 would take over three
  // hours to grow: almost certainly a mistaken unit, so refuse it.
  if (p.growth_interval > std::chrono::minutes(1))
    reject("growth_interval (" + ms(p.growth_interval) + ") exceeds 60000ms");

  // A connect attempt must be bounded: while the server is down the pool keeps
  // a single attempt in flight, and an unbounded one would stall every retry.
  if (p.connect_timeout.count() <= 0)
    reject("connect_timeout (" + ms(p.connect_timeout) + ") must be positive");
  // A zero back-off would retry in a tight loop against a down server.
  if (p.connect_backoff_initial.count() <= 0)
    reject("connect_backoff_initial (" + ms(p.connect_backoff_initial) + ") must be positive");
  if (p.connect_backoff_max < p.connect_backoff_initial)
    reject("connect_backoff_initial (" + ms(p.connect_backoff_initial) +
           ") exceeds connect_backoff_max (" + ms(p.connect_backoff_max) + ")");
}

std::vector<std::string> session_statements(const pool_params& p) {
  std::vector<std::string> out = p.on_connect;
  // Last, so that no on_connect entry can turn it off again; the entries
  // themselves may still write (e.g. fill a temporary table).
  if (p.read_only_sessions) out.emplace_back("set default_transaction_read_only = on");
  return out;
}

}  // namespace pgpipe
