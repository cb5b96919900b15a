// pgpipe-scram: make and check PostgreSQL SCRAM-SHA-256 verifiers, and probe
// how a server authenticates. Passwords come from stdin or a file (and
// PGPASSWORD for probe), never from the command line.
#include <charconv>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <libpq-fe.h>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "cli/password_input.hpp"
#include <pgpipe/scram.hpp>
#include "cli/probe_output.hpp"

namespace {

namespace scram = pgpipe::scram;

constexpr int exit_usage = 2;

const char* usage_text =
    "usage:\n"
    "  pgpipe-scram verifier [--iterations N] [--salt BASE64] [--password-file FILE]\n"
    "      read a password from stdin (or FILE), print its SCRAM-SHA-256 verifier\n"
    "  pgpipe-scram verify VERIFIER [--password-file FILE]\n"
    "      read a password from stdin (or FILE); exit 0 if it matches VERIFIER,\n"
    "      1 if it does not, 2 if VERIFIER is malformed\n"
    "  pgpipe-scram probe CONNINFO [--json] [--timeout SECONDS] [--allow-cleartext]\n"
    "                    [--iteration-cap N] [--password-file FILE | --no-password]\n"
    "      report how the server authenticates; with a password (stdin, FILE,\n"
    "      password= in CONNINFO or PGPASSWORD) try it. Exit 0 authenticated or\n"
    "      method reported, 1 rejected by the server, 2 usage or CONNINFO refused\n"
    "      (an option libpq or the probe does not accept), 3 connection/TLS/\n"
    "      protocol/SCRAM failure or a CONNINFO requirement the server did not\n"
    "      meet (require_auth, channel_binding...), 4 server wants a cleartext/MD5\n"
    "      password (not sent)\n"
    "The password is never accepted as an argument.\n";

[[noreturn]] void usage_error(const std::string& message) {
  std::cerr << "pgpipe-scram: " << message << "\n" << usage_text;
  std::exit(exit_usage);
}

int parse_int_arg(const std::string& flag, const std::string& value) {
  int v = 0;
  const auto [ptr, ec] = std::from_chars(value.data(), value.data() + value.size(), v);
  if (ec != std::errc() || ptr != value.data() + value.size() || v < 1) {
    usage_error(flag + " needs a positive integer, got \"" + value + "\"");
  }
  return v;
}

struct args {
  std::string command;
  std::vector<std::string> positional;
  std::optional<std::string> password_file, salt;
  int iterations = scram::default_iterations;
  int iteration_cap = scram::default_iteration_cap;
  std::optional<int> timeout_seconds;
  bool json = false, allow_cleartext = false, no_password = false;
};

args parse_args(int argc, char** argv) {
  args a;
  if (argc < 2) usage_error("missing command");
  a.command = argv[1];
  if (a.command == "-h" || a.command == "--help" || a.command == "help") {
    std::cout << usage_text;
    std::exit(0);
  }
  for (int i = 2; i < argc; ++i) {
    const std::string arg = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) usage_error(arg + " needs a value");
      return argv[++i];
    };
    if (arg == "--password" || arg.rfind("--password=", 0) == 0) {
      // Refused on purpose: argv is visible to every user through ps.
      usage_error("passwords are not accepted on the command line; use stdin or --password-file");
    } else if (arg == "--password-file") {
      a.password_file = value();
    } else if (arg == "--iterations") {
      a.iterations = parse_int_arg(arg, value());
    } else if (arg == "--salt") {
      a.salt = value();
    } else if (arg == "--iteration-cap") {
      a.iteration_cap = parse_int_arg(arg, value());
    } else if (arg == "--timeout") {
      a.timeout_seconds = parse_int_arg(arg, value());
    } else if (arg == "--json") {
      a.json = true;
    } else if (arg == "--allow-cleartext") {
      a.allow_cleartext = true;
    } else if (arg == "--no-password") {
      a.no_password = true;
    } else if (arg == "-h" || arg == "--help") {
      std::cout << usage_text;
      std::exit(0);
    } else if (arg.size() > 1 && arg[0] == '-' && arg != "-") {
      // Only the option's name: `--pasword=...` must not print the value.
      usage_error("unknown option " + arg.substr(0, arg.find('=')));
    } else {
      a.positional.push_back(arg);
    }
  }
  return a;
}

