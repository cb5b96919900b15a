#include "core/sql/sql_text.hpp"

namespace pgpipe::detail {

std::string nul_byte_refusal(std::string_view text, std::string_view what) {
  const auto at = text.find('\0');
  if (at == std::string_view::npos) return {};
  return std::string(what) + " contains a NUL byte at offset " + std::to_string(at) +
         " (libpq would cut the text there); nothing was sent";
}

}  // namespace pgpipe::detail
