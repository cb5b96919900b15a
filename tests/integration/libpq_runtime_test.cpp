// What both drivers say about the libpq they run on: stats() names the
// libpq loaded at run time and the server's version, and a libpq older
// than 14 (no pipeline mode) is refused when the pool is created, with a
// message naming it, instead of a loader error at the first query. CI runs
// this binary on Debian's libpq 15, on the server package's libpq 18 and on
// PostgreSQL 13's libpq (.ci/compat), so both branches of the last test run.
#include "support/cluster_fixture.hpp"
#include "support/driver_adapter.hpp"
#include "support/kit.hpp"

#include <gtest/gtest.h>
#include <libpq-fe.h>

#include <string>

namespace {

using namespace pgpipe::test;

template <class D>
class libpq_runtime : public ::testing::Test {};
TYPED_TEST_SUITE(libpq_runtime, drivers, driver_names);

TYPED_TEST(libpq_runtime, stats_name_the_libpq_in_use_and_the_servers_version) {
  if (PQlibVersion() < 140000) GTEST_SKIP() << "libpq " << PQlibVersion() << ": no pool starts on it (next test)";
  auto& pg = shared_cluster();
  TypeParam d(params_for(pg.conninfo(), 1));
  EXPECT_EQ(d.stats().runtime.libpq_version, PQlibVersion());
  const outcome o = d.run("select current_setting('server_version_num')");
  ASSERT_FALSE(o.ec) << o.text;
  const pgpipe::runtime_info info = d.stats().runtime;
  EXPECT_EQ(info.libpq_version, PQlibVersion());
  EXPECT_EQ(std::to_string(info.server_version), o.first);
  EXPECT_EQ(info.server_version / 10000, pgpipe::devcluster::cluster::server_major());
}

TYPED_TEST(libpq_runtime, a_libpq_older_than_14_is_refused_when_the_pool_is_created) {
  auto& pg = shared_cluster();
  const pgpipe::pool_params p = params_for(pg.conninfo(), 1);
  if (PQlibVersion() >= 140000) {
    EXPECT_NO_THROW(TypeParam{p});
    return;
  }
  try {
    TypeParam d(p);
    ADD_FAILURE() << "a pool started on libpq " << PQlibVersion();
  } catch (const pgpipe::error& e) {
    EXPECT_EQ(e.code(), pgpipe::make_error_code(pgpipe::errc::unsupported_libpq));
    const std::string what = e.what();
    EXPECT_NE(what.find("needs libpq 14 or newer"), std::string::npos) << what;
    expect_no_secret(what, {pg.password()}, "the error");
  }
}

}  // namespace
