// PostgreSQL's rules around SASLprep (src/common/saslprep.c, pg_saslprep):
// which passwords are errors, which are used as typed, and when the prepared
// form is used. The Unicode work itself is the backend's (saslprep_backend.hpp).
#include <pgpipe/scram/saslprep.hpp>

#include "scram/saslprep_backend.hpp"

namespace pgpipe::scram {
namespace {

// Strict UTF-8 as PostgreSQL's pg_utf8_islegal: shortest form only, no
// surrogates, nothing above U+10FFFF.
bool valid_utf8(std::string_view s) {
  const auto* p = reinterpret_cast<const unsigned char*>(s.data());
  const auto* end = p + s.size();
  while (p < end) {
    const unsigned char c = *p;
    std::size_t len = 0;
    unsigned char lo = 0x80, hi = 0xBF;  // bounds of the second byte
    if (c < 0x80) {
      ++p;
      continue;
    } else if (c >= 0xC2 && c <= 0xDF) {
      len = 2;
    } else if (c >= 0xE0 && c <= 0xEF) {
      len = 3;
      if (c == 0xE0) lo = 0xA0;
      if (c == 0xED) hi = 0x9F;
    } else if (c >= 0xF0 && c <= 0xF4) {
      len = 4;
      if (c == 0xF0) lo = 0x90;
      if (c == 0xF4) hi = 0x8F;
    } else {
      return false;
    }
    if (static_cast<std::size_t>(end - p) < len) return false;
    if (p[1] < lo || p[1] > hi) return false;
    for (std::size_t i = 2; i < len; ++i) {
      if (p[i] < 0x80 || p[i] > 0xBF) return false;
    }
    p += len;
  }
  return true;
}

bool is_ascii(std::string_view s) {
  for (unsigned char c : s) {
    if (c >= 0x80) return false;
  }
  return true;
}

}  // namespace

expected<prepared_password> saslprep(std::string_view password) {
  if (password.find('\0') != std::string_view::npos) {
    return make_failure(scram_errc::bad_argument, "password contains a NUL byte (PostgreSQL passwords cannot)");
  }
  if (password.size() > max_password_length) {
    return make_failure(scram_errc::password_too_long, "password is " + std::to_string(password.size()) +
                                                     " bytes; PostgreSQL accepts at most " +
                                                     std::to_string(max_password_length));
  }
  // PostgreSQL returns pure ASCII untouched, control characters included
  // (SASLprep would reject those, and the fallback is the raw bytes anyway).
  if (is_ascii(password)) return prepared_password{std::string(password), saslprep_status::unchanged_ascii};
  if (!valid_utf8(password)) return prepared_password{std::string(password), saslprep_status::invalid_utf8};

  auto r = detail::saslprep_backend(password);
  if (!r) return r.error();
  using outcome = detail::saslprep_backend_result::outcome;
  switch (r->what) {
    case outcome::prepared:
      // PostgreSQL refuses a password that maps to nothing (e.g. only soft
      // hyphens) and falls back to the raw bytes.
      if (r->bytes.empty()) return prepared_password{std::string(password), saslprep_status::prohibited};
      return prepared_password{std::move(r->bytes), saslprep_status::prepared};
    case outcome::invalid_utf8:
      return prepared_password{std::string(password), saslprep_status::invalid_utf8};
    case outcome::prohibited:
      break;
  }
  return prepared_password{std::string(password), saslprep_status::prohibited};
}

}  // namespace pgpipe::scram
