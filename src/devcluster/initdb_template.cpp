#include "devcluster/initdb_template.hpp"

#include "devcluster/server_process.hpp"
#include "devcluster/server_version.hpp"

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <filesystem>
#include <fstream>
#include <functional>
#include <mutex>
#include <random>
#include <sstream>
#include <stdexcept>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>
#include <vector>

namespace pgpipe::devcluster {
namespace {

// Bump when initdb's options change so stale templates are not reused.
constexpr int template_format = 1;

std::string parent_of(const std::string& path) { return std::filesystem::path(path).parent_path().string(); }

// Identifies the server build: path, size and mtime of the postgres binary.
std::string template_key(const std::string& bindir, const std::string& superuser) {
  struct stat st {};
  std::string postgres = bindir + "/postgres";
  if (stat(postgres.c_str(), &st) != 0) throw std::runtime_error("devcluster: no server binary at " + postgres);
  std::ostringstream id;
  id << template_format << '|' << bindir << '|' << st.st_size << '|' << st.st_mtim.tv_sec << '|' << superuser << '|'
     << server_user().uid << '|' << geteuid();
  std::ostringstream key;
  key << std::hex << std::hash<std::string>{}(id.str());
  return key.str();
}

// The cache is in a world-writable directory: use it only if the server account
// owns it and nobody else can write to it.
bool trustworthy(const std::string& dir) {
  struct stat st {};
  if (lstat(dir.c_str(), &st) != 0) return false;
  return S_ISDIR(st.st_mode) && st.st_uid == server_user().uid && (st.st_mode & 022) == 0;
}

std::optional<std::string> read_small_file(const std::string& path) {
  std::ifstream in(path);
  if (!in) return std::nullopt;
  std::string s((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  return s;
}

std::optional<initdb_template> load(const std::string& dir) {
  if (!trustworthy(dir) || !std::filesystem::exists(dir + "/ready")) return std::nullopt;
  auto pw = read_small_file(dir + "/password");
  if (!pw || pw->empty()) return std::nullopt;
  return initdb_template{dir + "/data", *pw};
}

class file_lock {
 public:
  explicit file_lock(const std::string& path) {
    fd_ = open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (fd_ < 0) throw std::runtime_error("devcluster: open lock " + path + ": " + std::strerror(errno));
    while (flock(fd_, LOCK_EX) != 0) {
      if (errno != EINTR) {
        int err = errno;
        close(fd_);
        throw std::runtime_error("devcluster: flock " + path + ": " + std::strerror(err));
      }
    }
  }
  ~file_lock() {
    flock(fd_, LOCK_UN);
    close(fd_);
  }
  file_lock(const file_lock&) = delete;
  file_lock& operator=(const file_lock&) = delete;

 private:
  int fd_;
};

}  // namespace

std::string generate_password(std::size_t length) {
  // Printable ASCII minus space, quotes and backslash: safe unquoted in a
  // conninfo string, still varied enough to exercise escaping elsewhere.
  static const std::string alphabet = [] {
    std::string a;
    for (char c = '!'; c <= '~'; ++c) {
      if (c != '\'' && c != '"' && c != '\\') a.push_back(c);
    }
    return a;
  }();
  std::random_device rd;
  std::uniform_int_distribution<std::size_t> pick(0, alphabet.size() - 1);
  std::string out;
  for (std::size_t i = 0; i < length; ++i) out.push_back(alphabet[pick(rd)]);
  return out;
}

void run_initdb(const std::string& bindir, const std::string& data_dir, const std::string& superuser,
                const std::string& password) {
  const std::string parent = parent_of(data_dir);
  const std::string pwfile = parent + "/initdb-pwfile";
  write_file_for_server(pwfile, password + "\n", 0600);
  std::vector<std::string> argv{bindir + "/initdb", "-D", data_dir, "-U", superuser, "--pwfile=" + pwfile,
                                "--auth=scram-sha-256", "-E", "UTF8", "--locale=C", "--no-sync"};
  // Only quietens the "start the server with" hint; initdb before 14 rejects it.
  if (server_major(bindir) >= 14) argv.emplace_back("--no-instructions");
  command_result r;
  try {
    r = run_as_server_user(argv, parent);
  } catch (...) {
    std::remove(pwfile.c_str());
    throw;
  }
  std::remove(pwfile.c_str());
  if (r.exit_code != 0) {
    throw std::runtime_error("devcluster: initdb failed (exit " + std::to_string(r.exit_code) + "): " + r.output);
  }
}

std::optional<initdb_template> cached_initdb_template(const std::string& bindir, const std::string& superuser) {
  if (const char* off = std::getenv("PGPIPE_DEVCLUSTER_NO_TEMPLATE"); off && *off && std::string(off) != "0") {
    return std::nullopt;
  }
  const std::string dir = temp_root() + "/pgpipe-devcluster-template-" + template_key(bindir, superuser);
  static std::mutex process_mutex;  // flock is per open file, not per thread
  std::lock_guard guard(process_mutex);
  if (auto t = load(dir)) return t;

  file_lock lock(dir + ".lock");
  if (auto t = load(dir)) return t;  // another process built it meanwhile
  struct stat st {};
  if (lstat(dir.c_str(), &st) == 0) {
    // Half-built or foreign: only remove what we own, else do not cache.
    if (st.st_uid != server_user().uid && st.st_uid != geteuid()) return std::nullopt;
    remove_tree(dir);
  }
  const std::string build = make_temp_dir("pgpipe-devcluster-template-build-");
  try {
    const std::string password = generate_password();
    run_initdb(bindir, build + "/data", superuser, password);
    write_file_for_server(build + "/password", password, 0600);
    write_file_for_server(build + "/ready", "", 0600);
    if (rename(build.c_str(), dir.c_str()) != 0) {
      throw std::runtime_error("devcluster: rename template: " + std::string(std::strerror(errno)));
    }
  } catch (...) {
    remove_tree(build);
    throw;
  }
  return load(dir);
}

}  // namespace pgpipe::devcluster