std::string password_from(const args& a) {
  return a.password_file ? pgpipe::cli::read_password_file(*a.password_file)
                         : pgpipe::cli::read_password_stdin("Password: ");
}

int cmd_verifier(const args& a) {
  if (!a.positional.empty()) usage_error("verifier takes no positional argument (the password comes from stdin)");
  std::string password = password_from(a);
  scram::expected<scram::verifier> v = scram::make_failure(scram::scram_errc::bad_argument, "");
  if (a.salt) {
    auto salt = scram::base64_decode(*a.salt);
    if (!salt) usage_error("--salt: " + salt.error().message);
    if (salt->empty()) usage_error("--salt must not be empty");
    v = scram::make_verifier(password, a.iterations, *salt);
  } else {
    v = scram::make_verifier(password, a.iterations);
  }
  if (!v) {
    std::cerr << "pgpipe-scram: " << v.error().message << "\n";
    return exit_usage;
  }
  std::cout << v->to_string() << "\n";
  return 0;
}

int cmd_verify(const args& a) {
  if (a.positional.size() != 1) usage_error("verify needs exactly one VERIFIER argument");
  auto v = scram::parse_verifier(a.positional[0]);
  if (!v) {
    std::cerr << "pgpipe-scram: malformed verifier: " << v.error().message << "\n";
    return 2;
  }
  std::string password = password_from(a);
  auto ok = scram::verify_password(password, *v);
  if (!ok) {
    std::cerr << "pgpipe-scram: " << ok.error().message << "\n";
    return 2;
  }
  std::cout << (*ok ? "password matches the verifier" : "password does not match the verifier") << "\n";
  return *ok ? 0 : 1;
}

int cmd_probe(const args& a) {
  if (a.positional.size() != 1) usage_error("probe needs exactly one CONNINFO argument");
  scram::probe_params p;
  p.conninfo = a.positional[0];
  p.allow_cleartext = a.allow_cleartext;
  p.iteration_cap = a.iteration_cap;
  if (a.timeout_seconds) p.timeout = std::chrono::seconds(*a.timeout_seconds);
  const auto stdin_wait = p.timeout.value_or(std::chrono::seconds(10));
  if (!a.no_password) {
    if (a.password_file) {
      p.password = pgpipe::cli::read_password_file(*a.password_file);
    } else if (auto piped = pgpipe::cli::read_password_stdin_if_piped(
                   std::chrono::duration_cast<std::chrono::milliseconds>(stdin_wait))) {
      p.password = std::move(*piped);
    } else if (const char* env = std::getenv("PGPASSWORD"); env != nullptr && *env != '\0') {
      // Only when the conninfo has no password of its own (libpq's order).
      p.password = std::nullopt;
      const std::string env_password = env;
      char* err = nullptr;
      PQconninfoOption* opts = PQconninfoParse(p.conninfo.c_str(), &err);
      bool has_own = false;
      for (auto* o = opts; o && o->keyword; ++o) {
        has_own = has_own || (std::strcmp(o->keyword, "password") == 0 && o->val && *o->val);
      }
      if (opts) PQconninfoFree(opts);
      if (err) PQfreemem(err);
      if (!has_own) p.password = env_password;
    }
  } else {
    p.password = std::string();  // explicit: no password, even if the conninfo has one
  }
  const auto report = scram::probe(p);
  const std::string out = a.json ? pgpipe::cli::render_json(report) : pgpipe::cli::render_human(report);
  std::cout << out << std::flush;
  return report.exit_code();
}

}  // namespace

int main(int argc, char** argv) {
  const args a = parse_args(argc, argv);
  try {
    if (a.command == "verifier") return cmd_verifier(a);
    if (a.command == "verify") return cmd_verify(a);
    if (a.command == "probe") return cmd_probe(a);
  } catch (const std::exception& e) {
    std::cerr << "pgpipe-scram: " << e.what() << "\n";
    return exit_usage;
  }
  usage_error("unknown command \"" + a.command + "\"");
}
