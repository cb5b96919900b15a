// Policy of the sweep (see sweep.hpp). Doubling the pool keeps the number of
// runs logarithmic in the limit: the knee of a throughput curve is found to
// within a factor of two, which is as precise as a sizing rule needs to be
// on a machine whose load varies between runs.
#include "sweep.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace pgpipe::bench {

std::vector<std::size_t> sweep_ladder(std::size_t max_pool) {
  if (max_pool == 0) throw std::invalid_argument("sweep: the pool limit must be at least 1");
  std::vector<std::size_t> out;
  for (std::size_t p = 1; p < max_pool; p *= 2) out.push_back(p);
  out.push_back(max_pool);
  return out;
}

sweep_plan::sweep_plan(sweep_params p) : p_(p), ladder_(sweep_ladder(p.max_pool)) {}

std::optional<std::size_t> sweep_plan::next_pool() const {
  if (!stop_reason_.empty() || next_ >= ladder_.size()) return std::nullopt;
  return ladder_[next_];
}

void sweep_plan::record(std::size_t pool, double qps, bool ok, const std::string& why) {
  if (!next_pool() || pool != ladder_[next_]) {
    throw std::logic_error("sweep: recorded pool " + std::to_string(pool) + " is not the one asked for");
  }
  ++next_;
  if (!ok) {
    stop_reason_ = "run failed at pool " + std::to_string(pool) + (why.empty() ? "" : ": " + why);
    return;
  }
  points_.push_back({pool, qps});
  const double best = std::max_element(points_.begin(), points_.end(), [](const point& a, const point& b) {
                        return a.qps < b.qps;
                      })->qps;
  const auto pct = [](double fraction) { return std::to_string(static_cast<int>(std::lround(fraction * 100))); };
  if (best > 0 && qps < (1 - p_.clear_drop) * best) {
    stop_reason_ = "throughput fell " + pct(1 - qps / best) + "% below the best (at pool " + std::to_string(pool) + ")";
    return;
  }
  std::size_t below = 0;
  for (auto it = points_.rbegin(); it != points_.rend() && it->qps < (1 - p_.tolerance) * best; ++it) ++below;
  if (p_.below_in_a_row > 0 && below >= p_.below_in_a_row) {
    stop_reason_ = std::to_string(below) + " pools in a row more than " + pct(p_.tolerance) + "% below the best";
    return;
  }
  if (next_ >= ladder_.size()) stop_reason_ = "reached the limit (pool " + std::to_string(p_.max_pool) + ")";
}

std::optional<sweep_plan::answer_t> sweep_plan::answer() const {
  if (points_.empty()) return std::nullopt;
  answer_t a;
  for (const auto& pt : points_) {
    if (pt.qps > a.best_qps || a.best_pool == 0) {
      a.best_qps = pt.qps;
      a.best_pool = pt.pool;
    }
  }
  // points_ is in increasing pool order: the first one in the band is the smallest.
  for (const auto& pt : points_) {
    if (pt.qps >= (1 - p_.tolerance) * a.best_qps) {
      a.pool = pt.pool;
      a.qps = pt.qps;
      break;
    }
  }
  return a;
}

}  // namespace pgpipe::bench
