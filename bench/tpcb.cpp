#include "tpcb.hpp"

#include <libpq-fe.h>

#include <memory>
#include <stdexcept>

namespace pgpipe::bench {
namespace {

struct conn_deleter {
  void operator()(PGconn* c) const noexcept { PQfinish(c); }
};
struct result_deleter {
  void operator()(PGresult* r) const noexcept { PQclear(r); }
};
using conn_ptr = std::unique_ptr<PGconn, conn_deleter>;

conn_ptr connect(const std::string& conninfo, const char* why) {
  conn_ptr conn(PQconnectdb(conninfo.c_str()));
  if (PQstatus(conn.get()) != CONNECTION_OK) {
    // libpq's messages name host and user, never the password.
    throw std::runtime_error(std::string("cannot connect to ") + why + ": " + PQerrorMessage(conn.get()));
  }
  return conn;
}

// Runs `sql`; returns the first row's fields (empty when no rows).
std::vector<std::string> run(PGconn* conn, const std::string& sql, const char* why) {
  std::unique_ptr<PGresult, result_deleter> r(PQexec(conn, sql.c_str()));
  const auto st = PQresultStatus(r.get());
  if (st != PGRES_COMMAND_OK && st != PGRES_TUPLES_OK) {
    throw std::runtime_error(std::string(why) + ": " + PQresultErrorMessage(r.get()));
  }
  std::vector<std::string> row;
  if (PQntuples(r.get()) > 0) {
    for (int c = 0; c < PQnfields(r.get()); ++c) row.emplace_back(PQgetvalue(r.get(), 0, c));
  }
  return row;
}

}  // namespace

tpcb_draw draw_tpcb(int scale, rng& r) {
  // pgbench: aid in [1, 100000 * scale], bid in [1, scale], tid in
  // [1, 10 * scale], delta in [-5000, 5000], each uniform and independent.
  const auto s = static_cast<std::int64_t>(scale);
  tpcb_draw d;
  d.aid = std::uniform_int_distribution<std::int64_t>(1, tpcb_accounts_per_scale * s)(r);
  d.bid = std::uniform_int_distribution<std::int64_t>(1, s)(r);
  d.tid = std::uniform_int_distribution<std::int64_t>(1, tpcb_tellers_per_scale * s)(r);
  d.delta = std::uniform_int_distribution<std::int64_t>(-5000, 5000)(r);
  return d;
}

workload tpcb_workload(int scale) {
  workload w;
  w.name = "tpcb (pgbench tpcb-like, scale " + std::to_string(scale) + ")";
  w.sql = "begin; update pgbench_accounts ...; select abalance ...; update pgbench_tellers ...; "
          "update pgbench_branches ...; insert into pgbench_history ...; commit";
  w.tpcb = true;
  w.scale = scale;
  return w;
}

bool ensure_tpcb_tables(const std::string& conninfo, int scale) {
  auto conn = connect(conninfo, "create pgbench's tables");
  const auto present = run(conn.get(),
                           "select count(*) from pg_class where relname in "
                           "('pgbench_accounts', 'pgbench_branches', 'pgbench_tellers', 'pgbench_history') "
                           "and relkind = 'r' and pg_table_is_visible(oid)",
                           "looking for pgbench's tables");
  if (present.at(0) == "4") {
    const auto branches = run(conn.get(), "select count(*) from pgbench_branches", "reading pgbench_branches");
    if (branches.at(0) != std::to_string(scale)) {
      throw std::runtime_error("pgbench's tables exist at scale " + branches.at(0) + ", not " +
                               std::to_string(scale) + ": pass --scale " + branches.at(0) +
                               " or drop them (pgbench -i -I d)");
    }
    return false;
  }
  if (present.at(0) != "0") {
    throw std::runtime_error("only " + present.at(0) +
                             " of pgbench's four tables exist: drop them (pgbench -i -I d) or create all four");
  }
  const std::string s = std::to_string(scale);
  // One transaction: an interrupted load leaves nothing half made. Layout
  // and fill factor as pgbench -i (its server-side generation, -I dtGvp).
  run(conn.get(), "begin", "creating pgbench's tables");
  run(conn.get(), "create table pgbench_history (tid int, bid int, aid int, delta int, mtime timestamp, filler char(22))",
      "creating pgbench_history");
  run(conn.get(), "create table pgbench_tellers (tid int not null, bid int, tbalance int, filler char(84)) "
                  "with (fillfactor = 100)", "creating pgbench_tellers");
  run(conn.get(), "create table pgbench_accounts (aid int not null, bid int, abalance int, filler char(84)) "
                  "with (fillfactor = 100)", "creating pgbench_accounts");
  run(conn.get(), "create table pgbench_branches (bid int not null, bbalance int, filler char(88)) "
                  "with (fillfactor = 100)", "creating pgbench_branches");
  run(conn.get(), "insert into pgbench_branches (bid, bbalance) select bid, 0 from generate_series(1, " + s + ") bid",
      "filling pgbench_branches");
  run(conn.get(), "insert into pgbench_tellers (tid, bid, tbalance) select tid, (tid - 1) / 10 + 1, 0 "
                  "from generate_series(1, " + std::to_string(tpcb_tellers_per_scale * scale) + ") tid",
      "filling pgbench_tellers");
  run(conn.get(), "insert into pgbench_accounts (aid, bid, abalance, filler) select aid, (aid - 1) / 100000 + 1, 0, '' "
                  "from generate_series(1, " + std::to_string(tpcb_accounts_per_scale * scale) + ") aid",
      "filling pgbench_accounts");
  run(conn.get(), "alter table pgbench_branches add primary key (bid)", "indexing pgbench_branches");
  run(conn.get(), "alter table pgbench_tellers add primary key (tid)", "indexing pgbench_tellers");
  run(conn.get(), "alter table pgbench_accounts add primary key (aid)", "indexing pgbench_accounts");
  run(conn.get(), "commit", "creating pgbench's tables");
  run(conn.get(), "vacuum analyze pgbench_branches, pgbench_tellers, pgbench_accounts, pgbench_history",
      "vacuuming pgbench's tables");
  return true;
}

tpcb_books read_tpcb_books(const std::string& conninfo) {
  auto conn = connect(conninfo, "check the books");
  const auto row = run(conn.get(),
                       "select coalesce((select sum(abalance) from pgbench_accounts), 0), "
                       "coalesce((select sum(tbalance) from pgbench_tellers), 0), "
                       "coalesce((select sum(bbalance) from pgbench_branches), 0), "
                       "coalesce((select sum(delta) from pgbench_history), 0)",
                       "reading the books");
  tpcb_books b;
  b.accounts = std::stoll(row.at(0));
  b.tellers = std::stoll(row.at(1));
  b.branches = std::stoll(row.at(2));
  b.history = std::stoll(row.at(3));
  return b;
}

std::string tpcb_books_mismatch(const tpcb_books& before, const tpcb_books& after) {
  const std::int64_t a = after.accounts - before.accounts;
  const std::int64_t t = after.tellers - before.tellers;
  const std::int64_t b = after.branches - before.branches;
  const std::int64_t h = after.history - before.history;
  if (a == t && t == b && b == h) return {};
  return "the books do not balance: during the run sum(abalance) moved by " + std::to_string(a) +
         ", sum(tbalance) by " + std::to_string(t) + ", sum(bbalance) by " + std::to_string(b) +
         ", sum(history.delta) by " + std::to_string(h);
}

std::string pgbench_tpcb_script(int scale, bool pipelined) {
  const auto s = static_cast<std::int64_t>(scale);
  std::string out;
  out += "\\set aid random(1, " + std::to_string(tpcb_accounts_per_scale * s) + ")\n";
  out += "\\set bid random(1, " + std::to_string(s) + ")\n";
  out += "\\set tid random(1, " + std::to_string(tpcb_tellers_per_scale * s) + ")\n";
  out += "\\set delta random(-5000, 5000)\n";
  if (pipelined) out += "\\startpipeline\n";
  out += "BEGIN;\n"
         "UPDATE pgbench_accounts SET abalance = abalance + :delta WHERE aid = :aid;\n"
         "SELECT abalance FROM pgbench_accounts WHERE aid = :aid;\n"
         "UPDATE pgbench_tellers SET tbalance = tbalance + :delta WHERE tid = :tid;\n"
         "UPDATE pgbench_branches SET bbalance = bbalance + :delta WHERE bid = :bid;\n"
         "INSERT INTO pgbench_history (tid, bid, aid, delta, mtime) VALUES (:tid, :bid, :aid, :delta, CURRENT_TIMESTAMP);\n"
         "END;\n";
  if (pipelined) out += "\\endpipeline\n";
  return out;
}

}  // namespace pgpipe::bench
