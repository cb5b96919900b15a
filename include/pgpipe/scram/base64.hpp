// Strict base64 (RFC 4648, standard alphabet, '=' padding), as SCRAM and
// PostgreSQL's verifiers use it.
#pragma once

#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <pgpipe/scram/errors.hpp>

namespace pgpipe::scram {

/// Encodes bytes. Thread-safe, never fails.
std::string base64_encode(std::span<const unsigned char> bytes);

/// Decodes `text`; rejects (scram_errc::bad_argument) anything that is not a
/// multiple of four characters of the standard alphabet with padding only at
/// the end. Whitespace is not allowed. Thread-safe. Callers that parse a
/// specific field map the failure to their own, more precise, code.
expected<std::vector<unsigned char>> base64_decode(std::string_view text);

}  // namespace pgpipe::scram
