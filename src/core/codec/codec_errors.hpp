// The one error the text codecs return for input they cannot parse, and the
// whitespace their text parsers skip, shared by codec_*.cpp (and kept out of
// each file's anonymous namespace, so the files can also be compiled as one
// unity translation unit: see .ci/sanitizers).
#pragma once

#include <pgpipe/error.hpp>

#include <system_error>

namespace pgpipe::detail::codec {

inline std::error_code bad() { return make_error_code(errc::conversion_error); }

/// Whitespace as the server's array and range parsers skip it (isspace in the C locale).
inline bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f'; }

}  // namespace pgpipe::detail::codec
