// The typed COPY core both drivers share (pgpipe/async_typed_copy.hpp,
// pgpipe/blocking_typed_copy.hpp): rows of T to COPY text and back, without
// I/O. Each field goes through its type's param_traits::encode (the text
// form parameters use) and field_traits' text decoder, the ones typed rows
// use; T's fields are walked as row_shape.hpp describes. Users must not
// touch this header's contents.
//
// Why text COPY and not binary: the server converts text to the column's
// type (an int64_t field fills an int4 column, a std::string an enum or a
// numeric), so the writer needs no lookup of the columns' types and no
// binary encoder per type; the escaping is the only thing to get right, and
// it lives in one place (copy_text.hpp).
#pragma once

#include <pgpipe/detail/copy_text.hpp>
#include <pgpipe/error.hpp>
#include <pgpipe/row_shape.hpp>
#include <pgpipe/type_traits.hpp>

#include <charconv>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <optional>
#include <string>
#include <string_view>
#include <system_error>
#include <type_traits>
#include <vector>

namespace pgpipe::detail {

/// The bytes of COPY data the drivers send at a time: what the raw COPY
/// benchmarks and tests use, big enough that a write costs little per row.
inline constexpr std::size_t typed_copy_chunk_bytes = 64 * 1024;

/// "field 2 (name)" or "field 2": T's field `i`, counted from 1.
template <class T>
std::string copy_field_name(std::size_t i) {
  std::string s = "field " + std::to_string(i + 1);
  const std::string_view n = row_traits<T>::members[i].name;
  if (!n.empty()) {
    s += " (";
    s += n;
    s += ')';
  }
  return s;
}

/// Rows of T as COPY text lines. Row numbers in messages count from 1 over
/// the life of the encoder.
template <class T>
class copy_row_encoder {
 public:
  /// Appends `row` as one line to `out`. On failure `out` is as it was, the
  /// code is errc::invalid_argument (or the code an encoder threw) and
  /// `message` names the row, the field and the reason.
  std::error_code append(const T& row, std::string& out, std::string& message) {
    const std::size_t before = out.size();
    ++rows_;
    std::error_code ec;
    std::size_t i = 0;
    // row_traits walks a mutable T; the fields are only read here.
    row_traits<T>::for_each(const_cast<T&>(row), [&](auto, const auto& member) {
      if (ec) return;
      if (i != 0) out += '\t';
      ec = append_field(member, out, message);
      ++i;
    });
    if (ec) {
      out.resize(before);
      message = "typed COPY: row " + std::to_string(rows_) + ", " + copy_field_name<T>(i - 1) + ": " + message;
    } else {
      out += '\n';
    }
    return ec;
  }

  /// Rows given to append() so far (including one that failed).
  std::uint64_t rows() const noexcept { return rows_; }

 private:
  static std::error_code append_text(std::string_view text, std::string& out, std::string& why) {
    if (copy_text::append_escaped(out, text)) return {};
    why = "the value contains a NUL byte, which COPY text cannot carry";
    return make_error_code(errc::invalid_argument);
  }

  template <class M>
  static std::error_code append_field(const M& member, std::string& out, std::string& why) {
    // A string's text form is itself (param_traits<std::string>::encode
    // returns it): escaped straight from the member, without the copy that
    // encode() makes, which was most of a typed row's cost.
    if constexpr (std::is_same_v<M, std::string> || std::is_same_v<M, std::string_view>) {
      return append_text(member, out, why);
    } else if constexpr (std::is_same_v<M, std::optional<std::string>>) {
      if (!member) {
        copy_text::append_null(out);
        return {};
      }
      return append_text(*member, out, why);
    } else if constexpr (std::is_same_v<M, std::int16_t> || std::is_same_v<M, std::int32_t> ||
                         std::is_same_v<M, std::int64_t>) {
      // The same digits as encode()'s, without a std::string per field.
      char digits[24];
      const auto r = std::to_chars(digits, digits + sizeof digits, member);
      out.append(digits, r.ptr);
      return {};
    } else {
      std::optional<std::string> text;
      try {
        text = param_traits_for<M>::encode(member);
      } catch (const error& e) {
        why = e.what();
        return e.code();
      } catch (const std::exception& e) {
        why = e.what();
        return make_error_code(errc::invalid_argument);
      }
      if (!text) {
        copy_text::append_null(out);
        return {};
      }
      return append_text(*text, out, why);
    }
  }

