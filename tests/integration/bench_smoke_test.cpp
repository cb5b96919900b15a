// pgpipe-bench's helpers: the latency histogram the numbers come from, the
// --sql workload format and its pgbench translation (run through the real
// pgbench), the child-to-parent result line, the keys of the JSON report,
// and the server-side observations (table loading, pg_stat_activity count).
// The binary's end-to-end smoke run is in .ci/run.
#include <gtest/gtest.h>

#include <algorithm>

#include "driver_pgbench.hpp"
#include "latency.hpp"
#include "options.hpp"
#include "report.hpp"
#include "run_result.hpp"
#include "sampler.hpp"
#include "tpcb.hpp"
#include "workload.hpp"

#include "support/cluster_fixture.hpp"
#include "support/wait.hpp"

#include <boost/json/parse.hpp>
#include <libpq-fe.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <regex>
#include <set>

namespace pgpipe::bench {
namespace {

TEST(bench_latency, percentiles_within_bucket_precision_and_never_below_truth) {
  latency_histogram h;
  for (std::uint64_t v = 1; v <= 100'000; ++v) h.record(v);
  EXPECT_EQ(h.count(), 100'000u);
  EXPECT_EQ(h.max(), 100'000u);
  for (double q : {0.5, 0.95, 0.99}) {
    const double truth = q * 100'000;
    const double got = static_cast<double>(h.percentile(q));
    EXPECT_GE(got, truth) << q;
    EXPECT_LE(got, truth * (1 + 1.0 / 64)) << q;
  }
  EXPECT_EQ(h.percentile(1.0), 100'000u);
}

TEST(bench_latency, small_values_are_exact_and_empty_is_zero) {
  latency_histogram h;
  EXPECT_EQ(h.percentile(0.5), 0u);
  for (int i = 0; i < 10; ++i) h.record(7);
  h.record(40);
  EXPECT_EQ(h.percentile(0.5), 7u);
  EXPECT_EQ(h.percentile(1.0), 40u);
  for (std::uint64_t v : {1ull, 63ull, 64ull, 1000ull, 123456789ull}) {
    const auto i = latency_histogram::index_of(v);
    EXPECT_GE(latency_histogram::upper_edge(i), v);
    if (i > 0) {
      EXPECT_LT(latency_histogram::upper_edge(i - 1), v);
    }
  }
}

TEST(bench_options, no_prepared_reaches_the_child_and_pgbench) {
  const char* argv[] = {"pgpipe-bench", "--no-prepared", "--pools", "4"};
  const auto o = pgpipe::bench::parse_options(4, argv);
  EXPECT_FALSE(o.prepared);
  const auto child = pgpipe::bench::child_arguments(o, "async", 4, 3);
  EXPECT_NE(std::find(child.begin(), child.end(), "--no-prepared"), child.end());
  const char* plain[] = {"pgpipe-bench"};
  EXPECT_TRUE(pgpipe::bench::parse_options(1, plain).prepared);
  EXPECT_NE(pgpipe::bench::help_text().find("--no-prepared"), std::string::npos);
  // pgbench switches to the unnamed extended protocol.
  const auto w = pgpipe::bench::builtin_workload();
  const std::string dir = ::testing::TempDir();
  const auto named = pgpipe::bench::prepare_pgbench("pgbench", dir, "opt_named", w, "host=x", 2, 0, 1, true);
  const auto unnamed = pgpipe::bench::prepare_pgbench("pgbench", dir, "opt_unnamed", w, "host=x", 2, 0, 1, false);
  auto mode = [](const std::vector<std::string>& a) {
    auto it = std::find(a.begin(), a.end(), "-M");
    return it != a.end() && it + 1 != a.end() ? *(it + 1) : std::string();
  };
  EXPECT_EQ(mode(named.argv), "prepared");
  EXPECT_EQ(mode(unnamed.argv), "extended");
}

TEST(bench_workload, builtin_draws_keys_like_the_table) {
  const auto w = builtin_workload();
  ASSERT_EQ(w.params.size(), 1u);
  EXPECT_EQ(w.sql, "select ten, so_luong from san_pham where ma = $1");
  EXPECT_EQ(format_key(w.params[0], 42), "SP000042");
  EXPECT_EQ(format_key(w.params[0], 100000), "SP100000");
  rng r(1);
  for (int i = 0; i < 1000; ++i) {
    const auto k = draw(w.params[0], r);
    ASSERT_TRUE(std::regex_match(k, std::regex("SP[0-9]{6}"))) << k;
    const int n = std::stoi(k.substr(2));
    ASSERT_GE(n, 1);
    ASSERT_LE(n, 100000);
  }
}

TEST(bench_workload, file_format_params_in_order) {
  const auto w = parse_workload(
      "-- my workload\n"
      "-- param: int 5 9\n"
      "-- param: pick red, green ,blue\n"
      "-- param: format K%d-x 1 3\n"
      "select *\n  from t where a = $1 and b = $2 and c = $3;\n",
      "w.sql");
  ASSERT_EQ(w.params.size(), 3u);
  EXPECT_EQ(w.sql, "select *\n  from t where a = $1 and b = $2 and c = $3");
  EXPECT_EQ(w.params[1].choices, (std::vector<std::string>{"red", "green", "blue"}));
  EXPECT_EQ(format_key(w.params[2], 2), "K2-x");
  rng r(2);
  std::set<std::string> ints, picks;
  for (int i = 0; i < 500; ++i) {
    ints.insert(draw(w.params[0], r));
    picks.insert(draw(w.params[1], r));
  }
  EXPECT_EQ(ints, (std::set<std::string>{"5", "6", "7", "8", "9"}));
  EXPECT_EQ(picks, (std::set<std::string>{"red", "green", "blue"}));
}

TEST(bench_workload, malformed_files_name_the_line) {
  auto message = [](const std::string& text) {
    try {
      parse_workload(text, "f.sql");
    } catch (const std::invalid_argument& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(message("select 1\n-- param: float 1 2\n").find("f.sql:2"), std::string::npos);
  EXPECT_NE(message("-- param: int 9 1\nselect $1\n").find("empty"), std::string::npos);
  EXPECT_NE(message("-- param: format SP%s 1 2\nselect $1\n").find("%d"), std::string::npos);
  EXPECT_NE(message("-- only a comment\n").find("no SQL"), std::string::npos);
  EXPECT_NE(message("select 1; select 2\n").find("one statement"), std::string::npos);
  std::string nine;
  for (int i = 0; i < 9; ++i) nine += "-- param: int 1 2\n";
  EXPECT_NE(message(nine + "select 1\n").find("at most 8"), std::string::npos);
}

TEST(bench_workload, pgbench_script_translation) {
  const auto s = pgbench_script(builtin_workload());
  EXPECT_EQ(s,
            "\\set p1 random(1, 100000)\n"
            "select ten, so_luong from san_pham where ma = ('SP' || lpad(:p1::text, 6, '0'));\n");
  // $1 inside a literal stays; $10 is parameter ten, not $1 followed by 0.
  workload w = parse_workload("-- param: pick a,it's\nselect '$1', $1\n", "q");
  EXPECT_EQ(pgbench_script(w), "\\set p1 random(1, 2)\nselect '$1', (array['a','it''s']::text[])[:p1];\n");
}

TEST(bench_result, line_round_trip_keeps_every_field) {
  run_result r;
  r.driver = "blocking";
  r.pool = 20;
  r.concurrency = 10000;
  r.duration_s = 10;
  r.queries = 123456;
  r.qps = 12345.6;
  r.p50_ms = 1.5;
  r.p95_ms = 2.5;
  r.p99_ms = 3.5;
  r.max_ms = 99.25;
  r.errors = 7;
  r.errors_by_kind = {{"queue_full", 5}, {"sqlstate_53300", 2}};
  r.rss_peak_mb = 20.5;
  r.rss_end_mb = 19.5;
  r.threads_max = 523;
  r.threads_end = 21;
  r.client_cpu_s = 4.75;
  r.startup_ms = 12.5;
  r.ok = false;
  r.failure = "a message with spaces, = signs and 100% of\nnewlines";
  const auto back = decode_result(encode_result(r));
  EXPECT_EQ(encode_result(back), encode_result(r));
  EXPECT_EQ(back.failure, r.failure);
  EXPECT_EQ(back.errors_by_kind, r.errors_by_kind);
  EXPECT_EQ(back.threads_max, 523u);
  EXPECT_EQ(back.threads_end, 21u);
  EXPECT_FALSE(back.ok);
  EXPECT_EQ(encode_result(r).find('\n'), std::string::npos);
}

TEST(bench_report, json_has_exactly_the_report_keys_and_escapes_strings) {
  options o;
  o.pools = {20};
  report_input in;
  in.opts = &o;
  in.drivers = {"async"};
  in.server_version = "15.20 \"quoted\"";
  in.workload_name = "built-in";
  in.sql = "select\t1";
  run_result r;
  r.driver = "async";
  r.pool = 20;
  r.round = 1;
  r.failure = "line\nbreak";
  in.runs.push_back(r);
  in.server = "conninfo with a Latin-1 byte: caf\xE9";  // a server's text is not ours to trust
  const std::string j = json_report(in);
  boost::json::error_code ec;
  const boost::json::value doc = boost::json::parse(j, ec);
  ASSERT_FALSE(ec) << ec.message() << ": " << j;
  EXPECT_EQ(doc.at("server_version").as_string(), "15.20 \"quoted\"");
  EXPECT_EQ(doc.at("params").at("sql").as_string(), "select\t1");
  EXPECT_EQ(doc.at("params").at("server").as_string(), "conninfo with a Latin-1 byte: caf\xEF\xBF\xBD");
  EXPECT_EQ(j.find('\t'), std::string::npos);
  std::set<std::string> top;
  for (const auto& kv : doc.as_object()) top.insert(kv.key());
  EXPECT_EQ(top, (std::set<std::string>{"version", "server_version", "machine", "params", "runs"}));
  const auto& run = doc.at("runs").at(0).as_object();
  EXPECT_EQ(run.at("failure").as_string(), "line\nbreak");
  for (const char* key : {"driver", "pool", "concurrency", "duration_s", "queries", "qps", "p50_ms", "p95_ms",
                          "p99_ms", "max_ms", "errors", "rss_peak_mb", "rss_end_mb", "threads_max", "client_cpu_s",
                          "server_connections_max", "startup_ms", "round"}) {
    EXPECT_TRUE(run.contains(key)) << key;
  }
  EXPECT_TRUE(doc.at("machine").at("cpus").is_number());
  EXPECT_EQ(doc.at("version").as_int64(), 1);
}

TEST(bench_report, the_header_names_the_server_and_the_libpq_loaded_at_run_time) {
  options o;
  o.pools = {20};
  report_input in;
  in.opts = &o;
  in.drivers = {"async"};
  in.server_version = "18.4";
  in.server = "embedded devcluster";
  in.runtime.libpq_version = 180000;
  const std::string md = markdown_report(in);
  EXPECT_NE(md.find("- server: PostgreSQL 18.4, embedded devcluster\n"), std::string::npos) << md;
  EXPECT_NE(md.find("- client: libpq 18.0 (loaded at run time)\n"), std::string::npos) << md;
}

TEST(bench_server, ensure_table_loads_once_and_sampler_counts_client_connections) {
  auto& pg = pgpipe::test::shared_cluster();
  pg.exec("drop database if exists bench_smoke");
  pg.exec("create database bench_smoke");
  const std::string conninfo = pg.conninfo("bench_smoke");
  EXPECT_TRUE(ensure_table(conninfo));
  EXPECT_FALSE(ensure_table(conninfo));
  EXPECT_EQ(pg.query_value("select count(*) from san_pham", "bench_smoke"), "100000");
  EXPECT_EQ(pg.query_value("select ten from san_pham where ma = 'SP000042'", "bench_smoke"), "San pham 42");

  server_sampler sampler(conninfo);
  const std::string version = sampler.server_version();
  EXPECT_EQ(version.substr(0, version.find('.')), std::to_string(pgpipe::devcluster::cluster::server_major())) << version;
  EXPECT_EQ(sampler.local_postmaster(), std::optional<pid_t>(pg.postmaster_pid()));
  const int before = sampler.client_connections();
  ASSERT_GE(before, 0);
  std::vector<std::unique_ptr<PGconn, void (*)(PGconn*)>> extra;
  for (int i = 0; i < 3; ++i) {
    extra.emplace_back(PQconnectdb(conninfo.c_str()), PQfinish);
    ASSERT_EQ(PQstatus(extra.back().get()), CONNECTION_OK);
  }
  // Connections elsewhere do not count: only the bench database's.
  std::unique_ptr<PGconn, void (*)(PGconn*)> other(PQconnectdb(pg.conninfo().c_str()), PQfinish);
  EXPECT_TRUE(pgpipe::test::wait_until([&] { return sampler.client_connections() == before + 3; }));
  EXPECT_GT(server_cpu_seconds(pg.postmaster_pid()), 0.0);
}

// Runs pgbench as the bench does: the connection in the environment (so no
// password on a command line), output captured in a file. Returns the
// output; fails the test when pgbench does not exit 0.
std::string run_pgbench(const pgbench_command& cmd, const std::string& dir, const std::string& script,
                        const std::vector<std::string>& extra) {
  const std::string out_path = dir + "/out";
  std::vector<std::string> argv{cmd.argv[0], "-n", "-M", "prepared"};
  argv.insert(argv.end(), extra.begin(), extra.end());
  argv.push_back("-f");
  argv.push_back(dir + "/" + script);
  std::vector<char*> cargv, cenv;
  for (auto& a : argv) cargv.push_back(a.data());
  cargv.push_back(nullptr);
  std::vector<std::string> env = cmd.env;
  env.push_back("PATH=/usr/bin:/bin");
  for (auto& e : env) cenv.push_back(e.data());
  cenv.push_back(nullptr);
  const pid_t pid = fork();
  if (pid < 0) {
    ADD_FAILURE() << "fork failed";
    return {};
  }
  if (pid == 0) {
    FILE* f = std::freopen(out_path.c_str(), "w", stdout);
    if (f == nullptr || dup2(fileno(stdout), 2) < 0) _exit(126);
    execve(cargv[0], cargv.data(), cenv.data());
    _exit(127);
  }
  int status = 0;
  EXPECT_EQ(waitpid(pid, &status, 0), pid);
  std::ifstream out(out_path);
  std::string text((std::istreambuf_iterator<char>(out)), {});
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << text;
  return text;
}

TEST(bench_server, pgbench_runs_the_translated_script) {
  const auto pgbench = find_pgbench();
  if (!pgbench) GTEST_SKIP() << "pgbench not installed";
  auto& pg = pgpipe::test::shared_cluster();
  pg.exec("create table if not exists bench_kinds (id int primary key, colour text, code text)");
  pg.exec("insert into bench_kinds values (1, 'red', 'K01'), (2, 'blue', 'K02') on conflict do nothing");
  const auto w = parse_workload(
      "-- param: int 1 2\n-- param: pick red,blue\n-- param: format K%02d 1 2\n"
      "select count(*) from bench_kinds where id = $1 or colour = $2 or code = $3\n",
      "kinds.sql");
  char dir[] = "/tmp/bench-smoke-XXXXXX";
  ASSERT_NE(mkdtemp(dir), nullptr);
  const auto cmd = prepare_pgbench(*pgbench, dir, "t", w, pg.conninfo(), 2, 0, 1);
  // The password travels in PGPASSWORD, never in argv.
  for (const auto& a : cmd.argv) EXPECT_EQ(a.find(pg.password()), std::string::npos) << a;
  const std::string text = run_pgbench(cmd, dir, "t.sql", {"-c", "2", "-t", "20"});
  EXPECT_NE(text.find("number of transactions actually processed: 40/40"), std::string::npos) << text;
  std::filesystem::remove_all(dir);
}

TEST(bench_tpcb, options_pick_the_tpcb_drivers_and_reach_the_child) {
  const char* argv[] = {"pgpipe-bench", "--workload", "tpcb", "--scale", "2", "--pools", "4,8"};
  const auto o = parse_options(7, argv);
  EXPECT_TRUE(o.tpcb);
  EXPECT_EQ(o.scale, 2);
  EXPECT_EQ(o.drivers, tpcb_drivers());
  // One logical client per connection unless --concurrency says otherwise.
  EXPECT_EQ(clients_for(o, 8), 8u);
  const auto child = child_arguments(o, "async-pipelined", 8, 3);
  auto after = [&](const std::string& flag) {
    auto it = std::find(child.begin(), child.end(), flag);
    return it != child.end() && it + 1 != child.end() ? *(it + 1) : std::string();
  };
  EXPECT_EQ(after("--workload"), "tpcb");
  EXPECT_EQ(after("--scale"), "2");
  EXPECT_EQ(after("--concurrency"), "8");
  const char* many[] = {"pgpipe-bench", "--workload", "tpcb", "--concurrency", "50"};
  EXPECT_EQ(clients_for(parse_options(5, many), 8), 50u);

  auto refused = [](std::vector<const char*> a, const std::string& why) {
    try {
      parse_options(static_cast<int>(a.size()), a.data());
      ADD_FAILURE() << "accepted; expected: " << why;
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find(why), std::string::npos) << e.what();
    }
  };
  refused({"pgpipe-bench", "--scale", "2"}, "--workload tpcb only");
  refused({"pgpipe-bench", "--workload", "tpcb", "--drivers", "async-coalesced"}, "has no tpcb run");
  refused({"pgpipe-bench", "--drivers", "async-pipelined"}, "--workload tpcb only");
  refused({"pgpipe-bench", "--workload", "tpcb", "--sweep"}, "select workload only");
  refused({"pgpipe-bench", "--drivers", "async-pipelined-lease"}, "--workload tpcb only");
  const char* lease[] = {"pgpipe-bench", "--workload", "tpcb", "--drivers", "async-pipelined-lease,pgbench"};
  EXPECT_EQ(parse_options(5, lease).drivers, (std::vector<std::string>{"async-pipelined-lease", "pgbench"}));
  refused({"pgpipe-bench", "--workload", "tpcc"}, "expected select or tpcb");
  refused({"pgpipe-bench", "--workload", "tpcb", "--scale", "0"}, "--scale");
  EXPECT_NE(help_text().find("synchronous_commit"), std::string::npos);
}

TEST(bench_tpcb, draws_stay_in_pgbench_ranges) {
  rng r(7);
  for (int i = 0; i < 10000; ++i) {
    const auto d = draw_tpcb(3, r);
    ASSERT_GE(d.aid, 1);
    ASSERT_LE(d.aid, 300000);
    ASSERT_GE(d.bid, 1);
    ASSERT_LE(d.bid, 3);
    ASSERT_GE(d.tid, 1);
    ASSERT_LE(d.tid, 30);
    ASSERT_GE(d.delta, -5000);
    ASSERT_LE(d.delta, 5000);
  }
}

TEST(bench_tpcb, tables_are_made_once_and_the_books_catch_a_lost_update) {
  auto& pg = pgpipe::test::shared_cluster();
  pg.exec("drop database if exists bench_tpcb");
  pg.exec("create database bench_tpcb");
  const std::string conninfo = pg.conninfo("bench_tpcb");
  EXPECT_TRUE(ensure_tpcb_tables(conninfo, 1));
  EXPECT_FALSE(ensure_tpcb_tables(conninfo, 1));
  EXPECT_EQ(pg.query_value("select count(*) from pgbench_accounts", "bench_tpcb"), "100000");
  EXPECT_EQ(pg.query_value("select count(*) from pgbench_tellers", "bench_tpcb"), "10");
  EXPECT_EQ(pg.query_value("select count(*) from pgbench_branches", "bench_tpcb"), "1");
  try {
    ensure_tpcb_tables(conninfo, 3);
    ADD_FAILURE() << "a scale mismatch was accepted";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("--scale 1"), std::string::npos) << e.what();
  }

  const auto start = read_tpcb_books(conninfo);
  EXPECT_EQ(tpcb_books_mismatch(start, start), "");
  // A whole transaction moves all four sums alike.
  pg.exec("begin; update pgbench_accounts set abalance = abalance + 7 where aid = 5; "
          "update pgbench_tellers set tbalance = tbalance + 7 where tid = 2; "
          "update pgbench_branches set bbalance = bbalance + 7 where bid = 1; "
          "insert into pgbench_history (tid, bid, aid, delta, mtime) values (2, 1, 5, 7, now()); commit",
          "bench_tpcb");
  const auto after_one = read_tpcb_books(conninfo);
  EXPECT_EQ(after_one.accounts - start.accounts, 7);
  EXPECT_EQ(tpcb_books_mismatch(start, after_one), "");
  // Half a transaction (the teller's update lost) is caught, and named.
  pg.exec("update pgbench_accounts set abalance = abalance - 3 where aid = 9; "
          "update pgbench_branches set bbalance = bbalance - 3 where bid = 1; "
          "insert into pgbench_history (tid, bid, aid, delta, mtime) values (2, 1, 9, -3, now())",
          "bench_tpcb");
  const std::string wrong = tpcb_books_mismatch(start, read_tpcb_books(conninfo));
  EXPECT_NE(wrong.find("do not balance"), std::string::npos) << wrong;
  EXPECT_NE(wrong.find("sum(tbalance) by 7"), std::string::npos) << wrong;
  EXPECT_NE(wrong.find("sum(abalance) moved by 4"), std::string::npos) << wrong;
}

TEST(bench_tpcb, pgbench_runs_both_scripts_and_the_books_balance) {
  const auto pgbench = find_pgbench();
  if (!pgbench) GTEST_SKIP() << "pgbench not installed";
  auto& pg = pgpipe::test::shared_cluster();
  pg.exec("drop database if exists bench_tpcb_pgbench");
  pg.exec("create database bench_tpcb_pgbench");
  const std::string conninfo = pg.conninfo("bench_tpcb_pgbench");
  ASSERT_TRUE(ensure_tpcb_tables(conninfo, 1));
  char dir[] = "/tmp/bench-tpcb-XXXXXX";
  ASSERT_NE(mkdtemp(dir), nullptr);
  for (std::size_t pipeline : {std::size_t{1}, pgbench_pipeline_queries}) {
    const auto before = read_tpcb_books(conninfo);
    const auto cmd = prepare_pgbench(*pgbench, dir, "tpcb", tpcb_workload(1), conninfo, 2, 0, 1, true, pipeline);
    std::ifstream script(std::string(dir) + "/tpcb.sql");
    const std::string text((std::istreambuf_iterator<char>(script)), {});
    EXPECT_EQ(text.find("\\startpipeline") != std::string::npos, pipeline > 1) << text;
    const std::string out = run_pgbench(cmd, dir, "tpcb.sql", {"-c", "2", "-t", "50"});
    EXPECT_NE(out.find("number of transactions actually processed: 100/100"), std::string::npos) << out;
    const auto after = read_tpcb_books(conninfo);
    EXPECT_EQ(tpcb_books_mismatch(before, after), "");
    EXPECT_EQ(pg.query_value("select count(*) from pgbench_history", "bench_tpcb_pgbench"),
              std::to_string(pipeline > 1 ? 200 : 100));
  }
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace pgpipe::bench
