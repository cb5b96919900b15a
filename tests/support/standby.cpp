#include "support/standby.hpp"

#include "support/wait.hpp"

#include <stdexcept>

namespace pgpipe::test {

standby_instance::standby_instance(devcluster::cluster& primary, devcluster::cluster_params params)
    : primary_(primary) {
  params.standby_of = &primary;
  standby_ = std::make_unique<devcluster::cluster>(std::move(params));
}

standby_instance::~standby_instance() = default;

void standby_instance::wait_for_replay(std::chrono::milliseconds timeout) const {
  const std::string target = primary_.query_value("SELECT pg_current_wal_lsn()::text");
  // Replay progress has no notification a client can wait on.
  const bool caught_up = wait_until(
      [&] {
        return standby_->query_value("SELECT pg_last_wal_replay_lsn() >= '" + target + "'::pg_lsn") == "t";
      },
      timeout);
  if (!caught_up) throw std::runtime_error("standby did not replay up to " + target + " in time");
}

void standby_instance::wait_for_streaming(std::chrono::milliseconds timeout) const {
  const bool streaming = wait_until(
      [&] { return standby_->query_value("SELECT status FROM pg_stat_wal_receiver") == "streaming"; }, timeout);
  if (!streaming) throw std::runtime_error("standby is not streaming from its primary");
}

}  // namespace pgpipe::test
