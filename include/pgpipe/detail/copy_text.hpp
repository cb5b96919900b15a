// COPY's text format, field by field, without I/O: what both drivers' typed
// COPY writes and reads (pgpipe/detail/typed_copy.hpp). Users must not touch
// this header's contents.
//
// The format (PostgreSQL's "COPY ... (FORMAT text)", the default): one row
// per line ending in '\n', fields separated by '\t', SQL NULL written as the
// whole field `\N`. Inside a field a backslash starts an escape:
//   \\ \t \n \r        what the writer emits for a backslash, tab, newline, CR
//   \b \f \v           backspace, form feed, vertical tab (the reader accepts them)
//   \NNN  \xHH         a byte by its octal (1-3 digits) or hex (1-2 digits) value
//   \<any other byte>  that byte
// So a field whose text is `\N` is written `\\N` and never reads as NULL.
// A NUL byte cannot travel in text COPY (the server refuses it in text), so
// the writer reports it instead of sending it.
//
// Thread-safety: stateless functions; one row_fields / line_splitter per thread.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace pgpipe::detail::copy_text {

/// Appends `v` escaped as one field's text. Returns false when `v` holds a
/// NUL byte, which text COPY cannot carry (what was appended is then to be
/// dropped by the caller); one pass does both.
inline bool append_escaped(std::string& out, std::string_view v) {
  std::size_t plain = 0;  // start of the run of bytes copied as they are
  for (std::size_t i = 0; i < v.size(); ++i) {
    char esc = 0;
    switch (v[i]) {
      case '\\': esc = '\\'; break;
      case '\t': esc = 't'; break;
      case '\n': esc = 'n'; break;
      case '\r': esc = 'r'; break;
      case '\0': return false;
      default: continue;
    }
    out.append(v.data() + plain, i - plain);
    out += '\\';
    out += esc;
    plain = i + 1;
  }
  out.append(v.data() + plain, v.size() - plain);
  return true;
}

/// Appends SQL NULL as one field.
inline void append_null(std::string& out) { out += "\\N"; }

/// One line's fields, unescaped. The storage is reused from row to row, so
/// reading many rows allocates only while the widest row grows it.
class row_fields {
 public:
  /// The number of fields.
  std::size_t size() const noexcept { return spans_.size(); }
  /// Field `i`'s text, std::nullopt for NULL; valid until the next parse.
  std::optional<std::string_view> operator[](std::size_t i) const noexcept {
    const span& s = spans_[i];
    if (s.null) return std::nullopt;
    return std::string_view(bytes_).substr(s.offset, s.length);
  }

  /// Splits and unescapes `line` (without its '\n'). False with `why` set
  /// when the line is not valid COPY text (a backslash ends it).
  bool parse(std::string_view line, std::string& why) {
    bytes_.clear();
    spans_.clear();
    std::size_t start = 0;  // current field's offset in bytes_
    std::size_t field_begin = 0;  // current field's offset in line
    for (std::size_t i = 0; i <= line.size(); ++i) {
      if (i == line.size() || line[i] == '\t') {
        // `\N` is NULL only as the whole field, as the server reads it.
        const bool null = line.substr(field_begin, i - field_begin) == "\\N";
        if (null) bytes_.resize(start);
        spans_.push_back(span{start, bytes_.size() - start, null});
        start = bytes_.size();
        field_begin = i + 1;
        continue;
      }
      const char c = line[i];
      if (c != '\\') {
        bytes_ += c;
        continue;
      }
      if (++i == line.size()) {
        why = "a backslash ends the line";
        return false;
      }
      const char e = line[i];
      switch (e) {
        case 'b': bytes_ += '\b'; break;
        case 'f': bytes_ += '\f'; break;
        case 'n': bytes_ += '\n'; break;
        case 'r': bytes_ += '\r'; break;
        case 't': bytes_ += '\t'; break;
        case 'v': bytes_ += '\v'; break;
        case 'x':
          if (i + 1 < line.size() && hex_value(line[i + 1]) >= 0) {
            int v = hex_value(line[++i]);
            if (i + 1 < line.size() && hex_value(line[i + 1]) >= 0) v = v * 16 + hex_value(line[++i]);
            bytes_ += static_cast<char>(v);
          } else {
            bytes_ += 'x';
          }
          break;
        default:
          if (e >= '0' && e <= '7') {
            int v = e - '0';
            for (int k = 0; k < 2 && i + 1 < line.size() && line[i + 1] >= '0' && line[i + 1] <= '7'; ++k)
              v = v * 8 + (line[++i] - '0');
            bytes_ += static_cast<char>(v & 0xff);
          } else {
            bytes_ += e;
          }
      }
    }
    return true;
  }

 private:
  struct span {
    std::size_t offset;
    std::size_t length;
    bool null;
  };
  static int hex_value(char c) noexcept {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
  }
  std::string bytes_;
  std::vector<span> spans_;
};

/// Cuts a stream of COPY text chunks (split anywhere) into lines.
class line_splitter {
 public:
  /// Calls on_line(std::string_view line) for each whole line in `chunk`
  /// (without its '\n'), keeping a trailing partial line for the next
  /// chunk. Stops and returns false as soon as on_line does.
  template <class F>
  bool feed(std::string_view chunk, F&& on_line) {
    std::size_t pos = 0;
    if (!carry_.empty()) {
      const std::size_t nl = chunk.find('\n');
      if (nl == std::string_view::npos) {
        carry_.append(chunk);
        return true;
      }
      carry_.append(chunk.substr(0, nl));
      const bool go_on = on_line(std::string_view(carry_));
      carry_.clear();
      if (!go_on) return false;
      pos = nl + 1;
    }
    for (;;) {
      const std::size_t nl = chunk.find('\n', pos);
      if (nl == std::string_view::npos) break;
      if (!on_line(chunk.substr(pos, nl - pos))) return false;
      pos = nl + 1;
    }
    carry_.append(chunk.substr(pos));
    return true;
  }

  /// True when no partial line is waiting (the data ended on a row's end).
  bool at_line_end() const noexcept { return carry_.empty(); }

 private:
  std::string carry_;
};

}  // namespace pgpipe::detail::copy_text
