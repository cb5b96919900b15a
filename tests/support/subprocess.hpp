// Runs one of the project's programs as a user would: a child process with
// its own arguments and environment, stdout and stderr captured apart, and
// its exit code. For tests of the command-line tools (pgpipe-scram,
// pgpipe-bench).
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

namespace pgpipe::test {

struct subprocess_result {
  int exit_code = -1;  ///< -1 when it did not exit normally (signal) or timed out
  std::string out, err;
};

/// Runs `program` with `args`, feeding `input` on stdin (nullopt: /dev/null).
/// The environment is this process's, without the variables named in
/// `drop_env`, plus `env`. A child still running after `timeout_s` is killed
/// (no test hangs on a stuck tool).
subprocess_result run_program(const std::string& program, const std::vector<std::string>& args,
                              const std::optional<std::string>& input = std::nullopt,
                              const std::map<std::string, std::string>& env = {},
                              const std::vector<std::string>& drop_env = {}, int timeout_s = 120);

}  // namespace pgpipe::test
