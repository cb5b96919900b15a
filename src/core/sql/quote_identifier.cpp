// quote_identifier: here in core, not in a driver, because both listeners
// (async and blocking) quote channel names the same way.
#include <pgpipe/notification.hpp>

namespace pgpipe {

std::string quote_identifier(std::string_view name) {
  std::string out;
  out.reserve(name.size() + 2);
  out += '"';
  for (char c : name) {
    if (c == '"') out += '"';  // the only character an SQL identifier escapes, by doubling
    out += c;
  }
  out += '"';
  return out;
}

}  // namespace pgpipe
