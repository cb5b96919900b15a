// A driver as the child process runs it: create a pool, keep `concurrency`
// logical clients in a closed loop (each issues its next query when the
// previous one completes) until the measurement says stop, then close.
#pragma once

#include "measurement.hpp"
#include "workload.hpp"

#include <cstddef>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace pgpipe::bench {

struct driver_params {
  std::string conninfo;
  std::size_t pool = 20;
  std::size_t concurrency = 500;
  std::size_t loops = 0;  ///< 0 = hardware concurrency
  bool prepared = true;   ///< named statements (--no-prepared turns them off)
  std::size_t grow_from = 0;  ///< async: min_size (0 = the pool size)
  std::optional<std::size_t> growth_connects;     ///< async: pool_params::growth_connects
  std::optional<std::size_t> growth_interval_ms;  ///< async: pool_params::growth_interval
  long postmaster = 0;  ///< local server's postmaster pid (0: unknown), for --grow-from's CPU figures
  bool empty_observer = false;  ///< async: install a query_observer that does nothing (--observer empty)
  /// async-coalesced: queries marked read-only on read-only sessions (Sync coalescing).
  bool read_only = false;
  workload work;
};

class driver {
 public:
  virtual ~driver() = default;
  /// Creates the pool and launches every logical client; returns at once.
  /// m.start() has been called. Throws on a setup failure.
  virtual void start(measurement& m) = 0;
  /// Called once the measurement drained (or gave up): close the pool and
  /// join every thread the driver started.
  virtual void close() = 0;
  /// True once the pool has all its connections open (from its stats()):
  /// the warm-up starts then. Thread-safe.
  virtual bool pool_open() const = 0;
};

/// The in-process drivers compiled into this binary (pgbench runs in the
/// parent's child directly and is not listed).
std::vector<std::string> in_process_drivers();
/// nullptr when `name` is not compiled in.
std::unique_ptr<driver> make_driver(const std::string& name, const driver_params& p);

// One factory per driver file; each exists only when its driver is built.
std::unique_ptr<driver> make_async_driver(const driver_params& p);
std::unique_ptr<driver> make_coroutine_driver(const driver_params& p);
std::unique_ptr<driver> make_blocking_driver(const driver_params& p);
std::unique_ptr<driver> make_blocking_threads_driver(const driver_params& p);

/// --workload tpcb's async shapes: async_transaction awaiting each statement,
/// async_transaction_batch (one write, one Sync), BEGIN ... COMMIT by hand,
/// the batch on a lease each client holds for the whole run.
enum class tpcb_mode { awaited, batch, by_hand, batch_on_lease };
std::unique_ptr<driver> make_tpcb_async_driver(const driver_params& p, tpcb_mode mode);
std::unique_ptr<driver> make_tpcb_blocking_driver(const driver_params& p);

}  // namespace pgpipe::bench
