// pgpipe-bench running a peer driver as a user runs it, against the
// fixture's server: a stand-in peer (a shell script in a --peers directory)
// receives the run on its argv and the connection in its environment (the
// password never on its argv), and its result line becomes the table's row,
// CPU per query and async's ratio included. A peer that is not built stops
// the bench with an error that says how to build it.
#include <gtest/gtest.h>

#include "support/cluster_fixture.hpp"
#include "support/subprocess.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>

namespace {

namespace fs = std::filesystem;
using pgpipe::test::run_program;
using pgpipe::test::subprocess_result;

// Set by tests/CMakeLists.txt, as for the sweep's test.
std::string bench_bin() {
  const char* p = std::getenv("PGPIPE_BENCH_BIN");
  return p ? p : "";
}

std::string slurp(const fs::path& p) {
  std::ifstream in(p);
  return std::string((std::istreambuf_iterator<char>(in)), {});
}

class bench_peers_run : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    auto& pg = pgpipe::test::shared_cluster();
    pg.exec("drop database if exists bench_peers");
    pg.exec("create database bench_peers");
  }

  void SetUp() override {
    if (bench_bin().empty()) GTEST_SKIP() << "PGPIPE_BENCH_BIN not set";
    dir_ = fs::temp_directory_path() / ("bench-peers-" + std::to_string(getpid()) + "-" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(dir_);
  }
  void TearDown() override {
    if (!dir_.empty()) fs::remove_all(dir_);
  }

  // DIR/<driver>/run: the launcher pgpipe-bench calls.
  void peer(const std::string& driver, const std::string& script) {
    fs::create_directories(dir_ / driver);
    const auto run = dir_ / driver / "run";
    std::ofstream(run) << "#!/bin/sh\n" << script;
    fs::permissions(run, fs::perms::owner_all);
  }

  // The server on --conninfo, only the password in the environment: what a
  // peer finds in its own PG* variables came from pgpipe-bench's conninfo,
  // not from an environment it merely inherited.
  static subprocess_result bench(std::vector<std::string> args) {
    auto& pg = pgpipe::test::shared_cluster();
    args.push_back("--conninfo");
    args.push_back("host=127.0.0.1 port=" + std::to_string(pg.port()) + " user=" + pg.user() + " dbname=bench_peers");
    return run_program(bench_bin(), args, std::nullopt, {{"PGPASSWORD", pg.password()}},
                       {"PGSERVICE", "PGPASSFILE", "PGHOST", "PGPORT", "PGUSER", "PGDATABASE"}, 300);
  }

  fs::path dir_;
};

TEST_F(bench_peers_run, a_peer_gets_the_run_on_argv_the_connection_in_its_environment_and_fills_its_row) {
  // 500 queries and 1 ms of CPU in the window: 2.00 µs per query.
  const std::string seen = (dir_ / "seen").string();
  peer("tokio-postgres",
       "[ \"$1\" = --check ] && exit 0\n"
       "echo \"argv $*\" > " + seen + "\n"
       "echo \"env $PGHOST $PGPORT $PGDATABASE ${PGPASSWORD:+password-set}\" >> " + seen + "\n"
       "echo \"R driver=tokio-postgres pool=$2 concurrency=$4 duration_s=$8 queries=500 qps=250 p50_ms=1 p95_ms=2 "
       "p99_ms=3 max_ms=4 errors=0 startup_ms=5 window_cpu_s=0.001 rss_end_mb=1 threads_end=1 ok=1\"\n");
  const auto r = bench({"--peers", dir_.string(), "--drivers", "async,tokio-postgres", "--pools", "2",
                        "--concurrency", "8", "--warmup", "0", "--duration", "2"});
  ASSERT_EQ(r.exit_code, 0) << r.err << r.out;
  const auto& pg = pgpipe::test::shared_cluster();
  const std::string s = slurp(seen);
  EXPECT_NE(s.find("argv --pool 2 --concurrency 8 --warmup 0 --duration 2 --clk-tck "), std::string::npos) << s;
  EXPECT_NE(s.find("env 127.0.0.1 " + std::to_string(pg.port()) + " bench_peers password-set"), std::string::npos) << s;
  EXPECT_EQ(s.find(pg.password()), std::string::npos) << s;
  EXPECT_NE(r.out.find("| tokio-postgres | 2 | 8 | 250 |"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("| 2.00 |"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("- **beside other clients, pool 2**: async/tokio-postgres "), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find(pg.password()), std::string::npos);
  EXPECT_EQ(r.err.find(pg.password()), std::string::npos);
}

TEST_F(bench_peers_run, a_peer_not_built_is_named_with_how_to_build_it) {
  peer("jdbc", "echo 'jdbc peer: not built' >&2\nexit 127\n");
  const auto r = bench({"--peers", dir_.string(), "--drivers", "async,jdbc", "--pools", "2"});
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_EQ(r.out, "");
  EXPECT_NE(r.err.find("jdbc: not built in " + dir_.string() + " (run bench/peers/build)"), std::string::npos) << r.err;
}

}  // namespace
