// pgpipe-bench --sweep as a user runs it, against the fixture's server: a
// short sweep of a tiny --sql workload prints the answer per driver (and
// rings it on the chart), and each bad input stops the bench at once with an
// error that names the problem (and never the password).
#include <gtest/gtest.h>

#include "support/cluster_fixture.hpp"
#include "support/subprocess.hpp"

#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <regex>

namespace {

namespace fs = std::filesystem;
using pgpipe::test::run_program;
using pgpipe::test::subprocess_result;

// Set by tests/CMakeLists.txt: an environment variable, not a compile
// definition, so this binary shares the other tests' precompiled header.
std::string bench_bin() {
  const char* p = std::getenv("PGPIPE_BENCH_BIN");
  return p ? p : "";
}

class bench_sweep : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    auto& pg = pgpipe::test::shared_cluster();
    pg.exec("drop database if exists bench_sweep");
    pg.exec("create database bench_sweep");
    pg.exec("create table sweep_kv (k int primary key, v text)", "bench_sweep");
    pg.exec("insert into sweep_kv select i, 'v' || i from generate_series(1, 100) i", "bench_sweep");
  }

  void SetUp() override {
    if (bench_bin().empty()) GTEST_SKIP() << "PGPIPE_BENCH_BIN not set";
    dir_ = fs::temp_directory_path() / ("bench-sweep-" + std::to_string(getpid()) + "-" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(dir_);
  }
  void TearDown() override {
    if (!dir_.empty()) {
      fs::permissions(dir_, fs::perms::owner_all, fs::perm_options::add);
      fs::remove_all(dir_);
    }
  }

  std::string file(const std::string& name, const std::string& text) {
    const auto path = dir_ / name;
    std::ofstream(path) << text;
    return path.string();
  }

  // The server reaches the bench through libpq's environment, as a user's
  // PGHOST would: no password on a command line.
  static std::map<std::string, std::string> server_env() {
    auto& pg = pgpipe::test::shared_cluster();
    return {{"PGHOST", "127.0.0.1"},
            {"PGPORT", std::to_string(pg.port())},
            {"PGUSER", pg.user()},
            {"PGPASSWORD", pg.password()},
            {"PGDATABASE", "bench_sweep"}};
  }

  static subprocess_result bench(std::vector<std::string> args,
                                 const std::map<std::string, std::string>& env = server_env()) {
    return run_program(bench_bin(), args, std::nullopt, env, {"PGSERVICE", "PGPASSFILE"}, 300);
  }

  // A bad input: exit 1, no report on stdout, the error on stderr.
  static std::string refused(const std::vector<std::string>& args,
                             const std::map<std::string, std::string>& env = server_env()) {
    const auto r = bench(args, env);
    EXPECT_EQ(r.exit_code, 1) << r.err;
    EXPECT_EQ(r.out, "");
    EXPECT_EQ(r.err.find(pgpipe::test::shared_cluster().password()), std::string::npos) << r.err;
    return r.err;
  }

  fs::path dir_;
};

TEST_F(bench_sweep, short_sweep_prints_the_answer_per_driver_and_charts_it) {
  const auto sql = file("kv.sql", "-- param: int 1 100\nselect v from sweep_kv where k = $1\n");
  const auto svg = (dir_ / "sweep.svg").string();
  const auto r = bench({"--sweep", "--sweep-max", "4", "--drivers", "async,blocking", "--sql", sql, "--concurrency",
                        "8", "--duration", "0.5", "--warmup", "0.2", "--server-cores", "2", "--svg", svg});
  ASSERT_EQ(r.exit_code, 0) << r.err << r.out;
  EXPECT_NE(r.out.find("### Pool size (--sweep): the smallest pool within 5% of the best q/s"), std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("- rule of thumb: connections = 2 x server cores = 2 x 2 = 4"), std::string::npos) << r.out;
  for (const std::string d : {"async", "blocking"}) {
    const std::regex answer("- \\*\\*" + d +
                            "\\*\\*: pool (1|2|4): [0-9,]+ q/s.*, p99 [0-9.]+ ms, [0-9,]+ client threads, peak RSS "
                            "[0-9]+ MB, server CPU [0-9.]+ s; rule of thumb \\(pool 4\\).*; sweep stopped: .+");
    EXPECT_TRUE(std::regex_search(r.out, answer)) << d << "\n" << r.out;
    // The sweep started at one connection and ran each pool it reports.
    EXPECT_NE(r.out.find("| " + d + " | 1 | 8 | "), std::string::npos) << r.out;
  }
  // Each driver's answer is ringed on the chart, the rule's pool dashed.
  std::ifstream in(svg);
  const std::string chart((std::istreambuf_iterator<char>(in)), {});
  EXPECT_NE(chart.find("async: pool "), std::string::npos);
  EXPECT_NE(chart.find("blocking: pool "), std::string::npos);
  EXPECT_NE(chart.find("2 x server cores"), std::string::npos);
}

