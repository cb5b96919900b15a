// Sans-IO codec of composite (row type) values: a value is split into its
// fields here, once, so that each field decodes with the same per-type
// decoders as a plain column. The text grammar is record_in's (rowtypes.c),
// the binary layout record_send's. Compiled in
// src/core/codec/codec_composite.cpp; fuzzed by
// tests/fuzz/type_decoders_fuzz.cpp. Users must not rely on this header.
#pragma once

#include <pgpipe/types.hpp>

#include <deque>
#include <optional>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

namespace pgpipe::detail::codec {

/// One composite value split into its fields, as views into the value (or
/// into `owned`, for text fields that needed unquoting: a deque, so views
/// stay valid).
struct record_fields {
  struct field {
    std::optional<std::string_view> value;  ///< std::nullopt: NULL
    type_oid type = 0;                      ///< binary: the field's type; text: 0 (the text form has none)
  };
  std::vector<field> fields;
  std::deque<std::string> owned;
};

/// Text as record_in reads it: optional whitespace, '(', fields separated by
/// ',', ')', optional whitespace. An empty field is NULL; a quoted one ("")
/// is empty text. Inside a field '"' starts or ends quoting ('""' inside
/// quotes is one quote) and '\' takes the next character as is; whitespace
/// is data. Anything else (no parentheses, text after ')') is
/// errc::conversion_error.
std::error_code split_record_text(std::string_view in, record_fields& out);

/// Binary as record_send writes it: int32 field count, then per field its
/// type OID, an int32 length (-1: NULL) and that many bytes. Every count
/// and length is checked against what is left before it is used; bytes
/// after the last field are errc::conversion_error.
std::error_code split_record_binary(std::string_view in, record_fields& out);

/// Appends one field to a record's text form: nothing for NULL, otherwise
/// the text in double quotes with '"' and '\' doubled (what record_in reads
/// back as exactly that text, empty text included).
void append_record_text_field(std::string& out, const std::optional<std::string>& field);

}  // namespace pgpipe::detail::codec
