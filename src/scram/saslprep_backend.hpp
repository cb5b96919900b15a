// The Unicode half of SASLprep (RFC 4013: map, NFKC, prohibit, bidi), done
// by a library chosen when pgpipe is configured (PGPIPE_SASLPREP): ICU's
// usprep (saslprep_icu.cpp) or libidn 1.x (saslprep_libidn.cpp). Exactly one
// of them is compiled. saslprep.cpp applies PostgreSQL's own rules around it.
// Internal to the scram layer.
#pragma once

#include <string>
#include <string_view>

#include <pgpipe/scram/errors.hpp>

namespace pgpipe::scram::detail {

struct saslprep_backend_result {
  enum class outcome {
    prepared,     ///< accepted: `bytes` holds the prepared UTF-8 (may be empty)
    prohibited,   ///< prohibited or unassigned code point, or a bidi violation
    invalid_utf8  ///< the library's decoder refused the input
  };
  outcome what;
  std::string bytes;  ///< secret
};

/// SASLprep of `utf8` with unassigned code points (Unicode 3.2) prohibited,
/// as PostgreSQL's tables do. Precondition: `utf8` is valid UTF-8 of at most
/// max_password_length bytes with no NUL. Fails only when the library cannot
/// work (out of memory, missing data) with scram_errc::crypto_failure.
/// Thread-safe. Every buffer that held the password is wiped before it is freed.
expected<saslprep_backend_result> saslprep_backend(std::string_view utf8);

}  // namespace pgpipe::scram::detail
