// connect_error: see connect_error.hpp.
#include "core/pool/connect_error.hpp"

#include <pgpipe/error.hpp>

namespace pgpipe::detail {

bool is_connect_error(const std::error_code& ec) noexcept {
  return ec == errc_condition::connect_error || ec.category() == sqlstate_category();
}

std::string connect_error_text(std::string_view message) { return "could not connect: " + std::string(message); }

}  // namespace pgpipe::detail
