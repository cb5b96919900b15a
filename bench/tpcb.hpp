// The TPC-B-like workload (pgbench's built-in "tpcb-like"): pgbench's four
// tables at a scale, the five statements of one transaction with their
// random keys, pgbench's own script for it, and the books every run must
// balance afterwards.
#pragma once

#include "workload.hpp"

#include <array>
#include <cstdint>
#include <string>

namespace pgpipe::bench {

/// pgbench's rows per scale unit.
inline constexpr std::int64_t tpcb_accounts_per_scale = 100'000;
inline constexpr std::int64_t tpcb_tellers_per_scale = 10;

/// The statements of one transaction, in pgbench's order, with their
/// parameters ($1...) in the order tpcb_args gives them.
inline constexpr std::array<const char*, 5> tpcb_statements{
    "update pgbench_accounts set abalance = abalance + $1 where aid = $2",
    "select abalance from pgbench_accounts where aid = $1",
    "update pgbench_tellers set tbalance = tbalance + $1 where tid = $2",
    "update pgbench_branches set bbalance = bbalance + $1 where bid = $2",
    "insert into pgbench_history (tid, bid, aid, delta, mtime) values ($1, $2, $3, $4, current_timestamp)",
};

/// One transaction's random keys and amount, as pgbench draws them.
struct tpcb_draw {
  std::int64_t aid = 0, bid = 0, tid = 0, delta = 0;
};
tpcb_draw draw_tpcb(int scale, rng& r);

/// The workload record of --workload tpcb (its `sql` is for the report).
workload tpcb_workload(int scale);

/// Creates pgbench's tables at `scale` when they are missing (as
/// `pgbench -i -s scale` does: every balance 0, no history), in one
/// transaction. Existing tables are used as they are when their scale
/// matches; a different scale is an error naming both (std::runtime_error).
/// Returns true when it created them.
bool ensure_tpcb_tables(const std::string& conninfo, int scale);

/// sum(abalance), sum(tbalance), sum(bbalance), sum(history.delta).
struct tpcb_books {
  std::int64_t accounts = 0, tellers = 0, branches = 0, history = 0;
};
tpcb_books read_tpcb_books(const std::string& conninfo);

/// "" when the four sums moved by the same amount from `before` to `after`
/// (every committed transaction adds its delta to each, and a rolled-back
/// one to none); else what does not balance.
std::string tpcb_books_mismatch(const tpcb_books& before, const tpcb_books& after);

/// pgbench's tpcb-like script with the keys drawn for `scale`; pipelined:
/// the whole transaction between \startpipeline and \endpipeline.
std::string pgbench_tpcb_script(int scale, bool pipelined);

}  // namespace pgpipe::bench
