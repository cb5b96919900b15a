// A per-machine cache of one initdb'ed data directory, so that a cluster
// costs a copy (~0.1 s) instead of an initdb (~1-2 s). Every test binary is
// its own process, so a per-process cache would not help ctest much.
//
// The template lives in <temp_root>/pgpipe-devcluster-template-<key>/ where <key>
// hashes the server binaries, the superuser name and the server account; it
// is built once under an flock and published with rename(2), and is never
// started, only copied. Its superuser password is a template secret that
// every copy replaces with its own at first start.
#pragma once

#include <optional>
#include <string>

namespace pgpipe::devcluster {

struct initdb_template {
  std::string data_dir;   // copy this (cp -a) as the server account
  std::string password;   // the superuser's password inside the template
};

/// The cached template for `superuser`, creating it if needed. nullopt when
/// caching is off (PGPIPE_DEVCLUSTER_NO_TEMPLATE=1) or the cache directory
/// cannot be trusted (wrong owner or mode); the caller then runs initdb
/// itself. Throws std::runtime_error when initdb fails. Thread- and
/// process-safe.
std::optional<initdb_template> cached_initdb_template(const std::string& bindir, const std::string& superuser);

/// Run initdb into `data_dir` (which must not exist; its parent must be
/// writable by the server account) with scram-sha-256 and `password`.
void run_initdb(const std::string& bindir, const std::string& data_dir, const std::string& superuser,
                const std::string& password);

/// A random password: printable ASCII without space, quotes or backslash.
std::string generate_password(std::size_t length = 24);

}  // namespace pgpipe::devcluster
