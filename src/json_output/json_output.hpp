// The one JSON writer of pgpipe's programs (pgpipe-bench --json, pgpipe-scram
// probe --json). Callers build a boost::json::value; this turns it into text.
//
// Contract:
// - The output is always valid JSON in valid UTF-8. Strings come from places
//   we do not control (a server's error message in the server's encoding,
//   a conninfo, a file name), so every string and object key is checked, and
//   each ill-formed UTF-8 sequence is replaced by U+FFFD (one per maximal
//   subpart, as Unicode 15 section 3.9 recommends) before it is escaped. The
//   replacement happens here, at write time, so a caller cannot forget it.
// - Numbers are never rounded: integers are written as integers, doubles in
//   their shortest form that reads back to the same double (std::to_chars).
//   A non-finite double (NaN, infinity) has no JSON spelling and is written
//   as null.
// - Internal (not installed): the library itself writes no JSON.
#pragma once

#include <boost/json/value.hpp>

#include <string>
#include <string_view>

namespace pgpipe::json_output {

/// `text` with every ill-formed UTF-8 sequence replaced by U+FFFD (EF BF BD).
/// Well-formed input comes back unchanged.
std::string valid_utf8(std::string_view text);

struct layout {
  /// Containers nested deeper than this are written on one line; 0 writes
  /// the whole document on one line with no spaces (the compact form).
  int expand_depth = 0;
};

/// The document as JSON text, ending in a newline.
std::string write(const boost::json::value& doc, layout how = {});

}  // namespace pgpipe::json_output
