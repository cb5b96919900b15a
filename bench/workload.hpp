// The statement every driver runs and how its parameters are drawn: the
// built-in san_pham lookup, or the user's --sql FILE. Also loads the table.
#pragma once

#include <cstdint>
#include <random>
#include <string>
#include <vector>

namespace pgpipe::bench {

inline constexpr int table_rows = 100'000;

struct param_spec {
  enum class kind { integer, pick, format };
  kind what = kind::integer;
  std::int64_t lo = 0, hi = 0;      ///< integer, format
  std::vector<std::string> choices;  ///< pick
  std::string prefix, suffix;       ///< format: text around the number
  int width = 0;                    ///< format: zero-padded width, 0 = none
};


struct workload {
  std::string name;  ///< "built-in" or the file name
  std::string sql;   ///< with $1..$n
  std::vector<param_spec> params;
  bool builtin = false;
  /// --workload tpcb: the drivers run pgbench's TPC-B-like transaction
  /// (tpcb.hpp) at `scale` instead of `sql`.
  bool tpcb = false;
  int scale = 1;
};

/// Per-client generator: cheap, not thread-safe (one per logical client).
using rng = std::mt19937_64;

/// One drawn parameter as text: every driver sends parameters in text format
/// with no type (the server infers it from the statement), so integers need
/// no special path.
std::string draw(const param_spec& p, rng& r);
std::string format_key(const param_spec& p, std::int64_t n);

/// The built-in workload (DESIGN.md): keys SP000001..SP100000.
workload builtin_workload();
/// Parses the --sql format (see help_text). Throws std::invalid_argument
/// with a line number on a malformed file.
workload parse_workload(const std::string& text, const std::string& name);
workload load_workload_file(const std::string& path);

/// pgbench script running the same statement: \set lines for parameters,
/// the statement with :pN in place of $N ('pick' and 'format' built in SQL).
std::string pgbench_script(const workload& w);

/// Creates and loads san_pham when it is missing (100k rows, ANALYZE).
/// Returns true when it loaded the table. Throws std::runtime_error with the
/// server's message (never the password).
bool ensure_table(const std::string& conninfo);

}  // namespace pgpipe::bench
