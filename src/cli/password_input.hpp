// Where pgpipe-scram gets a password: never argv (visible in ps and shell
// history), only stdin, a file, or PGPASSWORD for the probe.
#pragma once

#include <chrono>
#include <optional>
#include <string>

namespace pgpipe::cli {

/// Reads all of a file; strips one trailing newline ("\n" or "\r\n").
/// Throws std::runtime_error naming the file (never its content).
std::string read_password_file(const std::string& path);

/// Reads stdin to end of file and strips one trailing newline. When stdin is
/// a terminal, prompts on stderr with echo off and reads one line. Throws
/// std::runtime_error when stdin cannot be read.
std::string read_password_stdin(const char* prompt);

/// For the probe: stdin's content when stdin is not a terminal (nullopt when
/// it is, or when it is empty). Waits at most `timeout` for end of file so a
/// probe started with an open, silent stdin fails instead of hanging.
std::optional<std::string> read_password_stdin_if_piped(std::chrono::milliseconds timeout);

/// Strips one trailing "\n" or "\r\n".
void strip_one_newline(std::string& s);

}  // namespace pgpipe::cli
