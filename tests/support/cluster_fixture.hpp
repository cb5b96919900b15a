// GoogleTest helpers around devcluster for integration tests.
//
//   #include "support/cluster_fixture.hpp"
//   TEST(my_feature, works) {
//     auto& pg = pgpipe::test::shared_cluster();   // one per test binary
//     PGconn* c = PQconnectdb(pg.conninfo().c_str());
//   }
//
// The shared cluster is started on first use and stopped after the last test
// (a GoogleTest Environment), or at exit if GoogleTest is not running. Tests
// that stop, restart or reconfigure a server should use fresh_cluster() so
// they do not disturb tests sharing the shared one.
#pragma once

#include "devcluster/devcluster.hpp"

#include <memory>
#include <string>

namespace pgpipe::test {

/// The process-wide cluster (default cluster_params, max_connections 200),
/// started lazily. Thread-safe. Throws std::runtime_error when it cannot be
/// started (the message carries the tail of the server log).
devcluster::cluster& shared_cluster();

/// A new cluster owned by the caller; stopped and removed by its destructor,
/// even when the test fails.
std::unique_ptr<devcluster::cluster> fresh_cluster(devcluster::cluster_params params = {});

/// The superuser conninfo of `c` with extra `key=value` pairs appended, e.g.
/// with_options(pg.conninfo(), "application_name=x connect_timeout=5").
std::string with_options(const std::string& conninfo, const std::string& options);

}  // namespace pgpipe::test
