// pgpipe::range<T>: a PostgreSQL range value (int4range, int8range,
// numrange, tsrange, tstzrange, daterange, or a user range over a type
// pgpipe reads), both ways in both drivers.
//
//   T                                        reads                 sent as
//   std::int32_t / std::int64_t              int4range, int8range  int4range / int8range
//   pgpipe::numeric                          numrange              numrange
//   std::chrono::local_time<microseconds>    tsrange               tsrange
//   std::chrono::sys_time<microseconds>      tstzrange             tstzrange
//   std::chrono::sys_days                    daterange             daterange
//
// A multirange (PostgreSQL 14+: int4multirange...) is pgpipe::multirange<T>,
// both ways; it also reads as std::vector<pgpipe::range<T>>, as an array of
// ranges does. (A std::vector<range<T>> parameter is an array of ranges.)
// The server holds a multirange normalised: its ranges sorted, overlapping
// and adjacent ones merged, empty ones dropped ('{[5,7),[1,3),[3,4)}' comes
// back '{[1,4),[5,7)}').
//
// What the server does and pgpipe does not: discrete ranges (int4range,
// int8range, daterange) come back canonical, '[)' - send [1,5] and read
// [1,6) - and a range with no values ('[3,3)') comes back empty. A range
// reads what the server holds; compare ranges after a round trip with that
// in mind.
//
// Unbounded is not infinite: '[2024-01-01,)' has no upper bound (upper() is
// std::nullopt), '[2024-01-01,infinity)' has one, the date 'infinity'
// (std::chrono::sys_days::max(), as for plain dates).
//
// Thread-safety: a value type.
#pragma once

#include <pgpipe/error.hpp>
#include <pgpipe/type_traits.hpp>
#include <pgpipe/types.hpp>

#include <optional>
#include <string>
#include <string_view>
#include <system_error>
#include <utility>
#include <vector>

namespace pgpipe {

/// A range of T: empty, or a lower and an upper bound, each inclusive,
/// exclusive or absent (unbounded).
template <class T>
class range {
 public:
  /// The empty range ('empty').
  range() = default;
  /// A range from its bounds, std::nullopt for an unbounded side. `bounds`
  /// is what the server's constructor functions take: "[)" (the default),
  /// "[]", "(]" or "()"; an unbounded side is never inclusive, whatever it
  /// says. Throws pgpipe::error(errc::invalid_argument) for any other
  /// `bounds`. Whether lower <= upper is the server's to check.
  range(std::optional<T> lower, std::optional<T> upper, std::string_view bounds = "[)")
      : lower_(std::move(lower)), upper_(std::move(upper)) {
    if (bounds.size() != 2 || (bounds[0] != '[' && bounds[0] != '(') || (bounds[1] != ']' && bounds[1] != ')'))
      throw error(errc::invalid_argument, "range bounds must be \"[)\", \"[]\", \"(]\" or \"()\", not \"" +
                                              std::string(bounds) + "\"");
    empty_ = false;
    lower_inclusive_ = lower_ && bounds[0] == '[';
    upper_inclusive_ = upper_ && bounds[1] == ']';
  }

  /// True for the empty range (no bounds at all).
  bool empty() const noexcept { return empty_; }
  /// The bounds: std::nullopt when unbounded on that side (or empty).
  ///@{
  const std::optional<T>& lower() const noexcept { return lower_; }
  const std::optional<T>& upper() const noexcept { return upper_; }
  ///@}
  /// Whether each bound belongs to the range (false when unbounded).
  ///@{
  bool lower_inclusive() const noexcept { return lower_inclusive_; }
  bool upper_inclusive() const noexcept { return upper_inclusive_; }
  ///@}
  /// A non-empty range with no bound on that side ('(,5]': lower_unbounded()).
  ///@{
  bool lower_unbounded() const noexcept { return !empty_ && !lower_; }
  bool upper_unbounded() const noexcept { return !empty_ && !upper_; }
  ///@}

  /// Bound by bound, as the values are (not canonicalised: [1,5] != [1,6)).
  friend bool operator==(const range&, const range&) = default;

