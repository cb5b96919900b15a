// SASLprep (RFC 4013) exactly as PostgreSQL applies it to passwords.
//
// PostgreSQL (src/common/saslprep.c, used by scram_build_secret and libpq)
// normalises a password with SASLprep when it can and otherwise uses the raw
// bytes: a password that is not valid UTF-8, that contains a prohibited or
// unassigned code point, that violates the bidi rules, or that maps to the
// empty string is hashed as typed. Pure-ASCII passwords are never changed.
// The Unicode work is done by the library pgpipe was configured with
// (PGPIPE_SASLPREP): ICU's RFC 4013 profile (the default) or libidn 1.x's
// "SASLprep" profile; docs/scram.md says where libidn differs from PostgreSQL.
#pragma once

#include <string>
#include <string_view>

#include <pgpipe/scram/errors.hpp>

namespace pgpipe::scram {

/// PostgreSQL refuses passwords longer than this many bytes (MAX_PASSWORD_LENGTH).
inline constexpr std::size_t max_password_length = 1024;

enum class saslprep_status {
  unchanged_ascii,  ///< pure ASCII: used as is
  prepared,         ///< valid UTF-8 accepted by SASLprep: the prepared form is used
  invalid_utf8,     ///< not UTF-8: the raw bytes are used
  prohibited,       ///< SASLprep rejects it: the raw bytes are used
};

/// A password as PostgreSQL hashes it (saslprep()).
struct prepared_password {
  std::string bytes;       ///< what goes into PBKDF2 (treat as secret)
  saslprep_status status;  ///< which rule produced `bytes`
};

/// The bytes PostgreSQL hashes for `password`. Fails with scram_errc::bad_argument
/// when the password contains a NUL byte (a PostgreSQL password is a C
/// string) and scram_errc::password_too_long above max_password_length bytes.
/// Thread-safe. Messages never quote the password.
expected<prepared_password> saslprep(std::string_view password);

/// The library doing saslprep()'s Unicode work: "ICU" or "libidn". Thread-safe.
std::string_view saslprep_library() noexcept;

}  // namespace pgpipe::scram
