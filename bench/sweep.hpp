// --sweep: the pool-size advisor's decisions, kept apart from the runs so
// they can be tested without a server. Which pool sizes to try (1, 2, 4, ...
// up to a limit), when a driver's sweep stops (its throughput has clearly
// fallen past the best), and which pool is the answer (the smallest within a
// tolerance of the best throughput: the connections beyond it buy nothing).
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

namespace pgpipe::bench {

struct sweep_params {
  std::size_t max_pool = 64;
  /// A pool is "as good as the best" when its q/s is within this fraction of
  /// the best (0.05: 5%).
  double tolerance = 0.05;
  /// One point this far below the best (0.15: 15%) has clearly fallen: stop.
  /// Run-to-run noise on a shared machine is a few percent, so a single
  /// point that much lower is past the knee, not noise.
  double clear_drop = 0.15;
  /// Or this many points in a row below the tolerance band: a slower,
  /// steady decline (more backends than cores) that will not turn back up.
  std::size_t below_in_a_row = 2;
};

/// 1, 2, 4, ... while below max_pool, then max_pool itself (1..20: 1 2 4 8 16 20).
std::vector<std::size_t> sweep_ladder(std::size_t max_pool);

/// One driver's sweep: ask next_pool(), run it, record() the outcome, until
/// next_pool() is empty; then answer(). Pools are recorded in ladder order.
class sweep_plan {
 public:
  explicit sweep_plan(sweep_params p);

  /// The next pool size to run, or nullopt when the sweep is over.
  std::optional<std::size_t> next_pool() const;
  /// The median q/s at `pool` (the one next_pool() returned), or a failed run
  /// (ok = false, with why), which ends the sweep: a larger pool would fail
  /// the same way (max_connections, out of memory) or waste the time.
  void record(std::size_t pool, double qps, bool ok, const std::string& why = {});

  struct point {
    std::size_t pool = 0;
    double qps = 0;
  };
  struct answer_t {
    std::size_t pool = 0;   ///< smallest pool within tolerance of the best
    double qps = 0;         ///< its q/s
    std::size_t best_pool = 0;
    double best_qps = 0;
  };
  /// nullopt when no run succeeded.
  std::optional<answer_t> answer() const;
  /// Why the sweep ended: "reached the limit (64)", "throughput fell 23% below
  /// the best (pool 8)", "2 pools in a row below the best by more than 5%",
  /// "run failed at pool 32: ..."; empty while it goes on.
  const std::string& stop_reason() const noexcept { return stop_reason_; }
  const std::vector<point>& points() const noexcept { return points_; }

 private:
  sweep_params p_;
  std::vector<std::size_t> ladder_;
  std::size_t next_ = 0;  // index into ladder_
  std::vector<point> points_;
  std::string stop_reason_;
};

/// The rule of thumb the answer is set against: connections = 2 x server
/// cores (PostgreSQL wiki's starting point, leaving out the spindle term).
inline std::size_t rule_of_thumb_pool(std::size_t server_cores) { return 2 * server_cores; }

}  // namespace pgpipe::bench
