// from_chars_float: std::from_chars for floating point, also with a standard
// library that has only its integer overloads (libc++ before 20, which the
// libpqxx 8 build uses: clang-16 with libc++ 16, .ci/compat-libpqxx8).
// Not meant to be included directly.
#pragma once

#include <charconv>
#include <concepts>
#include <system_error>
#include <version>

#if !defined(__cpp_lib_to_chars)
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <locale.h>  // newlocale, strtod_l (POSIX)
#include <string>
#endif

namespace pgpipe::detail {

/// std::from_chars(first, last, out) for a floating-point T (the general
/// format): on success sets `out`; on an error leaves it unchanged. Where the
/// library lacks it, strtod under the "C" locale (never the process's, which
/// may spell the point as a comma), held to from_chars' grammar: no leading
/// space or '+', no hexadecimal ("0x1" reads as 0, stopping at the x), and a
/// value that overflows or underflows to zero is result_out_of_range.
/// Thread-safe. May throw std::bad_alloc (the fallback copies the text, which
/// strtod needs terminated).
template <std::floating_point T>
std::from_chars_result from_chars_float(const char* first, const char* last, T& out) {
#if defined(__cpp_lib_to_chars)
  return std::from_chars(first, last, out);
#else
  std::string text(first, last);
  std::size_t sign = !text.empty() && text[0] == '-' ? 1 : 0;
  if (text.size() == sign || text[sign] == '+' || text[sign] == '-' ||
      !(text[sign] == '.' || (text[sign] >= '0' && text[sign] <= '9') || text[sign] == 'i' || text[sign] == 'I' ||
        text[sign] == 'n' || text[sign] == 'N')) {
    return {first, std::errc::invalid_argument};
  }
  if (text.size() > sign + 1 && text[sign] == '0' && (text[sign + 1] == 'x' || text[sign + 1] == 'X')) {
    text.resize(sign + 1);
  }
  static const locale_t c_locale = newlocale(LC_ALL_MASK, "C", locale_t{});
  const char* begin = text.c_str();
  char* end = nullptr;
  errno = 0;
  T v{};
  if constexpr (std::same_as<T, float>) {
    v = strtof_l(begin, &end, c_locale);
  } else if constexpr (std::same_as<T, double>) {
    v = strtod_l(begin, &end, c_locale);
  } else {
    v = strtold_l(begin, &end, c_locale);
  }
  if (end == begin) return {first, std::errc::invalid_argument};
  const char* ptr = first + (end - begin);
  // ERANGE with a finite non-zero value is a subnormal, which from_chars returns.
  if (errno == ERANGE && (v == 0 || std::isinf(v))) return {ptr, std::errc::result_out_of_range};
  out = v;
  return {ptr, std::errc{}};
#endif
}

}  // namespace pgpipe::detail
