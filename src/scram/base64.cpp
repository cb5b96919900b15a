#include <pgpipe/scram/base64.hpp>

#include <openssl/evp.h>

namespace pgpipe::scram {
namespace {

bool is_b64_char(char c) {
  return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '+' || c == '/';
}

}  // namespace

std::string base64_encode(std::span<const unsigned char> bytes) {
  std::string out(4 * ((bytes.size() + 2) / 3), '\0');
  if (bytes.empty()) return out;
  const int n = EVP_EncodeBlock(reinterpret_cast<unsigned char*>(out.data()), bytes.data(),
                                static_cast<int>(bytes.size()));
  out.resize(static_cast<std::size_t>(n));
  return out;
}

expected<std::vector<unsigned char>> base64_decode(std::string_view text) {
  // EVP_DecodeBlock is lenient (skips leading whitespace, turns padding into
  // zero bytes), so the grammar is checked here first and the padding
  // subtracted afterwards.
  if (text.size() % 4 != 0) {
    return make_failure(scram_errc::bad_argument, "base64 length " + std::to_string(text.size()) +
                                                " is not a multiple of 4");
  }
  std::size_t padding = 0;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (c == '=') {
      const std::size_t from_end = text.size() - i;
      if (from_end > 2 || (from_end == 2 && text.back() != '=')) {
        return make_failure(scram_errc::bad_argument, "base64 padding '=' at position " + std::to_string(i) +
                                                    " is not at the end");
      }
      ++padding;
    } else if (!is_b64_char(c)) {
      return make_failure(scram_errc::bad_argument,
                          "invalid base64 character at position " + std::to_string(i));
    }
  }
  std::vector<unsigned char> out(text.size() / 4 * 3);
  if (text.empty()) return out;
  const int n = EVP_DecodeBlock(out.data(), reinterpret_cast<const unsigned char*>(text.data()),
                                static_cast<int>(text.size()));
  if (n < 0 || static_cast<std::size_t>(n) != out.size()) {
    return make_failure(scram_errc::bad_argument, "invalid base64");
  }
  out.resize(out.size() - padding);
  return out;
}

}  // namespace pgpipe::scram
