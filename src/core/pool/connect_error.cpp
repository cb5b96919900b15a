// connect_error: see connect_error.hpp.
#include "core/pool/connect_error.hpp"

#include <pgpipe/error.hpp>

namespace pgpipe::detail {

bool is_connect_error(const std::error_code& ec) noexcept {
  return ec == errc_condition::connect_error || ec.category() == sqlstate_category();
}

connect_failure_kind kind_of_connect_error(const std::error_code& ec, bool every_host_unknown) {
  using k = connect_failure_kind;
  if (ec == errc::auth_failed || ec == errc::bad_conninfo) return k::permanent;
  // A name the resolver says does not exist stays so until someone changes
  // the DNS or the connection string; its "try again" (EAI_AGAIN) is not
  // that answer, and the driver does not report it as one.
  if (ec == errc::server_unreachable && every_host_unknown) return k::permanent;
  if (ec.category() == sqlstate_category()) {
    // Class 28: invalid authorization specification; 3D000: invalid catalog name.
    const std::string state = sqlstate_of(ec);
    if (state.rfind("28", 0) == 0 || state == "3D000") return k::permanent;
  }
  return k::transient;
}

std::string connect_error_text(std::string_view message) { return "could not connect: " + std::string(message); }

}  // namespace pgpipe::detail
