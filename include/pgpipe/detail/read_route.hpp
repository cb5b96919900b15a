// Where one attempt of a read-only request runs, and what a read remembers
// between its attempts: shared by the routers' headers and the sans-IO
// replica tracker (src/core/routing/replica_tracker.hpp). Not for users.
#pragma once

#include <cstddef>
#include <optional>
#include <vector>

namespace pgpipe::detail {

/// One attempt's server: replica `replica`, the primary (the router's
/// read-only pool on it), or nowhere (every server that may serve the read
/// has failed it).
struct read_route {
  enum class to : unsigned char { replica, primary, nowhere };
  to where = to::primary;
  std::size_t replica = 0;  ///< when where == to::replica
};

/// The servers that failed one read as unreachable, kept by the router
/// between the read's attempts so that none is tried twice.
struct read_failures {
  bool primary = false;
  std::vector<std::size_t> replicas;
};

/// Where a read runs after its failed attempt, decided once per attempt.
/// Both drivers ask twice: before recording the failure (does the read
/// run again? the observer's query_event::rerun) and when completing the
/// attempt; the tracker counts a failure and a re-run per decision, so the
/// second question must get the first answer.
class rerun_route {
 public:
  /// The decision, made by `reroute()` (returning a read_route) on the
  /// attempt's first question.
  template <class Reroute>
  const read_route& decide(Reroute&& reroute) {
    if (!next_) next_ = reroute();
    return *next_;
  }
  /// The next attempt asks afresh.
  void reset() noexcept { next_.reset(); }

 private:
  std::optional<read_route> next_;
};

}  // namespace pgpipe::detail
