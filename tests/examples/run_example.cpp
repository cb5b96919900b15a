// Runs one program of examples/ against a throwaway PostgreSQL, as a user
// would run it against theirs (one ctest entry per example,
// tests/CMakeLists.txt):
//
//   pgpipe_run_example [--standby] --expect REGEX -- PROGRAM [ARGS...]
//
// starts a server (devcluster: its own port and directory, removed at the
// end), with --standby also a streaming hot standby of it, then runs
//   PROGRAM CONNINFO [STANDBY_CONNINFO] ARGS...
// and prints what the program wrote. Exits 0 only when the program exited 0
// and a line of its output (standard output or error: a log goes to the
// latter) matches REGEX (ECMAScript, searched in each line): an example that
// fails, or that ends without doing what it shows, fails its test. The conninfo holds the server's generated
// password: the examples never print it, and neither does this runner.
// With --standby on a server that can have none (no pg_basebackup of its
// version) it exits 77, which ctest reports as skipped, with the reason.
#include "devcluster/devcluster.hpp"
#include "support/standby.hpp"
#include "support/subprocess.hpp"

#include <exception>
#include <iostream>
#include <memory>
#include <optional>
#include <regex>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

namespace {

int usage(const char* self) {
  std::cerr << "usage: " << self << " [--standby] --expect REGEX -- PROGRAM [ARGS...]\n";
  return 2;
}

bool has_matching_line(const std::string& out, const std::regex& expect) {
  std::istringstream lines(out);
  for (std::string line; std::getline(lines, line);) {
    if (std::regex_search(line, expect)) return true;
  }
  return false;
}

}  // namespace

int main(int argc, char** argv) {
  bool standby = false;
  std::optional<std::string> expect;
  int i = 1;
  for (; i < argc; ++i) {
    const std::string_view arg = argv[i];
    if (arg == "--standby") {
      standby = true;
    } else if (arg == "--expect" && i + 1 < argc) {
      expect = argv[++i];
    } else if (arg == "--") {
      ++i;
      break;
    } else {
      std::cerr << "pgpipe_run_example: unknown argument '" << arg << "'\n";
      return usage(argv[0]);
    }
  }
  if (!expect || i >= argc) return usage(argv[0]);
  const std::string program = argv[i++];
  std::regex pattern;
  try {
    pattern = std::regex(*expect);
  } catch (const std::regex_error& e) {
    std::cerr << "pgpipe_run_example: --expect '" << *expect << "' is not a valid regular expression: " << e.what()
              << '\n';
    return 2;
  }

  if (standby) {
    // 77: ctest's SKIP_RETURN_CODE for these tests, shown as skipped with the reason.
    if (const auto why = pgpipe::devcluster::cluster::standby_unsupported()) {
      std::cout << "skipped: " << *why << '\n';
      return 77;
    }
  }
  try {
    pgpipe::devcluster::cluster primary;
    std::unique_ptr<pgpipe::test::standby_instance> replica;
    std::vector<std::string> args{primary.conninfo()};
    if (standby) {
      replica = std::make_unique<pgpipe::test::standby_instance>(primary);
      replica->wait_for_streaming();
      args.push_back(replica->conninfo());
    }
    for (; i < argc; ++i) args.emplace_back(argv[i]);

    std::cout << "--- " << program << (standby ? " PRIMARY STANDBY" : " CONNINFO");
    for (std::size_t a = standby ? 2 : 1; a < args.size(); ++a) std::cout << ' ' << args[a];
    std::cout << '\n';
    const pgpipe::test::subprocess_result r = pgpipe::test::run_program(program, args, std::nullopt, {}, {}, 240);
    std::cout << "--- stdout\n" << r.out << "--- stderr\n" << r.err << "---\n";
    if (r.exit_code != 0) {
      std::cout << "FAILED: " << program << " exited with " << r.exit_code << '\n';
      return 1;
    }
    if (!has_matching_line(r.out, pattern) && !has_matching_line(r.err, pattern)) {
      std::cout << "FAILED: no line of its output matches '" << *expect << "'\n";
      return 1;
    }
    std::cout << "ok: exit status 0, and a line matches '" << *expect << "'\n";
    return 0;
  } catch (const std::exception& e) {
    std::cout << "FAILED: could not start the server: " << e.what() << '\n';
    return 1;
  }
}
