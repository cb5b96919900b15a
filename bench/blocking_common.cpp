#include "blocking_common.hpp"

#include "query_args.hpp"

#include <algorithm>
#include <stdexcept>

namespace pgpipe::bench {

pool_params blocking_pool_params(const driver_params& p) {
  pool_params pp;
  pp.conninfo = p.conninfo;
  pp.max_size = p.pool;
  pp.min_size = p.pool;  // every connection opened up front, as the other drivers do
  pp.prepared_statements = p.prepared;
  // As for the async driver: every logical client may be waiting at once.
  pp.max_queued = std::max<std::size_t>(pp.max_queued, p.concurrency + 100);
  return pp;
}

pgpipe::result exec_n(blocking_pool& pool, const std::string& sql, const std::vector<std::string>& a) {
  static_assert(max_params == 8, "one case per count");
  switch (a.size()) {
    case 0: return pool.exec(sql);
    case 1: return pool.exec(sql, a[0]);
    case 2: return pool.exec(sql, a[0], a[1]);
    case 3: return pool.exec(sql, a[0], a[1], a[2]);
    case 4: return pool.exec(sql, a[0], a[1], a[2], a[3]);
    case 5: return pool.exec(sql, a[0], a[1], a[2], a[3], a[4]);
    case 6: return pool.exec(sql, a[0], a[1], a[2], a[3], a[4], a[5]);
    case 7: return pool.exec(sql, a[0], a[1], a[2], a[3], a[4], a[5], a[6]);
    case 8: return pool.exec(sql, a[0], a[1], a[2], a[3], a[4], a[5], a[6], a[7]);
    default: throw std::invalid_argument("at most 8 parameters");
  }
}

void record(measurement& m, bench_clock::time_point started, std::error_code ec, const std::string& bad) {
  if (!ec && !bad.empty()) {
    m.end_query_failed(started, bad);
  } else {
    m.end_query(started, ec);
  }
}

}  // namespace pgpipe::bench
