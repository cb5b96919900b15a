#include "support/cluster_fixture.hpp"

#include <gtest/gtest.h>

#include <mutex>

namespace pgpipe::test {
namespace {

struct shared_holder {
  std::mutex mutex;
  std::unique_ptr<devcluster::cluster> cluster;
};

shared_holder& holder() {
  // Leaked on purpose: the Environment below and static destruction both
  // touch it, in an order we do not control.
  static auto* h = new shared_holder;
  return *h;
}

void drop_shared() {
  auto& h = holder();
  std::lock_guard lock(h.mutex);
  h.cluster.reset();
}

// Stops the shared cluster after the last test, while GoogleTest still
// reports; the atexit hook covers binaries that never reach TearDown.
class shared_cluster_environment : public ::testing::Environment {
 public:
  void TearDown() override { drop_shared(); }
};

[[maybe_unused]] const bool registered = [] {
  ::testing::AddGlobalTestEnvironment(new shared_cluster_environment);
  std::atexit(drop_shared);
  return true;
}();

}  // namespace

devcluster::cluster& shared_cluster() {
  auto& h = holder();
  std::lock_guard lock(h.mutex);
  if (!h.cluster) {
    devcluster::cluster_params params;
    params.max_connections = 200;
    h.cluster = std::make_unique<devcluster::cluster>(std::move(params));
  }
  return *h.cluster;
}

std::unique_ptr<devcluster::cluster> fresh_cluster(devcluster::cluster_params params) {
  return std::make_unique<devcluster::cluster>(std::move(params));
}

std::string with_options(const std::string& conninfo, const std::string& options) {
  return options.empty() ? conninfo : conninfo + " " + options;
}

}  // namespace pgpipe::test
