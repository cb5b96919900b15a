// graveyard: what the blocking pool decides under its mutex and carries out
// once the mutex is released. Closing a connection (PQfinish) does I/O, and a
// log line goes to the user's logger, which may call back into the pool
// (stats()): neither may run under the pool's lock.
#pragma once

#include <pgpipe/logger.hpp>

#include "blocking/connection/pooled_connection.hpp"
#include "core/metrics/query_metrics.hpp"
#include "core/pool/pool_core.hpp"

#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

namespace pgpipe::detail {

class graveyard {
 public:
  /// The reason of a connection the pool closed on purpose (idleness,
  /// lifetime, shutdown): logged as info; any other reason is a warning.
  static constexpr const char* closed_by_pool = "closed by the pool";

  /// Takes `conn` (null: nothing to close) to close later, with the line
  /// "disconnected (slot n, backend pid p): <why>".
  void retire(slot_id slot, std::unique_ptr<pooled_connection> conn, const char* why);
  /// Takes `conn` to close later, without a log line.
  void add(std::unique_ptr<pooled_connection> conn) { dead_.push_back(std::move(conn)); }
  /// A line to log once the lock is released.
  void note(log_level level, std::string line) { lines_.emplace_back(level, std::move(line)); }

  /// Releases `lk` (the pool's mutex, held), then closes the connections and
  /// logs the lines gathered.
  void bury(std::unique_lock<std::mutex>& lk, const query_metrics& metrics);

 private:
  std::vector<std::unique_ptr<pooled_connection>> dead_;
  std::vector<std::pair<log_level, std::string>> lines_;
};

}  // namespace pgpipe::detail
