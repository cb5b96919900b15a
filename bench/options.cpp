#include "options.hpp"

#include <libpq-fe.h>
#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string_view>

namespace pgpipe::bench {
namespace {

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> out;
  std::string item;
  std::istringstream in(s);
  while (std::getline(in, item, sep)) {
    if (!item.empty()) out.push_back(item);
  }
  return out;
}

std::size_t parse_size(const std::string& flag, const std::string& v, std::size_t min) {
  std::size_t out = 0;
  const auto* end = v.data() + v.size();
  auto [p, ec] = std::from_chars(v.data(), end, out);
  if (ec != std::errc{} || p != end || out < min) {
    throw std::invalid_argument(flag + ": expected an integer >= " + std::to_string(min) + ", got '" + v + "'");
  }
  return out;
}

double parse_seconds(const std::string& flag, const std::string& v, double min) {
  std::size_t used = 0;
  double out = 0;
  try {
    out = std::stod(v, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used != v.size() || !std::isfinite(out) || out < min) {
    throw std::invalid_argument(flag + ": expected seconds >= " + std::to_string(min) + ", got '" + v + "'");
  }
  return out;
}

}  // namespace

options parse_options(int argc, const char* const* argv) {
  options o;
  for (int i = 1; i < argc; ++i) {
    std::string flag = argv[i];
    std::string value;
    bool has_value = false;
    if (auto eq = flag.find('='); flag.rfind("--", 0) == 0 && eq != std::string::npos) {
      value = flag.substr(eq + 1);
      flag = flag.substr(0, eq);
      has_value = true;
    }
    auto next = [&]() -> const std::string& {
      if (!has_value) {
        if (i + 1 >= argc) throw std::invalid_argument(flag + ": missing value");
        value = argv[++i];
        has_value = true;
      }
      return value;
    };
    if (flag == "--help" || flag == "-h") {
      o.help = true;
    } else if (flag == "--drivers") {
      o.drivers = split(next(), ',');
      o.drivers_explicit = true;
      if (o.drivers.empty()) throw std::invalid_argument("--drivers: empty list");
      for (const auto& d : o.drivers) {
        const auto& k = known_drivers();
        if (std::find(k.begin(), k.end(), d) == k.end()) {
          throw std::invalid_argument("--drivers: unknown driver '" + d + "' (known: async, coroutine, blocking, pgbench, blocking-threads, async-coalesced, pgbench-pipeline, async-pipelined, async-pipelined-lease)");
        }
      }
    } else if (flag == "--pools") {
      o.pools.clear();
      for (const auto& p : split(next(), ',')) o.pools.push_back(parse_size("--pools", p, 1));
      if (o.pools.empty()) throw std::invalid_argument("--pools: empty list");
      o.pools_explicit = true;
    } else if (flag == "--concurrency") {
      o.concurrency = parse_size(flag, next(), 1);
      o.concurrency_explicit = true;
    } else if (flag == "--workload") {
      const std::string v = next();
      if (v != "select" && v != "tpcb") throw std::invalid_argument("--workload: expected select or tpcb, got '" + v + "'");
      o.tpcb = v == "tpcb";
    } else if (flag == "--scale") {
      const std::size_t s = parse_size(flag, next(), 1);
      // pgbench's own bound: aid = 100000 * scale must fit its int column.
      if (s > 20000) throw std::invalid_argument("--scale: at most 20000, got " + std::to_string(s));
      o.scale = static_cast<int>(s);
      o.scale_explicit = true;
    } else if (flag == "--duration") {
      o.duration_s = parse_seconds(flag, next(), 0.1);
    } else if (flag == "--warmup") {
      o.warmup_s = parse_seconds(flag, next(), 0);
    } else if (flag == "--repeat") {
      o.repeat = parse_size(flag, next(), 1);
    } else if (flag == "--loops") {
      o.loops = parse_size(flag, next(), 1);
    } else if (flag == "--grow-from") {
      o.grow_from = parse_size(flag, next(), 1);
    } else if (flag == "--growth-connects") {
      o.growth_connects = parse_size(flag, next(), 1);
    } else if (flag == "--growth-interval") {
      o.growth_interval_ms = parse_size(flag, next(), 0);
    } else if (flag == "--conninfo") {
      o.conninfo = next();
    } else if (flag == "--password-file") {
      o.password_file = next();
    } else if (flag == "--no-prepared") {
      o.prepared = false;
    } else if (flag == "--observer") {
      const std::string v = next();
      if (v != "none" && v != "empty") throw std::invalid_argument("--observer: expected none or empty, got '" + v + "'");
      o.empty_observer = v == "empty";
    } else if (flag == "--peers") {
      o.peers_dir = next();
      if (o.peers_dir.empty()) throw std::invalid_argument("--peers: empty directory");
    } else if (flag == "--sql") {
      o.sql_file = next();
    } else if (flag == "--json") {
      o.json_file = next();
    } else if (flag == "--svg") {
      o.svg_file = next();
    } else if (flag == "--sweep") {
      o.sweep = true;
    } else if (flag == "--sweep-max") {
      o.sweep_max = parse_size(flag, next(), 1);
    } else if (flag == "--server-cores") {
      o.server_cores = parse_size(flag, next(), 1);
    } else if (flag == "--child") {
      o.child = true;
    } else if (flag == "--result-fd") {
      o.result_fd = static_cast<int>(parse_size(flag, next(), 0));
    } else {
      throw std::invalid_argument("unknown flag '" + flag + "' (see --help)");
    }
  }
  if (o.scale_explicit && !o.tpcb) throw std::invalid_argument("--scale applies to --workload tpcb only");
  if (o.tpcb) {
    if (o.sql_file) throw std::invalid_argument("--sql and --workload tpcb exclude each other");
    // The sweep's runs are not followed by the books check every tpcb run needs.
    if (o.sweep) throw std::invalid_argument("--sweep runs the select workload only, not --workload tpcb");
    if (!o.drivers_explicit) o.drivers = tpcb_drivers();
    const auto& t = tpcb_drivers();
    for (const auto& d : o.drivers) {
      if (std::find(t.begin(), t.end(), d) == t.end() && d != "async-pipelined-lease") {
        throw std::invalid_argument("--workload tpcb: driver '" + d +
                                    "' has no tpcb run (async, async-pipelined, async-pipelined-lease, coroutine, blocking, pgbench, "
                                    "pgbench-pipeline)");
      }
    }
  } else {
    for (const auto& d : o.drivers) {
      if (d == "async-pipelined" || d == "async-pipelined-lease")
        throw std::invalid_argument("--drivers: " + d + " runs with --workload tpcb only");
    }
  }
  for (const auto& d : o.drivers) {
    if (!is_peer_driver(d)) continue;
    // The peers carry the built-in select, always as a prepared statement.
    if (o.tpcb || o.sql_file || !o.prepared || o.sweep) {
      throw std::invalid_argument("--drivers: " + d +
                                  " runs the built-in select only (not with --workload tpcb, --sql, --no-prepared or --sweep)");
    }
  }
  // The sweep picks its own pool sizes: a --pools list beside it would be
  // silently ignored, so it is refused.
  if (o.sweep && o.pools_explicit) {
    throw std::invalid_argument("--sweep chooses the pool sizes itself: drop --pools (bound it with --sweep-max)");
  }
  return o;
}

std::size_t clients_for(const options& o, std::size_t pool) {
  return o.tpcb && !o.concurrency_explicit ? pool : o.concurrency;
}

std::vector<std::string> child_arguments(const options& o, const std::string& driver, std::size_t pool, int result_fd) {
  std::vector<std::string> a{"--child",
                             "--drivers", driver,
                             "--pools", std::to_string(pool),
                             "--concurrency", std::to_string(clients_for(o, pool)),
                             "--duration", std::to_string(o.duration_s),
                             "--warmup", std::to_string(o.warmup_s),
                             "--result-fd", std::to_string(result_fd)};
  if (o.loops != 0) {
    a.push_back("--loops");
    a.push_back(std::to_string(o.loops));
  }
  if (!o.prepared) a.push_back("--no-prepared");
  if (o.empty_observer) {
    a.push_back("--observer");
    a.push_back("empty");
  }
  if (o.grow_from != 0) {
    a.push_back("--grow-from");
    a.push_back(std::to_string(o.grow_from));
  }
  if (o.growth_connects) {
    a.push_back("--growth-connects");
    a.push_back(std::to_string(*o.growth_connects));
  }
  if (o.growth_interval_ms) {
    a.push_back("--growth-interval");
    a.push_back(std::to_string(*o.growth_interval_ms));
  }
  if (o.sql_file) {
    a.push_back("--sql");
    a.push_back(*o.sql_file);
  }
  if (o.tpcb) {
    a.push_back("--workload");
    a.push_back("tpcb");
    a.push_back("--scale");
    a.push_back(std::to_string(o.scale));
  }
  return a;
}

std::string read_password_file(const std::string& path) {
  std::ifstream in(path);
  std::string line;
  if (!in || !std::getline(in, line)) throw std::invalid_argument("--password-file: cannot read '" + path + "'");
  if (!line.empty() && line.back() == '\r') line.pop_back();
  if (line.empty()) throw std::invalid_argument("--password-file: the first line of '" + path + "' is empty");
  return line;
}

bool conninfo_has_password(const std::string& conninfo) {
  char* err = nullptr;
  PQconninfoOption* opts = PQconninfoParse(conninfo.c_str(), &err);
  if (err != nullptr) PQfreemem(err);
  bool found = false;
  for (PQconninfoOption* o = opts; o != nullptr && o->keyword != nullptr; ++o)
    found = found || (std::string_view(o->keyword) == "password" && o->val != nullptr && *o->val != '\0');
  if (opts != nullptr) PQconninfoFree(opts);
  // A string libpq cannot parse may still hold one: look for the keyword.
  return found || (opts == nullptr && conninfo.find("password") != std::string::npos);
}

std::string default_peers_dir() {
#ifdef PGPIPE_BENCH_PEERS_DIR
  return PGPIPE_BENCH_PEERS_DIR;
#else
  return "bench/peers";
#endif
}

std::vector<std::string> peer_arguments(const options& o, std::size_t pool) {
  const long hz = sysconf(_SC_CLK_TCK);
  auto num = [](double v) {
    std::ostringstream s;
    s << v;
    return s.str();
  };
  return {"--pool", std::to_string(pool), "--concurrency", std::to_string(clients_for(o, pool)), "--warmup",
          num(o.warmup_s), "--duration", num(o.duration_s), "--clk-tck", std::to_string(hz > 0 ? hz : 100)};
}

std::string help_text() {
  return R"(pgpipe-bench: compare pgpipe's drivers (and pgbench) at several pool sizes.

Usage: pgpipe-bench [flags]

With no --conninfo (and neither PGHOST nor PGSERVICE set) it starts a throwaway
PostgreSQL 15 (SCRAM, free port, removed at exit), loads the table
san_pham(ma text primary key, ten text, so_luong int) with 100,000 rows and runs
  select ten, so_luong from san_pham where ma = $1      (random keys)
from C logical clients in a closed loop, once per driver x pool size, each run
in its own child process. Results: a Markdown table on stdout (medians over
rounds) with a verdict line per pool size; progress on stderr.

Flags:
  --drivers LIST     default async,coroutine,blocking,pgbench (pgbench is
                     skipped when not installed, unless named here)
                       async      callbacks on the pipelined async_client
                       coroutine  one C++20 coroutine per logical client
                       blocking   blocking_pool, calls run on a blocking_executor
                                  with one thread per pool slot
                       pgbench    PostgreSQL's pgbench, -M prepared, one client
                                  per connection (no pipelining)
                     opt-in:
                       blocking-threads  one OS thread per logical client
                                  calling blocking_pool directly (thread per
                                  request): threads grow with --concurrency
                       async-coalesced  async with every query marked
                                  read-only on read-only sessions: up to
                                  10 reads share one Sync
                       pgbench-pipeline  pgbench, 10 queries between
                                  \startpipeline and \endpipeline (one Sync
                                  per 10); q/s = 10 x its tps
                       tokio-postgres, jdbc  other clients (Rust pipelined,
                                  Java pgjdbc + HikariCP with a thread per
                                  query), programs in --peers DIR: build them
                                  with bench/peers/build first
  --pools LIST       pool sizes (connections), default 20,50,200
  --concurrency N    logical clients in a closed loop, default 500
                     (pgbench runs one client per connection: its concurrency is the pool)
  --duration S       measured seconds per run, default 10
  --warmup S         seconds of warm-up, counted from when the pool has every
                     connection open and a first query completed, default 2
  --repeat N         rounds; drivers alternate order each round (A B, B A), default 1
  --loops N          event loops (threads) of the async driver, default: CPU count
  --grow-from N      async driver: open N connections up front (min_size) and let
                     the pool grow to the pool size under load; the child prints
                     the growth's duration, q/s and loops' loop_lag_max to stderr
  --growth-connects N  async driver: pool_params::growth_connects (paced growth)
  --growth-interval MS async driver: pool_params::growth_interval in ms
  --peers DIR        where the peer drivers live (DIR/<driver>/run), default
                     the source tree's bench/peers
  --conninfo STR     use this server (libpq key=value or URI); the table is
                     created and loaded when missing. PGHOST/PGSERVICE also select
                     an existing server. Passwords are never printed. Keep the
                     password out of STR: a command line is readable by every
                     local user (ps, /proc). Give it as PGPASSWORD in the
                     environment, in ~/.pgpass (PGPASSFILE), or with
                     --password-file; a password in STR draws a warning.
  --password-file F  read the server password from the first line of file F
                     (keep it mode 0600) and pass it to libpq as PGPASSWORD
  --no-prepared      unnamed statements only (Parse/Bind/Execute per query,
                     still pipelined, typed binary parameters where the driver
                     sends them): pool_params::prepared_statements = false for
                     async, coroutine and blocking, pgbench -M extended. Needed
                     behind PgBouncer in transaction pool mode, whose server
                     connections change between transactions.
  --observer KIND    none (default) or empty: async and coroutine drivers run
                     with a pool_params::observer that does nothing, to measure
                     the cost of installing one
  --workload KIND    select (default: the statement above, or --sql) or tpcb:
                     pgbench's TPC-B-like transaction (update pgbench_accounts,
                     select abalance, update pgbench_tellers, update
                     pgbench_branches, insert into pgbench_history; random
                     aid/tid/bid/delta) on pgbench's tables, created at --scale
                     when missing (existing ones are used). Drivers (default:
                     all): async (async_transaction, each statement awaited),
                     async-pipelined (async_transaction_batch: BEGIN, the five
                     statements and COMMIT in one write, one Sync), coroutine
                     (BEGIN ... COMMIT by hand on a lease, each awaited),
                     blocking (blocking_pool::transaction), pgbench (its
                     tpcb-like script), pgbench-pipeline (the same inside
                     \startpipeline ... \endpipeline); opt-in:
                     async-pipelined-lease (the batch on a lease each client
                     holds for the whole run, as pgbench holds its
                     connection; clients <= pool). q/s is then
                     transactions/s; one logical client per connection unless
                     --concurrency is given. After every run the books must
                     balance: sum(abalance), sum(tbalance), sum(bbalance) and
                     sum(pgbench_history.delta) all moved by the same amount,
                     else the run failed (and the exit status is 1). The
                     embedded server runs with synchronous_commit = off in this
                     workload, so the clients and not fsync are measured; set
                     it on your own server for the same comparison.
  --scale N          tpcb: pgbench's scale (100,000 accounts, 10 tellers and 1
                     branch per unit), default 4
  --sql FILE         run your own statement instead (format below); the report
                     names the pool size with the best throughput per driver
  --json FILE        write every run (rounds included) as JSON
  --svg FILE         write a chart: queries/s and peak RSS against pool size
  --sweep            pool-size advisor: run each driver at pool 1, 2, 4, 8, ...
                     (up to --sweep-max) until its throughput has clearly
                     fallen, then print per driver the smallest pool within 5%
                     of its best q/s, with p99, client threads, peak RSS and
                     server CPU, beside the rule of thumb (2 x server cores).
                     Works with --sql, --drivers, --repeat, --svg (the answer
                     is ringed on the chart). Not with --pools.
  --sweep-max N      largest pool --sweep tries, default 64
  --server-cores N   the server's cores, for the rule of thumb when the server
                     is not on this machine (default: this machine's CPUs when
                     the server is local)
  --help             this text

--sql FILE format: '--' comment lines, of which lines '-- param: ...' declare
$1, $2, ... in order; every other line is the statement (one statement):
  -- param: int LO HI          random integer in [LO, HI]
  -- param: pick A,B,C         one of the listed strings, uniformly
  -- param: format FMT LO HI   a random integer in [LO, HI] formatted with FMT,
                               which holds one %d or %0Nd, e.g. SP%06d -> SP000042
Example (the built-in workload):
  -- param: format SP%06d 1 100000
  select ten, so_luong from san_pham where ma = $1
Parameters are sent in text format without a type, so the server infers each
one from the statement (cast in the SQL when it cannot: $1::int). For pgbench
they become \set variables ('pick' and 'format' are built in SQL from them).
)";
}

}  // namespace pgpipe::bench
