// What the codec unit tests build their inputs with: a field decoded the way
// a result column is, and big-endian integers for the binary layouts.
#pragma once

#include <pgpipe/type_traits.hpp>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <system_error>

namespace pgpipe::test {

template <class T>
std::error_code decode(const field_value& v, T& out) {
  return pgpipe::detail::decode_field(std::optional<field_value>(v), out);
}

template <class T>
std::error_code decode(std::string_view s, type_oid t, wire_format f, T& out) {
  return decode(field_value{s, t, f}, out);
}

/// `v` as `n` big-endian bytes, as the binary wire formats store integers.
inline std::string big_endian(std::uint64_t v, std::size_t n) {
  std::string s;
  pgpipe::detail::codec::store_be(s, v, n);
  return s;
}

}  // namespace pgpipe::test
