#include "cli/password_input.hpp"

#include <cerrno>
#include <cstring>
#include <fstream>
#include <iostream>
#include <iterator>
#include <poll.h>
#include <stdexcept>
#include <termios.h>
#include <unistd.h>

namespace pgpipe::cli {
namespace {

constexpr std::size_t max_input = 1 << 20;  // far above PostgreSQL's 1024-byte limit

}  // namespace

void strip_one_newline(std::string& s) {
  if (!s.empty() && s.back() == '\n') {
    s.pop_back();
    if (!s.empty() && s.back() == '\r') s.pop_back();
  }
}

std::string read_password_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot open password file \"" + path + "\": " + std::strerror(errno));
  std::string s((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (in.bad()) throw std::runtime_error("cannot read password file \"" + path + "\"");
  if (s.size() > max_input) throw std::runtime_error("password file \"" + path + "\" is too large");
  strip_one_newline(s);
  return s;
}

std::string read_password_stdin(const char* prompt) {
  if (isatty(STDIN_FILENO)) {
    termios old {};
    const bool have_tty = tcgetattr(STDIN_FILENO, &old) == 0;
    if (have_tty) {
      termios quiet = old;
      quiet.c_lflag &= ~static_cast<tcflag_t>(ECHO);
      tcsetattr(STDIN_FILENO, TCSAFLUSH, &quiet);
    }
    std::cerr << prompt << std::flush;
    std::string line;
    std::getline(std::cin, line);
    if (have_tty) tcsetattr(STDIN_FILENO, TCSAFLUSH, &old);
    std::cerr << '\n';
    if (!line.empty() && line.back() == '\r') line.pop_back();
    return line;
  }
  std::string s;
  char buf[4096];
  for (;;) {
    const ssize_t n = ::read(STDIN_FILENO, buf, sizeof buf);
    if (n == 0) break;
    if (n < 0) {
      if (errno == EINTR) continue;
      throw std::runtime_error(std::string("cannot read stdin: ") + std::strerror(errno));
    }
    s.append(buf, static_cast<std::size_t>(n));
    if (s.size() > max_input) throw std::runtime_error("stdin is too large for a password");
  }
  strip_one_newline(s);
  return s;
}

std::optional<std::string> read_password_stdin_if_piped(std::chrono::milliseconds timeout) {
  if (isatty(STDIN_FILENO)) return std::nullopt;
  std::string s;
  char buf[4096];
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    pollfd p{STDIN_FILENO, POLLIN, 0};
    const int rc = ::poll(&p, 1, left.count() > 0 ? static_cast<int>(left.count()) : 0);
    if (rc < 0 && errno == EINTR) continue;
    if (rc < 0) throw std::runtime_error(std::string("cannot poll stdin: ") + std::strerror(errno));
    if (rc == 0) {
      throw std::runtime_error("stdin did not reach end of file within " + std::to_string(timeout.count() / 1000) +
                               " s; give the password on stdin and close it, or pass --no-password");
    }
    if (p.revents & POLLNVAL) return std::nullopt;  // stdin closed by the parent
    const ssize_t n = ::read(STDIN_FILENO, buf, sizeof buf);
    if (n == 0) break;
    if (n < 0) {
      if (errno == EINTR || errno == EAGAIN) continue;
      throw std::runtime_error(std::string("cannot read stdin: ") + std::strerror(errno));
    }
    s.append(buf, static_cast<std::size_t>(n));
    if (s.size() > max_input) throw std::runtime_error("stdin is too large for a password");
  }
  strip_one_newline(s);
  if (s.empty()) return std::nullopt;
  return s;
}

}  // namespace pgpipe::cli
