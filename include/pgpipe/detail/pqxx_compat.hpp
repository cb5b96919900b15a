// pqxx_compat: the few libpqxx calls whose spelling differs between the
// libpqxx versions pgpipe supports (6.4, 7.x; 8.x on paper), in one place.
//
// 6.4 and 7.x before 7.10 run parameterised statements with exec_params /
// exec_prepared; 7.10 deprecates them (an error under -Werror) for
// exec(sql, params) and exec(prepped, params), which 7.8 lacks, and 8.0
// removes them. Column numbers move from field::num() to column_number() in
// 8.0. Everything here forwards to the call the version at hand provides.
// See docs/design.md, "libpqxx versions".
#pragma once

#include <pqxx/version>

#if PQXX_VERSION_MAJOR < 7
#include <pqxx/binarystring>
#endif
#include <pqxx/field>
#include <pqxx/result>
#include <pqxx/transaction_base>

#include <cstddef>
#include <string>
#include <string_view>
#include <utility>

#if PQXX_VERSION_MAJOR > 7 || (PQXX_VERSION_MAJOR == 7 && PQXX_VERSION_MINOR >= 10)
#define PGPIPE_PQXX_HAS_PARAMS 1
#include <pqxx/params>
#include <pqxx/prepared_statement>
#else
#define PGPIPE_PQXX_HAS_PARAMS 0
#endif

namespace pgpipe::detail {

/// Runs `sql` unnamed with `args` as its parameters ($1, $2...).
template <typename... Args>
pqxx::result pqxx_exec_params(pqxx::transaction_base& tx, std::string_view sql, Args&&... args) {
#if PGPIPE_PQXX_HAS_PARAMS
  return tx.exec(sql, pqxx::params{std::forward<Args>(args)...});
#else
  return tx.exec_params(std::string{sql}, std::forward<Args>(args)...);
#endif
}

/// Runs the statement prepared on tx's connection under `name`.
template <typename... Args>
pqxx::result pqxx_exec_prepared(pqxx::transaction_base& tx, const std::string& name, Args&&... args) {
#if PGPIPE_PQXX_HAS_PARAMS
  return tx.exec(pqxx::prepped{name}, pqxx::params{std::forward<Args>(args)...});
#else
  return tx.exec_prepared(name, std::forward<Args>(args)...);
#endif
}

/// Runs `sql`, which must return no rows (pqxx::unexpected_rows otherwise).
inline pqxx::result pqxx_exec0(pqxx::transaction_base& tx, std::string_view sql) {
#if PGPIPE_PQXX_HAS_PARAMS
  return tx.exec(sql).no_rows();
#else
  return tx.exec0(std::string{sql});
#endif
}

/// A bytea parameter: binary format, any byte (NUL included). libpqxx 6.4
/// knows binarystring only (deprecated in 7, removed in 8); 7 sends a view of
/// std::byte as binary, 7.10 names it bytes_view (a span in 8).
#if PQXX_VERSION_MAJOR < 7
inline pqxx::binarystring pqxx_bytes(const std::byte* data, std::size_t size) { return {data, size}; }
#elif PGPIPE_PQXX_HAS_PARAMS
inline pqxx::bytes_view pqxx_bytes(const std::byte* data, std::size_t size) noexcept { return {data, size}; }
#else
inline std::basic_string_view<std::byte> pqxx_bytes(const std::byte* data, std::size_t size) noexcept {
  return {data, size};
}
#endif

/// The column number of `f` (0-based).
inline std::size_t pqxx_column_number(const pqxx::field& f) noexcept {
#if PQXX_VERSION_MAJOR >= 8
  return static_cast<std::size_t>(f.column_number());
#else
  return static_cast<std::size_t>(f.num());
#endif
}

}  // namespace pgpipe::detail