 private:
  bool empty_ = true;
  std::optional<T> lower_, upper_;
  bool lower_inclusive_ = false, upper_inclusive_ = false;
};

namespace detail::ranges {
template <class T>
struct is_range : std::false_type {};
template <class T>
struct is_range<range<T>> : std::true_type {};
}  // namespace detail::ranges

/// A range parameter: binary with its range type when T has a binary form
/// and a built-in range type, else text (typed when the range type is known).
template <class T>
  requires detail::traits_detect::encodable<T>
struct param_traits<range<T>> {
  /// The bound type's traits, which encode each bound.
  using inner = param_traits<T>;
  /// The built-in range type over T's type (int4range for int...), or 0 (untyped).
  static constexpr type_oid oid = range_oid_of(detail::traits_detect::oid_of<inner>());

  /// The range's text form; throws pgpipe::error (invalid_argument) when a bound cannot be encoded.
  static std::optional<std::string> encode(const range<T>& v) {
    detail::codec::range_parts p;
    std::optional<std::string> lo, up;
    if (auto ec = parts(v, p, lo, up, [](const T& x) { return inner::encode(x); })) throw error(ec, null_bound);
    return detail::codec::encode_range_text(p);
  }
  /// The range's binary form (range_send's layout) appended to `out`; invalid_argument when a bound cannot be encoded.
  static std::error_code encode_binary(const range<T>& v, std::string& out)
    requires(oid != 0 && detail::traits_detect::has_binary<inner, T>)
  {
    detail::codec::range_parts p;
    std::optional<std::string> lo, up;
    auto bin = [](const T& x) -> std::optional<std::string> {
      std::string s;
      if (inner::encode_binary(x, s)) return std::nullopt;
      return s;
    };
    if (auto ec = parts(v, p, lo, up, bin)) return ec;
    return detail::codec::encode_range_binary(p, lo ? *lo : std::string_view(), up ? *up : std::string_view(), out);
  }

 private:
  static constexpr const char* null_bound = "a range bound cannot be sent (NULL or out of range)";
  template <class Enc>
  static std::error_code parts(const range<T>& v, detail::codec::range_parts& p, std::optional<std::string>& lo,
                               std::optional<std::string>& up, Enc enc) {
    p.empty = v.empty();
    if (p.empty) return {};
    if (v.lower()) {
      lo = enc(*v.lower());
      if (!lo) return make_error_code(errc::invalid_argument);
      p.lower = *lo;
    }
    if (v.upper()) {
      up = enc(*v.upper());
      if (!up) return make_error_code(errc::invalid_argument);
      p.upper = *up;
    }
    p.lower_inclusive = v.lower_inclusive();
    p.upper_inclusive = v.upper_inclusive();
    return {};
  }
};

/// A range read from a range column whose subtype T reads (range<int64_t>
/// reads int4range and int8range), text or binary. Bounds decode with T's
/// own decoder: its errors are the range's.
template <class T>
  requires detail::traits_detect::decodable<T>
struct field_traits<range<T>> {
  /// Binary results when the subtype reads them.
  static constexpr bool binary_results = detail::traits_detect::reads_binary<T>();
  /// A range (or multirange element) type whose subtype T accepts.
  static bool accepts(type_oid t) {
    const type_oid s = range_subtype_oid(t);
    return s != 0 && detail::traits_detect::accepts<T>(s);
  }
  /// What a type-mismatch message calls the C++ type.
  static std::string cpp_name() { return "pgpipe::range<" + detail::traits_detect::cpp_name<T>() + ">"; }
  /// Text or binary; a malformed range is conversion_error, a bound's error is T's.
  static std::error_code decode(const field_value& v, range<T>& out) {
    detail::codec::range_parts p;
    auto ec = v.format == wire_format::text ? detail::codec::split_range_text(v.data, p)
                                            : detail::codec::split_range_binary(v.data, p);
    if (ec) return ec;
    if (p.empty) {
      out = range<T>();
      return {};
    }
    const type_oid sub = range_subtype_oid(v.type);
    std::optional<T> lo, up;
    for (auto [bound, value] : {std::pair{&p.lower, &lo}, std::pair{&p.upper, &up}}) {
      if (!*bound) continue;
      T x{};
      if (auto e = detail::traits_detect::decode_value(field_value{**bound, sub, v.format}, x)) return e;
      *value = std::move(x);
    }
    out = range<T>(std::move(lo), std::move(up), bounds_of(p));
    return {};
  }

