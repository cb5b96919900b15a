// SASLprep's Unicode work with ICU's usprep and its RFC 4013 profile
// (USPREP_RFC4013_SASLPREP). The profile's tables are RFC 3454's, Unicode 3.2,
// the same ones PostgreSQL's src/common/saslprep.c is generated from:
// USPREP_DEFAULT prohibits unassigned code points as PostgreSQL does, and
// the bidi rules of RFC 3454 section 6 are on in the profile.
#include "scram/saslprep_backend.hpp"

#include <cstdint>
#include <limits>
#include <memory>
#include <vector>

#include <unicode/usprep.h>
#include <unicode/ustring.h>

#include <pgpipe/scram/saslprep.hpp>

#include "scram/crypto.hpp"

namespace pgpipe::scram::detail {
namespace {

// UTF-16 never takes more units than UTF-8 takes bytes, and NFKC expands a
// code point to at most 18 (U+FDFA): every length below fits ICU's int32_t.
static_assert(max_password_length <= std::numeric_limits<std::int32_t>::max() / 18);

// A buffer that held (part of) a password, wiped when it goes away.
template <class T>
class wiped_buffer {
 public:
  explicit wiped_buffer(std::size_t n) : v_(n) {}
  wiped_buffer(const wiped_buffer&) = delete;
  wiped_buffer& operator=(const wiped_buffer&) = delete;
  ~wiped_buffer() { cleanse(v_.data(), v_.size() * sizeof(T)); }
  T* data() noexcept { return v_.data(); }
  std::int32_t capacity() const noexcept { return static_cast<std::int32_t>(v_.size()); }

 private:
  std::vector<T> v_;
};

struct profile_closer {
  void operator()(UStringPrepProfile* p) const noexcept { usprep_close(p); }
};

failure icu_failure(const char* step, UErrorCode status) {
  return make_failure(scram_errc::crypto_failure,
                      std::string("SASLprep (ICU): ") + step + " failed: " + u_errorName(status));
}

}  // namespace

expected<saslprep_backend_result> saslprep_backend(std::string_view utf8) {
  UErrorCode status = U_ZERO_ERROR;
  // ICU caches the profile's data once per process; opening is a lookup.
  const std::unique_ptr<UStringPrepProfile, profile_closer> profile(
      usprep_openByType(USPREP_RFC4013_SASLPREP, &status));
  if (U_FAILURE(status)) return icu_failure("opening the RFC 4013 profile", status);

  const auto in_bytes = static_cast<std::int32_t>(utf8.size());
  wiped_buffer<UChar> in(utf8.size() + 1);
  std::int32_t in_len = 0;
  u_strFromUTF8(in.data(), in.capacity(), &in_len, utf8.data(), in_bytes, &status);
  if (status == U_INVALID_CHAR_FOUND) return saslprep_backend_result{saslprep_backend_result::outcome::invalid_utf8, {}};
  if (U_FAILURE(status)) return icu_failure("UTF-8 to UTF-16", status);

  // A first try with room for the usual case, then exactly the size ICU asks for.
  auto out = std::make_unique<wiped_buffer<UChar>>(static_cast<std::size_t>(in_len) * 2 + 16);
  std::int32_t out_len = usprep_prepare(profile.get(), in.data(), in_len, out->data(), out->capacity(),
                                        USPREP_DEFAULT, nullptr, &status);
  if (status == U_BUFFER_OVERFLOW_ERROR) {
    status = U_ZERO_ERROR;
    out = std::make_unique<wiped_buffer<UChar>>(static_cast<std::size_t>(out_len) + 1);
    out_len = usprep_prepare(profile.get(), in.data(), in_len, out->data(), out->capacity(), USPREP_DEFAULT,
                             nullptr, &status);
  }
  switch (status) {
    case U_STRINGPREP_PROHIBITED_ERROR:
    case U_STRINGPREP_UNASSIGNED_ERROR:
    case U_STRINGPREP_CHECK_BIDI_ERROR:
      return saslprep_backend_result{saslprep_backend_result::outcome::prohibited, {}};
    default:
      if (U_FAILURE(status)) return icu_failure("usprep_prepare", status);
  }

  // UTF-16 to UTF-8: at most 3 bytes per unit.
  wiped_buffer<char> prepared(static_cast<std::size_t>(out_len) * 3 + 1);
  std::int32_t prepared_len = 0;
  u_strToUTF8(prepared.data(), prepared.capacity(), &prepared_len, out->data(), out_len, &status);
  if (U_FAILURE(status)) return icu_failure("UTF-16 to UTF-8", status);
  return saslprep_backend_result{saslprep_backend_result::outcome::prepared,
                                 std::string(prepared.data(), static_cast<std::size_t>(prepared_len))};
}

}  // namespace pgpipe::scram::detail

std::string_view pgpipe::scram::saslprep_library() noexcept { return "ICU"; }