TEST_F(bench_sweep, bad_sql_files_are_named) {
  const auto missing = (dir_ / "nope.sql").string();
  EXPECT_NE(refused({"--sweep", "--drivers", "async", "--sql", missing}).find("'" + missing + "' does not exist"),
            std::string::npos);
  EXPECT_NE(refused({"--sweep", "--drivers", "async", "--sql", file("empty.sql", "\n  \n")}).find("is empty"),
            std::string::npos);
  EXPECT_NE(refused({"--sweep", "--drivers", "async", "--sql", dir_.string()}).find("is a directory"),
            std::string::npos);
  if (geteuid() != 0) {  // root reads any file
    const auto locked = file("locked.sql", "select 1\n");
    ASSERT_EQ(chmod(locked.c_str(), 0), 0);
    EXPECT_NE(refused({"--sweep", "--drivers", "async", "--sql", locked}).find("cannot be read: Permission denied"),
              std::string::npos);
  }
  // The file's own format: a line number.
  EXPECT_NE(refused({"--sweep", "--drivers", "async", "--sql", file("kind.sql", "-- param: float 1 2\nselect $1\n")})
                .find("kind.sql:1: unknown param kind 'float'"),
            std::string::npos);
}

TEST_F(bench_sweep, statements_the_server_rejects_name_the_sqlstate) {
  const auto syntax = refused({"--sweep", "--drivers", "async", "--sql", file("typo.sql", "selec v from sweep_kv\n")});
  EXPECT_NE(syntax.find("the server rejected the statement of "), std::string::npos) << syntax;
  EXPECT_NE(syntax.find("SQLSTATE 42601 (syntax_error): syntax error at or near \"selec\""), std::string::npos)
      << syntax;
  const auto table = refused({"--sweep", "--drivers", "async", "--sql",
                              file("table.sql", "-- param: int 1 9\nselect v from no_such_table where k = $1\n")});
  EXPECT_NE(table.find("SQLSTATE 42P01 (undefined_table): relation \"no_such_table\" does not exist"),
            std::string::npos)
      << table;
  const auto column = refused(
      {"--sweep", "--drivers", "async", "--sql", file("col.sql", "-- param: int 1 9\nselect w from sweep_kv where k = $1\n")});
  EXPECT_NE(column.find("SQLSTATE 42703 (undefined_column)"), std::string::npos) << column;
}

TEST_F(bench_sweep, an_unreachable_server_is_one_error_without_the_password) {
  // A port nobody listens on: bound, then closed.
  const int s = socket(AF_INET, SOCK_STREAM, 0);
  ASSERT_GE(s, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(bind(s, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
  socklen_t len = sizeof a;
  ASSERT_EQ(getsockname(s, reinterpret_cast<sockaddr*>(&a), &len), 0);
  const std::string port = std::to_string(ntohs(a.sin_port));
  close(s);

  const std::string secret = "s3cret-not-to-print";
  const auto sql = file("kv.sql", "-- param: int 1 100\nselect v from sweep_kv where k = $1\n");
  const auto given = bench({"--sweep", "--drivers", "async", "--sql", sql, "--conninfo",
                            "host=127.0.0.1 port=" + port + " user=u dbname=d password=" + secret});
  EXPECT_EQ(given.exit_code, 1);
  EXPECT_EQ(given.out, "");
  EXPECT_NE(given.err.find("cannot reach the server (host=127.0.0.1 port=" + port), std::string::npos) << given.err;
  EXPECT_NE(given.err.find("Connection refused"), std::string::npos) << given.err;
  EXPECT_EQ(given.err.find(secret), std::string::npos) << given.err;

  auto env = server_env();
  env["PGPORT"] = port;
  env["PGPASSWORD"] = secret;
  const auto from_env = bench({"--sweep", "--drivers", "async", "--sql", sql}, env);
  EXPECT_EQ(from_env.exit_code, 1);
  EXPECT_NE(from_env.err.find("cannot reach the server (from the environment)"), std::string::npos) << from_env.err;
  EXPECT_EQ(from_env.err.find(secret), std::string::npos) << from_env.err;
}

}  // namespace