 private:
  static std::string_view bounds_of(const detail::codec::range_parts& p) {
    static constexpr std::string_view all[] = {"()", "(]", "[)", "[]"};
    return all[(p.lower_inclusive ? 2 : 0) + (p.upper_inclusive ? 1 : 0)];
  }
};

/// A multirange of T: its ranges, in any order (the server sorts and merges
/// them; see the file comment). No ranges is the empty multirange '{}'.
template <class T>
struct multirange {
  /// The ranges, as sent or as the server holds them.
  std::vector<range<T>> ranges;
  /// Range by range, as the values are (not normalised).
  friend bool operator==(const multirange&, const multirange&) = default;
};

/// A multirange parameter: binary with its multirange type when its ranges
/// go binary (T has a binary form and a built-in range type), else text
/// (typed when the multirange type is known).
template <class T>
  requires detail::traits_detect::encodable<T>
struct param_traits<multirange<T>> {
  /// The traits that encode each range.
  using inner = param_traits<range<T>>;
  /// The built-in multirange type over T's range type (int4multirange for int...), or 0 (untyped).
  static constexpr type_oid oid = multirange_oid_of(inner::oid);

  /// The multirange's text form; throws pgpipe::error (invalid_argument) when a bound cannot be encoded.
  static std::optional<std::string> encode(const multirange<T>& v) {
    std::vector<std::string> texts;
    texts.reserve(v.ranges.size());
    for (const range<T>& r : v.ranges) texts.push_back(*inner::encode(r));
    return detail::codec::encode_multirange_text(texts);
  }
  /// The multirange's binary form (multirange_send's layout) appended to
  /// `out`; invalid_argument when a bound cannot be encoded or a size is
  /// more than the format can say.
  static std::error_code encode_binary(const multirange<T>& v, std::string& out)
    requires(oid != 0 && requires(const range<T>& r, std::string& o) { inner::encode_binary(r, o); })
  {
    std::vector<std::string> forms(v.ranges.size());
    for (std::size_t k = 0; k < v.ranges.size(); ++k)
      if (auto ec = inner::encode_binary(v.ranges[k], forms[k])) return ec;
    return detail::codec::encode_multirange_binary(forms, out);
  }
};

/// A multirange read from a multirange column whose range's subtype T reads
/// (multirange<int64_t> reads int4multirange and int8multirange), text or
/// binary. Each range decodes as field_traits<range<T>>: its errors are the
/// multirange's; a malformed multirange is conversion_error.
template <class T>
  requires detail::traits_detect::decodable<T>
struct field_traits<multirange<T>> {
  /// The traits that decode each range.
  using inner = field_traits<range<T>>;
  /// Binary results when the subtype reads them.
  static constexpr bool binary_results = inner::binary_results;
  /// A multirange type whose range type range<T> accepts.
  static bool accepts(type_oid t) {
    const type_oid r = multirange_range_oid(t);
    return r != 0 && inner::accepts(r);
  }
  /// What a type-mismatch message calls the C++ type.
  static std::string cpp_name() { return "pgpipe::multirange<" + detail::traits_detect::cpp_name<T>() + ">"; }
  /// Text or binary.
  static std::error_code decode(const field_value& v, multirange<T>& out) {
    const type_oid r = multirange_range_oid(v.type);
    detail::codec::array_items items;
    auto ec = v.format == wire_format::text ? detail::codec::split_multirange_text(v.data, r, items)
                                            : detail::codec::split_multirange_binary(v.data, r, items);
    if (ec) return ec;
    out.ranges.clear();
    out.ranges.reserve(items.items.size());
    for (const auto& item : items.items) {
      // A multirange holds no NULL ranges: the splitters never make one.
      if (!item) return make_error_code(errc::conversion_error);
      if (auto e = inner::decode(field_value{*item, r, v.format}, out.ranges.emplace_back())) return e;
    }
    return {};
  }
};

}  // namespace pgpipe
