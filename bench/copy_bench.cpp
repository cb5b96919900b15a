// pgpipe-copy-bench: COPY against batched INSERT for loading N rows (default
// 1M) into copy_bench(id int, name text), in both drivers, on one connection
// each. Starts its own throwaway PostgreSQL (as pgpipe-bench does) unless
// --conninfo is given. Every method loads the same rows in one transaction
// (COPY is one statement; the INSERT methods run inside BEGIN...COMMIT), so
// what differs is only the way rows travel.
//
// Methods, run in A B ... B A order for each round, medians reported:
//   async-copy       lease.copy_in, 64 KiB chunks
//   async-insert1000 multi-row INSERT of 1,000 rows per statement, 4 pipelined
//   async-insert1    single-row INSERT, prepared, 256 pipelined
//   blocking-copy    pgpipe::blocking_copy_in on a blocking lease
//   blocking-insert1000  multi-row INSERT of 1,000 rows per statement
//   async-typed-copy     async_copy_writer<bench_row>: the same rows as structs
//   blocking-typed-copy  blocking_copy_writer<bench_row>
// The typed methods build each row as a struct (4,096 at a time, as a
// producer would) where the raw ones format its text: both make the name
// string, so the difference is the typed encoding and escaping.
//
//   pgpipe-copy-bench [--rows N] [--rounds R] [--conninfo STR] [--skip-insert1] [--copy-only]
#include <pgpipe/async_client.hpp>
#include <pgpipe/async_typed_copy.hpp>
#include <pgpipe/blocking_copy.hpp>
#include <pgpipe/blocking_pool.hpp>
#include <pgpipe/blocking_typed_copy.hpp>

#include "devcluster/devcluster.hpp"

#include <boost/asio/post.hpp>
#include <boost/asio/use_future.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <future>
#include <iostream>
#include <map>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <vector>

