#include "devcluster/server_version.hpp"

#include "devcluster/server_process.hpp"

#include <charconv>
#include <map>
#include <mutex>
#include <stdexcept>
#include <unistd.h>

namespace pgpipe::devcluster {
namespace {

// --version as the server account: the same way every other server program
// runs here, and a directory root may read but postgres may not fails now,
// with this message, instead of at initdb.
std::string version_output(const std::string& program) {
  auto r = run_as_server_user({program, "--version"}, "/", std::chrono::seconds(30));
  if (r.exit_code != 0) {
    throw std::runtime_error("devcluster: " + program + " --version failed (exit " + std::to_string(r.exit_code) +
                             "): " + r.output);
  }
  return r.output;
}

std::optional<int> major_of(const std::string& program) {
  if (access(program.c_str(), X_OK) != 0) return std::nullopt;
  try {
    return parse_version_major(version_output(program));
  } catch (const std::runtime_error&) {
    return std::nullopt;
  }
}

}  // namespace

std::optional<int> parse_version_major(std::string_view text) {
  // "<program> (PostgreSQL) <major>[.<minor>...][suffix]"
  constexpr std::string_view marker = "(PostgreSQL) ";
  const auto at = text.find(marker);
  if (at == std::string_view::npos) return std::nullopt;
  const char* first = text.data() + at + marker.size();
  const char* last = text.data() + text.size();
  int major = 0;
  auto [end, ec] = std::from_chars(first, last, major);
  if (ec != std::errc{} || end == first || major <= 0) return std::nullopt;
  return major;
}

int server_major(const std::string& bindir) {
  static std::mutex mu;
  static std::map<std::string, int> cache;
  std::lock_guard lock(mu);
  if (auto it = cache.find(bindir); it != cache.end()) return it->second;
  const std::string postgres = bindir + "/postgres";
  const std::string out = version_output(postgres);
  const auto major = parse_version_major(out);
  if (!major) throw std::runtime_error("devcluster: cannot read a version in `" + postgres + " --version`: " + out);
  cache.emplace(bindir, *major);
  return *major;
}

std::optional<std::string> matching_tool(const std::string& bindir, const std::string& tool) {
  const int want = server_major(bindir);
  for (const std::string& dir : {bindir, "/usr/lib/postgresql/" + std::to_string(want) + "/bin"}) {
    const std::string path = dir + "/" + tool;
    if (major_of(path) == want) return path;
  }
  return std::nullopt;
}

std::string missing_tool(const std::string& bindir, const std::string& tool) {
  const std::string major = std::to_string(server_major(bindir));
  return "no " + tool + " of PostgreSQL " + major + " (looked in " + bindir + " and /usr/lib/postgresql/" + major +
         "/bin)";
}

}  // namespace pgpipe::devcluster