  std::uint64_t rows_ = 0;
};

/// COPY text lines to rows of T. The field count is checked against T on
/// the first row (a COPY's rows all have its column count); NULL reads only
/// into std::optional fields. COPY text names no column types, so there is
/// no type OID check: a value its field cannot read is
/// errc::conversion_error (or out_of_range) naming the row and the field.
template <class T>
class copy_row_decoder {
 public:
  /// Decodes every whole line of `chunk` (lines may straddle chunks),
  /// appending the rows to `out`. On failure the rows decoded before the bad
  /// one stay in `out`, `message` says why, and the decoder must not be fed
  /// again.
  std::error_code feed(std::string_view chunk, std::vector<T>& out, std::string& message) {
    std::error_code ec;
    lines_.feed(chunk, [&](std::string_view line) {
      ec = decode_line(line, out.emplace_back(), message);
      if (ec) out.pop_back();
      return !ec;
    });
    return ec;
  }

  /// The data ended: an error when it stopped inside a row.
  std::error_code finish(std::string& message) const {
    if (lines_.at_line_end()) return {};
    message = "typed COPY: the data ended inside row " + std::to_string(rows_ + 1);
    return make_error_code(errc::conversion_error);
  }

  /// One line (without its '\n') into `out`.
  std::error_code decode_line(std::string_view line, T& out, std::string& message) {
    ++rows_;
    std::string why;
    if (!fields_.parse(line, why)) {
      message = "typed COPY: row " + std::to_string(rows_) + " is not COPY text: " + why;
      return make_error_code(errc::conversion_error);
    }
    constexpr std::size_t expected = row_traits<T>::members.size();
    if (fields_.size() != expected) {
      message = "typed COPY: row " + std::to_string(rows_) + " has " + std::to_string(fields_.size()) +
                " fields, the row type has " + std::to_string(expected);
      return make_error_code(errc::columns_mismatch);
    }
    std::error_code ec;
    std::size_t failed = 0;
    row_traits<T>::for_each(out, [&](auto i, auto& member) {
      if (ec) return;
      ec = decode_field_text(fields_[i], member);
      if (ec) failed = i;
    });
    if (ec) {
      message = "typed COPY: row " + std::to_string(rows_) + ", " + copy_field_name<T>(failed) + " as " +
                row_traits<T>::members[failed].cpp_name() + ": " + ec.message();
      if (ec == errc::conversion_error) {
        const std::string_view t = *fields_[failed];
        message += " (text \"" + std::string(t.substr(0, 40)) + (t.size() > 40 ? "...\")" : "\")");
      }
    }
    return ec;
  }

  /// Lines decoded so far (including one that failed).
  std::uint64_t rows() const noexcept { return rows_; }

 private:
  template <class M>
  static std::error_code decode_field_text(std::optional<std::string_view> text, M& out) {
    using V = row_shape::field_value_of<M>;
    if (!text) {
      if constexpr (V::nullable) {
        out.reset();
        return {};
      } else {
        return make_error_code(errc::null_value);
      }
    }
    const field_value v{*text, 0, wire_format::text};
    if constexpr (V::nullable) {
      auto& x = out.emplace();
      auto ec = traits_detect::decode_value(v, x);
      if (ec) out.reset();
      return ec;
    } else {
      return traits_detect::decode_value(v, out);
    }
  }

  copy_text::line_splitter lines_;
  copy_text::row_fields fields_;
  std::uint64_t rows_ = 0;
};

}  // namespace pgpipe::detail