namespace {

namespace asio = boost::asio;
using clock_type = std::chrono::steady_clock;

struct config {
  int rows = 1'000'000;
  int rounds = 3;
  bool insert1 = true;
  bool copy_only = false;
  std::string conninfo;
};

struct bench_row {
  std::int32_t id = 0;
  std::string name;
};

// Rows [from, from + n) as structs, the typed methods' producer.
void make_rows(std::vector<bench_row>& out, int from, int n) {
  out.resize(static_cast<std::size_t>(n));
  for (int k = 0; k < n; ++k) {
    out[static_cast<std::size_t>(k)].id = from + k;
    out[static_cast<std::size_t>(k)].name = "name number " + std::to_string(from + k);
  }
}
constexpr int typed_batch = 4096;

void append_row(std::string& out, int i) {
  out += std::to_string(i);
  out += "\tname number ";
  out += std::to_string(i);
  out += '\n';
}

// "insert into copy_bench values (i,'name number i'),..." for [from, to).
std::string multi_insert(int from, int to) {
  std::string sql = "insert into copy_bench(id, name) values ";
  for (int i = from; i < to; ++i) {
    if (i != from) sql += ',';
    sql += '(';
    sql += std::to_string(i);
    sql += ",'name number ";
    sql += std::to_string(i);
    sql += "')";
  }
  return sql;
}

// use_future: a failure throws pgpipe::error with the server's diagnostics.
void q(pgpipe::async_lease& l, const std::string& sql) { (void)l.async_query(sql, asio::use_future).get(); }

void async_copy(pgpipe::async_lease& l, int rows) {
  auto in = l.copy_in("copy copy_bench(id, name) from stdin");
  std::string chunk;
  for (int i = 0; i < rows; ++i) {
    append_row(chunk, i);
    if (chunk.size() >= 64 * 1024) {
      in.async_write(chunk, asio::use_future).get();
      chunk.clear();
    }
  }
  in.async_write(chunk, asio::use_future).get();
  (void)in.async_finish(asio::use_future).get();
}

// Keeps `window` statements in flight on the lease until `count` are done.
// make(k) gives the k-th statement's async_query call.
void pipelined(pgpipe::async_lease& l, int count, int window,
               const std::function<void(int, std::function<void(std::error_code, pgpipe::result)>)>& start) {
  struct state {
    std::mutex m;
    int next = 0;
    int done = 0;
    std::string error;
    std::promise<void> finished;
  };
  auto st = std::make_shared<state>();
  std::function<void()> launch;
  auto on_done = [st, count, &launch](std::error_code ec, pgpipe::result r) {
    bool last = false;
    {
      std::lock_guard lk(st->m);
      if (ec && st->error.empty()) st->error = ec.message() + " " + r.diag().to_string();
      last = ++st->done == count;
    }
    if (last) {
      st->finished.set_value();
      return;
    }
    launch();
  };
  launch = [st, count, &start, on_done] {
    int k = 0;
    {
      std::lock_guard lk(st->m);
      if (st->next >= count) return;
      k = st->next++;
    }
    start(k, on_done);
  };
  auto f = st->finished.get_future();
  // The lease is used from its own loop only (one thread at a time).
  asio::post(l.get_executor(), [&] {
    for (int i = 0; i < window && i < count; ++i) launch();
  });
  f.get();
  if (!st->error.empty()) throw std::runtime_error(st->error);
}

void async_insert1000(pgpipe::async_lease& l, int rows) {
  q(l, "begin");
  const int stmts = (rows + 999) / 1000;
  pipelined(l, stmts, 4, [&](int k, auto done) {
    l.async_query(multi_insert(k * 1000, std::min(rows, (k + 1) * 1000)), std::move(done));
  });
  q(l, "commit");
}

void async_insert1(pgpipe::async_lease& l, int rows) {
  q(l, "begin");
  pipelined(l, rows, 256, [&](int k, auto done) {
    l.async_query("insert into copy_bench(id, name) values ($1, $2)", k, "name number " + std::to_string(k),
                  std::move(done));
  });
  q(l, "commit");
}

void blocking_copy(pgpipe::blocking_lease& l, int rows) {
  pgpipe::blocking_copy_in in(l, "copy copy_bench(id, name) from stdin");
  std::string chunk;
  for (int i = 0; i < rows; ++i) {
    append_row(chunk, i);
    if (chunk.size() >= 64 * 1024) {
      in.write(chunk);
      chunk.clear();
    }
  }
  in.write(chunk);
  in.finish();
}

void async_typed_copy(pgpipe::async_lease& l, int rows) {
  pgpipe::async_copy_writer<bench_row> w(l.copy_in("copy copy_bench(id, name) from stdin"));
  std::vector<bench_row> batch;
  for (int from = 0; from < rows; from += typed_batch) {
    make_rows(batch, from, std::min(typed_batch, rows - from));
    w.async_write_rows(batch, asio::use_future).get();
  }
  (void)w.async_finish(asio::use_future).get();
}

void blocking_typed_copy(pgpipe::blocking_lease& l, int rows) {
  pgpipe::blocking_copy_writer<bench_row> w(l, "copy copy_bench(id, name) from stdin");
  std::vector<bench_row> batch;
  for (int from = 0; from < rows; from += typed_batch) {
    make_rows(batch, from, std::min(typed_batch, rows - from));
    w.write_rows(batch);
  }
  w.finish();
}

void blocking_insert1000(pgpipe::blocking_lease& l, int rows) {
  pqxx::work tx{*l};
  for (int from = 0; from < rows; from += 1000) tx.exec(multi_insert(from, std::min(rows, from + 1000)));
  tx.commit();
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

int run(const config& c) {
  std::unique_ptr<pgpipe::devcluster::cluster> cluster;
  std::string conninfo = c.conninfo;
  if (conninfo.empty()) {
    std::cerr << "pgpipe-copy-bench: starting a throwaway PostgreSQL...\n";
    cluster = std::make_unique<pgpipe::devcluster::cluster>();
    cluster->exec("create database pgpipe_copy_bench");
    conninfo = cluster->conninfo("pgpipe_copy_bench");
  }
  pgpipe::pool_params p;
  p.conninfo = conninfo;
  p.max_size = 1;
  p.query_timeout = std::chrono::minutes(10);
  pgpipe::async_client client(p, {.loops = 1});
  pgpipe::blocking_pool pool(p);
  pgpipe::async_lease lease = client.async_acquire(asio::use_future).get();
  auto bl = pool.acquire();
  q(lease, "drop table if exists copy_bench");
  q(lease, "create table copy_bench(id int, name text)");

  struct method {
    std::string name;
    std::function<void()> run;
  };
  std::vector<method> methods = {
      {"async-copy", [&] { async_copy(lease, c.rows); }},
      {"async-typed-copy", [&] { async_typed_copy(lease, c.rows); }},
      {"blocking-copy", [&] { blocking_copy(bl, c.rows); }},
      {"blocking-typed-copy", [&] { blocking_typed_copy(bl, c.rows); }},
  };
  if (!c.copy_only) {
    methods.push_back({"async-insert1000", [&] { async_insert1000(lease, c.rows); }});
    methods.push_back({"blocking-insert1000", [&] { blocking_insert1000(bl, c.rows); }});
    if (c.insert1) methods.push_back({"async-insert1", [&] { async_insert1(lease, c.rows); }});
  }

  std::map<std::string, std::vector<double>> seconds;
  for (int round = 0; round < c.rounds; ++round) {
    std::vector<method*> order;
    for (auto& m : methods) order.push_back(&m);
    if (round % 2 == 1) std::reverse(order.begin(), order.end());  // A B ... B A
    for (method* m : order) {
      q(lease, "truncate copy_bench");
      const auto t0 = clock_type::now();
      m->run();
      const double s = std::chrono::duration<double>(clock_type::now() - t0).count();
      const pgpipe::result r = lease.async_query("select count(*) from copy_bench", asio::use_future).get();
      if (r.value<std::int64_t>() != c.rows)
        throw std::runtime_error(m->name + " loaded " + std::to_string(r.value<std::int64_t>()) + " rows");
      seconds[m->name].push_back(s);
      std::fprintf(stderr, "round %d %-20s %.3f s\n", round + 1, m->name.c_str(), s);
    }
  }
  const double copy_async = median(seconds["async-copy"]);
  std::printf("| method | median s (%d rounds) | rows/s | time vs async-copy |\n|---|---|---|---|\n", c.rounds);
  for (auto& m : methods) {
    const double med = median(seconds[m.name]);
    std::printf("| %s | %.3f | %.0f | %.2fx |\n", m.name.c_str(), med, c.rows / med, med / copy_async);
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  config c;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) throw std::invalid_argument(a + " needs a value");
      return argv[++i];
    };
    try {
      if (a == "--rows") {
        c.rows = std::stoi(value());
      } else if (a == "--rounds") {
        c.rounds = std::stoi(value());
      } else if (a == "--conninfo") {
        c.conninfo = value();
      } else if (a == "--skip-insert1") {
        c.insert1 = false;
      } else if (a == "--copy-only") {
        c.copy_only = true;
      } else {
        std::cerr << "usage: pgpipe-copy-bench [--rows N] [--rounds R] [--conninfo STR] [--skip-insert1] [--copy-only]\n";
        return 2;
      }
    } catch (const std::exception& e) {
      std::cerr << "pgpipe-copy-bench: " << e.what() << "\n";
      return 2;
    }
  }
  if (c.rows <= 0 || c.rounds <= 0) {
    std::cerr << "pgpipe-copy-bench: --rows and --rounds must be positive\n";
    return 2;
  }
  try {
    return run(c);
  } catch (const std::exception& e) {
    std::cerr << "pgpipe-copy-bench: " << e.what() << "\n";
    return 1;
  }
}
