// The one error the text codecs return for input they cannot parse, shared by
// codec_*.cpp (and kept out of each file's anonymous namespace, so the files
// can also be compiled as one unity translation unit: see .ci/sanitizers).
#pragma once

#include <pgpipe/error.hpp>

#include <system_error>

namespace pgpipe::detail::codec {

inline std::error_code bad() { return make_error_code(errc::conversion_error); }

}  // namespace pgpipe::detail::codec
