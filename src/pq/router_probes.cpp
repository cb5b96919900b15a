// router_probes: see router_probes.hpp.
#include "pq/router_probes.hpp"

#include <sys/eventfd.h>
#include <unistd.h>

#include <charconv>
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <system_error>

namespace pgpipe::detail {

namespace {

std::optional<std::uint64_t> lsn_of(const std::string& text) {
  std::uint64_t v = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc{} || end != text.data() + text.size()) return std::nullopt;
  return v;
}

}  // namespace

router_probes::router_probes(const pool_params& primary, const std::vector<pool_params>& replicas,
                             const read_routing_params& params, std::mutex& mu, replica_tracker& tracker)
    : timeout_(params.probe_timeout), mu_(mu), tracker_(tracker) {
  wake_fd_ = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (wake_fd_ < 0) throw std::system_error(errno, std::generic_category(), "router probes: eventfd");
  primary_ = std::make_unique<probe_session>(primary.conninfo, connect_hooks_of(primary), wake_fd_);
  for (const auto& r : replicas)
    replicas_.push_back(std::make_unique<probe_session>(r.conninfo, connect_hooks_of(r), wake_fd_));
  threads_.push_back(std::make_unique<probe_scheduler>(params.probe_interval, [this] { probe_primary(); }));
  for (std::size_t i = 0; i < replicas_.size(); ++i)
    threads_.push_back(std::make_unique<probe_scheduler>(params.probe_interval, [this, i] { probe_replica(i); }));
}

router_probes::~router_probes() {
  stop();
  if (wake_fd_ >= 0) ::close(wake_fd_);
}

void router_probes::stop() {
  const std::uint64_t one = 1;
  // Level-triggered and never read: every wait, now or later, ends at once.
  // Should the write fail, each probe in progress still ends at its timeout.
  if (wake_fd_ >= 0 && ::write(wake_fd_, &one, sizeof one) < 0) {
  }
  for (auto& t : threads_) t->stop();
}

void router_probes::probe_primary() {
  const auto sent = replica_tracker::clock::now();
  const auto row = primary_->run(primary_probe_sql, sent + timeout_);
  std::optional<std::uint64_t> lsn;
  if (row && row->size() == 1) lsn = lsn_of((*row)[0]);
  std::lock_guard lk(mu_);
  if (lsn) {
    tracker_.primary_probed(sent, *lsn);
  } else {
    tracker_.primary_probe_failed();
  }
}

void router_probes::probe_replica(std::size_t i) {
  const auto sent = replica_tracker::clock::now();
  const auto row = replicas_[i]->run(replica_probe_sql, sent + timeout_);
  std::optional<std::uint64_t> lsn;
  bool in_recovery = false;
  if (row && row->size() == 2 && ((*row)[0] == "t" || (*row)[0] == "f")) {
    in_recovery = (*row)[0] == "t";
    lsn = lsn_of((*row)[1]);
  }
  const auto now = replica_tracker::clock::now();
  std::lock_guard lk(mu_);
  if (lsn) {
    tracker_.replica_probed(i, sent, now, in_recovery, *lsn);
  } else {
    tracker_.replica_probe_failed(i);
  }
}

}  // namespace pgpipe::detail
