// The properties the COPY-text fuzz target checks (copy_text_fuzz.cpp), in a
// header so unit_copy_text_fuzz_corpus_test replays the checked-in corpus
// through the same checks in every build. COPY OUT data comes from the
// server or whatever sits between, so no input may crash or read out of
// bounds, and:
//  - row_fields::parse either succeeds or says why; the fields it gives,
//    written back with append_escaped (NULL as \N), parse to the same fields;
//  - any bytes escaped as one field parse back to exactly those bytes, never
//    to NULL;
//  - line_splitter gives the same lines whatever the chunk boundaries;
//  - the typed decoder answers success or one of pgpipe's own codes, and a
//    row it decodes re-encodes to a line that decodes equal.
//
// Input: the first byte picks a split point for the chunked feed; the rest
// is COPY data.
#pragma once

#include <pgpipe/detail/copy_text.hpp>
#include <pgpipe/detail/typed_copy.hpp>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

namespace pgpipe::fuzz_copy_text {

using violation = std::optional<std::string>;

using fields = std::vector<std::optional<std::string>>;

/// The fields of `line`, or std::nullopt when it is not COPY text (with
/// `why` set, empty only if the parser gave no reason).
inline std::optional<fields> parse(std::string_view line, std::string& why) {
  detail::copy_text::row_fields f;
  why.clear();
  if (!f.parse(line, why)) return std::nullopt;
  fields out;
  for (std::size_t i = 0; i < f.size(); ++i) {
    if (auto v = f[i]) {
      out.emplace_back(std::string(*v));
    } else {
      out.emplace_back(std::nullopt);
    }
  }
  return out;
}

/// The fields written back as a line; std::nullopt when one holds a NUL
/// byte (which append_escaped must refuse: text COPY cannot carry it).
inline std::optional<std::string> write(const fields& fs) {
  std::string line;
  for (std::size_t i = 0; i < fs.size(); ++i) {
    if (i) line += '\t';
    if (fs[i]) {
      if (!detail::copy_text::append_escaped(line, *fs[i])) return std::nullopt;
    } else {
      detail::copy_text::append_null(line);
    }
  }
  return line;
}

inline bool has_nul(std::string_view v) { return v.find('\0') != std::string_view::npos; }

using row = std::tuple<std::int64_t, std::optional<std::string>, bool>;

inline bool own_code(const std::error_code& ec) {
  return !ec || ec == errc::conversion_error || ec == errc::out_of_range || ec == errc::null_value ||
         ec == errc::columns_mismatch;
}

inline violation check_line(std::string_view line) {
  std::string why;
  if (auto f = parse(line, why)) {
    bool nul = false;
    for (const auto& v : *f) nul = nul || (v && has_nul(*v));
    const auto again = write(*f);
    if (again.has_value() == nul) return "a field was refused for a NUL byte it does not hold, or the reverse";
    if (again && parse(*again, why) != f) return "parsed fields do not survive a write and a parse";
  } else if (why.empty()) {
    return "a line was refused without a reason";
  }
  // The line's bytes as one field's value.
  std::string one;
  if (!detail::copy_text::append_escaped(one, line)) {
    if (!has_nul(line)) return "a value without a NUL byte was refused";
    return std::nullopt;
  }
  const auto back = parse(one, why);
  if (!back || back->size() != 1 || !(*back)[0] || *(*back)[0] != line) return "an escaped value does not parse back";
  return std::nullopt;
}

inline violation check_input(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return std::nullopt;
  const std::string_view all(reinterpret_cast<const char*>(data) + 1, size - 1);
  const std::size_t cut = size > 1 ? data[0] % (all.size() + 1) : 0;

  std::vector<std::string> whole, split;
  detail::copy_text::line_splitter a, b;
  auto into = [](std::vector<std::string>& v) {
    return [&v](std::string_view l) {
      v.emplace_back(l);
      return true;
    };
  };
  a.feed(all, into(whole));
  b.feed(all.substr(0, cut), into(split));
  b.feed(all.substr(cut), into(split));
  if (whole != split || a.at_line_end() != b.at_line_end()) return "lines depend on the chunk boundaries";
  for (const std::string& l : whole)
    if (auto v = check_line(l)) return v;

  detail::copy_row_decoder<row> dec;
  std::vector<row> rows;
  std::string message;
  const auto ec = dec.feed(all, rows, message);
  if (!own_code(ec)) return "the typed decoder answered a foreign code: " + ec.message();
  if (ec && message.empty()) return "the typed decoder failed without a message";
  detail::copy_row_encoder<row> enc;
  for (const row& r : rows) {
    std::string line;
    if (enc.append(r, line, message)) {
      // Only a NUL byte in the string may refuse to encode.
      if (!std::get<1>(r) || std::get<1>(r)->find('\0') == std::string::npos) return "a decoded row does not encode";
      continue;
    }
    detail::copy_row_decoder<row> again;
    std::vector<row> back;
    if (again.feed(line, back, message) || back.size() != 1 || back[0] != r)
      return "a decoded row does not survive an encode and a decode";
  }
  return std::nullopt;
}

}  // namespace pgpipe::fuzz_copy_text
