// Captures what the process writes to file descriptor 2 (stderr) while it
// lives: fd 2 points at a temporary file, restored by text() or the
// destructor. Used to prove the library prints nothing (libpq's default
// notice processor writes to fd 2 directly, bypassing std::cerr).
#pragma once

#include <cstdio>
#include <stdexcept>
#include <string>

#include <unistd.h>

namespace pgpipe::test {

class stderr_capture {
 public:
  stderr_capture() {
    std::fflush(stderr);
    file_ = std::tmpfile();
    saved_ = ::dup(2);
    if (file_ == nullptr || saved_ < 0 || ::dup2(::fileno(file_), 2) < 0)
      throw std::runtime_error("cannot redirect stderr");
  }
  ~stderr_capture() {
    restore();
    if (file_ != nullptr) std::fclose(file_);
  }
  stderr_capture(const stderr_capture&) = delete;
  stderr_capture& operator=(const stderr_capture&) = delete;

  /// Restores fd 2 and returns everything written to it meanwhile.
  std::string text() {
    restore();
    std::string out;
    std::rewind(file_);
    char buf[4096];
    for (std::size_t n; (n = std::fread(buf, 1, sizeof buf, file_)) > 0;) out.append(buf, n);
    return out;
  }

 private:
  void restore() {
    if (saved_ < 0) return;
    std::fflush(stderr);
    ::dup2(saved_, 2);
    ::close(saved_);
    saved_ = -1;
  }
  std::FILE* file_ = nullptr;
  int saved_ = -1;
};

}  // namespace pgpipe::test
