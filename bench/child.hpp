// The child side of one run: pgpipe-bench re-executes itself with --child so
// that the memory and threads of a run belong to that run alone.
#pragma once

#include "options.hpp"

namespace pgpipe::bench {

/// The environment variable through which the parent hands the conninfo to a
/// child: the environment of a process is readable only by its owner, argv
/// by every local user.
inline constexpr const char* conninfo_env = "PGPIPE_BENCH_CONNINFO";
/// The local server's postmaster pid, when known (server CPU during --grow-from).
inline constexpr const char* postmaster_env = "PGPIPE_BENCH_POSTMASTER";

/// Runs the one driver x pool in `o`, writing progress lines ("P ms count")
/// and finally one result line ("R key=value...") to o.result_fd.
/// Returns the process exit code.
int child_main(const options& o);

}  // namespace pgpipe::bench
