// graveyard: see graveyard.hpp.
#include "blocking/pool/graveyard.hpp"

#include <string_view>

namespace pgpipe::detail {

void graveyard::retire(slot_id slot, std::unique_ptr<pooled_connection> conn, const char* why) {
  if (conn) {
    note(std::string_view(why) == closed_by_pool ? log_level::info : log_level::warning,
         "disconnected (slot " + std::to_string(slot) + ", backend pid " + std::to_string(conn->backend_pid()) +
             "): " + why);
  }
  add(std::move(conn));
}

void graveyard::bury(std::unique_lock<std::mutex>& lk, const query_metrics& metrics) {
  std::vector<std::unique_ptr<pooled_connection>> dead;
  dead.swap(dead_);
  std::vector<std::pair<log_level, std::string>> lines;
  lines.swap(lines_);
  lk.unlock();
  dead.clear();
  for (const auto& [level, line] : lines) metrics.log(level, line);
}

}  // namespace pgpipe::detail
