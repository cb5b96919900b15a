#include "async_common.hpp"

#include <algorithm>
#include <atomic>

namespace pgpipe::bench {

pool_params async_pool_params(const driver_params& p) {
  pool_params pp;
  pp.conninfo = p.conninfo;
  pp.max_size = p.pool;
  pp.min_size = p.grow_from != 0 ? std::min(p.grow_from, p.pool) : p.pool;
  pp.prepared_statements = p.prepared;
  if (p.growth_connects) pp.growth_connects = *p.growth_connects;
  if (p.growth_interval_ms) pp.growth_interval = std::chrono::milliseconds(*p.growth_interval_ms);
  // The observer's cost alone: both virtual calls do nothing.
  if (p.empty_observer) pp.observer = std::make_shared<pgpipe::query_observer>();
  // 10,000 clients at pool 20 leave 10,000 - 20 * pipeline_depth requests
  // waiting in the pool: they must queue, not fail.
  pp.max_queued = std::max<std::size_t>(pp.max_queued, p.concurrency + 100);
  // async-coalesced: the lookup is a read; on read-only sessions marked reads share Syncs.
  pp.read_only_sessions = p.read_only;
  return pp;
}

bench::rng& thread_rng() {
  static std::atomic<std::uint64_t> next_seed{1};
  thread_local bench::rng r(0x9e3779b97f4a7c15ULL * next_seed.fetch_add(1, std::memory_order_relaxed));
  return r;
}

const std::vector<std::string>& draw_args(const workload& w) {
  thread_local std::vector<std::string> args;
  args.resize(w.params.size());
  auto& random = thread_rng();
  for (std::size_t k = 0; k < args.size(); ++k) args[k] = draw(w.params[k], random);
  return args;
}

std::string consume(const pgpipe::result& r, bool builtin) {
  try {
    if (builtin) {
      if (r.size() != 1) return "wrong_row_count";
      const auto row = r[0];
      const auto ten = row.get<std::string_view>(0);
      const auto so_luong = row.get<int>(1);
      // Uses both values so the reads cannot be optimised away.
      return ten.empty() && so_luong < 0 ? "unexpected_value" : "";
    }
    std::size_t bytes = 0;
    for (std::size_t i = 0; i < r.size(); ++i) {
      const auto row = r[i];
      for (std::size_t c = 0; c < row.size(); ++c) bytes += row[c].text().size();
    }
    return bytes == static_cast<std::size_t>(-1) ? "unexpected_value" : "";
  } catch (const pgpipe::error&) {
    return "conversion_error";
  }
}

}  // namespace pgpipe::bench
