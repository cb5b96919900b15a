// The scale-out partners later tests rely on: PgBouncer in front of a
// devcluster (SCRAM end to end) and a streaming hot standby, plus libpq's
// multi-host routing across primary and standby.
#include "support/cluster_fixture.hpp"
#include "support/raw_connection.hpp"
#include "support/pgbouncer.hpp"
#include "support/standby.hpp"
#include "support/wait.hpp"

#include <gtest/gtest.h>
#include <libpq-fe.h>

#include <memory>

namespace {

using pgpipe::test::pgbouncer_instance;
using pgpipe::test::pgbouncer_params;
using pgpipe::test::standby_instance;

using pgpipe::test::raw_connect;

std::string scalar(PGconn* c, const std::string& sql) {
  std::unique_ptr<PGresult, decltype(&PQclear)> r(PQexec(c, sql.c_str()), &PQclear);
  if (PQresultStatus(r.get()) != PGRES_TUPLES_OK) return "error: " + std::string(PQerrorMessage(c));
  return PQntuples(r.get()) > 0 ? PQgetvalue(r.get(), 0, 0) : "";
}

class scaleout_smoke : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    unsetenv("PGPASSWORD");
    setenv("PGPASSFILE", "/nonexistent/pgpipe-test-pgpass", 1);
  }
};

TEST_F(scaleout_smoke, pgbouncer_session_pool_forwards_with_scram) {
  auto& pg = pgpipe::test::shared_cluster();
  pgbouncer_instance bouncer(pg);
  EXPECT_NE(bouncer.port(), pg.port());
  auto c = raw_connect(bouncer.conninfo() + " application_name=through_bouncer");
  ASSERT_EQ(PQstatus(c.get()), CONNECTION_OK) << PQerrorMessage(c.get());
  EXPECT_EQ(std::string(PQport(c.get())), std::to_string(bouncer.port()));
  EXPECT_EQ(scalar(c.get(), "SELECT current_user"), pg.user());
  // The query really ran on the cluster behind the bouncer.
  EXPECT_EQ(scalar(c.get(), "SELECT setting FROM pg_settings WHERE name = 'port'"), std::to_string(pg.port()));
  // A wrong password is refused by PgBouncer itself.
  auto bad = raw_connect("host=127.0.0.1 port=" + std::to_string(bouncer.port()) + " user=" + pg.user() +
                     " password=not-the-password dbname=postgres");
  EXPECT_EQ(PQstatus(bad.get()), CONNECTION_BAD);
  // PgBouncer words it "SASL authentication failed".
  EXPECT_NE(std::string(PQerrorMessage(bad.get())).find("authentication failed"), std::string::npos)
      << PQerrorMessage(bad.get());
  EXPECT_EQ(std::string(PQerrorMessage(bad.get())).find("not-the-password"), std::string::npos);
  // The admin console sees the pool.
  auto pools = bouncer.admin("SHOW POOLS");
  bool found = false;
  for (const auto& row : pools) found = found || (row.size() > 1 && row[0] == "postgres" && row[1] == pg.user());
  EXPECT_TRUE(found);
}

TEST_F(scaleout_smoke, pgbouncer_transaction_pool_shares_one_server_connection) {
  auto pg = pgpipe::test::fresh_cluster();
  pgbouncer_params params;
  params.pool_mode = "transaction";
  params.default_pool_size = 1;
  pgbouncer_instance bouncer(*pg, params);
  auto a = raw_connect(bouncer.conninfo());
  auto b = raw_connect(bouncer.conninfo());
  ASSERT_EQ(PQstatus(a.get()), CONNECTION_OK) << PQerrorMessage(a.get());
  ASSERT_EQ(PQstatus(b.get()), CONNECTION_OK) << PQerrorMessage(b.get());
  // Two clients, one pooled server backend.
  EXPECT_EQ(scalar(a.get(), "SELECT pg_backend_pid()"), scalar(b.get(), "SELECT pg_backend_pid()"));
  EXPECT_EQ(pg->connection_count(), 1);
  const pid_t bouncer_pid = bouncer.pid();
  bouncer.stop();
  EXPECT_EQ(kill(bouncer_pid, 0), -1);
  EXPECT_NE(scalar(a.get(), "SELECT 1"), "1");
}

TEST_F(scaleout_smoke, standby_streams_rows_from_the_primary) {
  PGPIPE_SKIP_WITHOUT_STANDBY();
  auto primary = pgpipe::test::fresh_cluster();
  primary->exec("CREATE TABLE replicated (v int)");
  standby_instance standby(*primary);
  EXPECT_NE(standby.port(), primary->port());
  EXPECT_EQ(standby.cluster().query_value("SELECT pg_is_in_recovery()"), "t");
  EXPECT_EQ(primary->query_value("SELECT pg_is_in_recovery()"), "f");
  standby.wait_for_streaming();
  primary->exec("INSERT INTO replicated VALUES (41), (1)");
  standby.wait_for_replay();
  EXPECT_EQ(standby.cluster().query_value("SELECT sum(v) FROM replicated"), "42");
  // Read-only: writes are refused on the standby.
  EXPECT_THROW(standby.cluster().exec("INSERT INTO replicated VALUES (1)"), std::runtime_error);
  EXPECT_EQ(primary->query_value("SELECT count(*) FROM pg_stat_replication WHERE state = 'streaming'"), "1");
}

TEST_F(scaleout_smoke, multi_host_conninfo_with_read_write_lands_on_the_primary) {
  PGPIPE_SKIP_WITHOUT_STANDBY();
  auto primary = pgpipe::test::fresh_cluster();
  standby_instance standby(*primary);
  const std::string base = " user=" + primary->user() + " password=" + primary->password() + " dbname=postgres";
  // Standby listed first, so libpq must skip it.
  auto rw = raw_connect("host=127.0.0.1,127.0.0.1 port=" + std::to_string(standby.port()) + "," +
                    std::to_string(primary->port()) + " target_session_attrs=read-write" + base);
  ASSERT_EQ(PQstatus(rw.get()), CONNECTION_OK) << PQerrorMessage(rw.get());
  EXPECT_EQ(std::string(PQport(rw.get())), std::to_string(primary->port()));
  EXPECT_EQ(scalar(rw.get(), "SELECT pg_is_in_recovery()"), "f");
  auto standby_conn = raw_connect("host=127.0.0.1,127.0.0.1 port=" + std::to_string(primary->port()) + "," +
                              std::to_string(standby.port()) + " target_session_attrs=standby" + base);
  ASSERT_EQ(PQstatus(standby_conn.get()), CONNECTION_OK) << PQerrorMessage(standby_conn.get());
  EXPECT_EQ(std::string(PQport(standby_conn.get())), std::to_string(standby.port()));
  EXPECT_EQ(scalar(standby_conn.get(), "SELECT pg_is_in_recovery()"), "t");
}

TEST_F(scaleout_smoke, promoted_standby_accepts_writes) {
  PGPIPE_SKIP_WITHOUT_STANDBY();
  auto primary = pgpipe::test::fresh_cluster();
  standby_instance standby(*primary);
  primary->stop(pgpipe::devcluster::stop_mode::immediate);
  standby.cluster().promote();
  EXPECT_EQ(standby.cluster().query_value("SELECT pg_is_in_recovery()"), "f");
  standby.cluster().exec("CREATE TABLE after_failover (v int)");
}

}  // namespace
