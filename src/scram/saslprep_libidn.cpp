// SASLprep's Unicode work with libidn 1.x's "SASLprep" stringprep profile
// (RFC 3454 tables, Unicode 3.2). STRINGPREP_NO_UNASSIGNED: PostgreSQL treats
// code points unassigned in Unicode 3.2 (table A.1) as prohibited; with
// flags 0 libidn would accept them.
#include "scram/saslprep_backend.hpp"

#include <pgpipe/scram/saslprep.hpp>

#include <cstdlib>
#include <memory>
#include <string>

#include <stringprep.h>

#include "scram/crypto.hpp"

namespace pgpipe::scram::detail {
namespace {

struct free_deleter {
  void operator()(char* p) const noexcept {
    if (p != nullptr) {
      cleanse(p, std::char_traits<char>::length(p));
      std::free(p);
    }
  }
};

// libidn needs a NUL-terminated copy; it holds the password, so it is wiped.
struct wiped_string {
  std::string s;
  ~wiped_string() { cleanse(s.data(), s.size()); }
};

}  // namespace

expected<saslprep_backend_result> saslprep_backend(std::string_view utf8) {
  const wiped_string input{std::string(utf8)};
  char* raw_out = nullptr;
  const int rc = stringprep_profile(input.s.c_str(), &raw_out, "SASLprep", STRINGPREP_NO_UNASSIGNED);
  const std::unique_ptr<char, free_deleter> out(raw_out);
  switch (rc) {
    case STRINGPREP_OK:
      return saslprep_backend_result{saslprep_backend_result::outcome::prepared,
                                     out == nullptr ? std::string() : std::string(out.get())};
    case STRINGPREP_MALLOC_ERROR:
      return make_failure(scram_errc::crypto_failure, "SASLprep (libidn) ran out of memory");
    case STRINGPREP_ICONV_ERROR:
      return saslprep_backend_result{saslprep_backend_result::outcome::invalid_utf8, {}};
    default:
      // Prohibited or unassigned code point, bidi violation.
      return saslprep_backend_result{saslprep_backend_result::outcome::prohibited, {}};
  }
}

}  // namespace pgpipe::scram::detail

std::string_view pgpipe::scram::saslprep_library() noexcept { return "libidn"; }
