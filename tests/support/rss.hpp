// Peak-RSS measurement for the bounded-memory tests (COPY in both drivers):
// reset the peak, run, read the peak. Linux /proc only.
#pragma once

#include <fstream>
#include <string>

namespace pgpipe::test {

/// kB from /proc/self/status ("VmRSS", "VmHWM"); -1 when absent.
inline long status_kb(const std::string& key) {
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line))
    if (line.rfind(key + ":", 0) == 0) return std::stol(line.substr(key.size() + 1));
  return -1;
}

/// Resets the peak (VmHWM) to the current RSS, so a peak measured afterwards
/// belongs to what ran in between (Linux: clear_refs "5").
inline bool reset_peak_rss() {
  std::ofstream out("/proc/self/clear_refs");
  out << "5";
  return static_cast<bool>(out.flush());
}

}  // namespace pgpipe::test
