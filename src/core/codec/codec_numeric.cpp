// pgpipe::numeric and its codecs. A numeric is kept as canonical decimal
// text: exact by construction, cheap to print, and what both the text
// format and libpqxx hand us. The binary format (base-10000 digits) is
// converted to and from that text here.
#include <pgpipe/detail/codec.hpp>
#include <pgpipe/detail/from_chars_float.hpp>
#include <pgpipe/error.hpp>

#include <charconv>
#include <cstdio>
#include <cmath>
#include <limits>

namespace pgpipe {
namespace {

std::error_code bad() { return make_error_code(errc::conversion_error); }

bool iequals(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i) {
    char x = a[i], y = b[i];
    if (x >= 'A' && x <= 'Z') x = static_cast<char>(x - 'A' + 'a');
    if (y >= 'A' && y <= 'Z') y = static_cast<char>(y - 'A' + 'a');
    if (x != y) return false;
  }
  return true;
}

// The server's limits: 131072 digits before the point, 16383 after.
constexpr std::size_t max_int_digits = 131072;
constexpr std::size_t max_frac_digits = 16383;

// One base-10000 digit as four decimal digits.
void append4(std::string& s, int d) {
  s.push_back(static_cast<char>('0' + d / 1000));
  s.push_back(static_cast<char>('0' + d / 100 % 10));
  s.push_back(static_cast<char>('0' + d / 10 % 10));
  s.push_back(static_cast<char>('0' + d % 10));
}

}  // namespace

std::error_code numeric::parse(std::string_view in, numeric& out) {
  if (iequals(in, "nan")) {
    out.text_ = "NaN";
    return {};
  }
  bool neg = false;
  std::string_view s = in;
  if (!s.empty() && (s[0] == '+' || s[0] == '-')) {
    neg = s[0] == '-';
    s.remove_prefix(1);
  }
  if (iequals(s, "infinity") || iequals(s, "inf")) {
    out.text_ = neg ? "-Infinity" : "Infinity";
    return {};
  }
  // digits[.digits][e[+-]digits]
  std::size_t i = 0;
  std::string ip, fp;
  while (i < s.size() && s[i] >= '0' && s[i] <= '9') ip.push_back(s[i++]);
  if (i < s.size() && s[i] == '.') {
    ++i;
    while (i < s.size() && s[i] >= '0' && s[i] <= '9') fp.push_back(s[i++]);
  }
  if (ip.empty() && fp.empty()) return bad();
  long exp = 0;
  if (i < s.size() && (s[i] == 'e' || s[i] == 'E')) {
    ++i;
    auto r = std::from_chars(s.data() + i, s.data() + s.size(), exp);
    if (r.ec != std::errc{} || r.ptr == s.data() + i) return bad();
    if (exp > static_cast<long>(max_int_digits) || exp < -static_cast<long>(max_frac_digits)) return bad();
    i = static_cast<std::size_t>(r.ptr - s.data());
  }
  if (i != s.size()) return bad();
  // Move the point by exp.
  while (exp > 0) {
    ip.push_back(fp.empty() ? '0' : fp.front());
    if (!fp.empty()) fp.erase(0, 1);
    --exp;
  }
  while (exp < 0) {
    fp.insert(fp.begin(), ip.empty() ? '0' : ip.back());
    if (!ip.empty()) ip.pop_back();
    ++exp;
  }
  std::size_t nz = ip.find_first_not_of('0');
  ip = nz == std::string::npos ? "0" : ip.substr(nz);
  if (ip.size() > max_int_digits || fp.size() > max_frac_digits) return bad();
  bool zero = ip == "0" && fp.find_first_not_of('0') == std::string::npos;
  out.text_.clear();
  if (neg && !zero) out.text_.push_back('-');  // the server has no negative zero
  out.text_ += ip;
  if (!fp.empty()) {
    out.text_.push_back('.');
    out.text_ += fp;
  }
  return {};
}

numeric::numeric(std::string_view text) {
  if (auto ec = parse(text, *this)) throw error(ec, "not a numeric value");
}

numeric::numeric(std::int64_t v) {
  char buf[24];
  auto r = std::to_chars(buf, buf + sizeof buf, v);
  text_.assign(buf, r.ptr);
}

std::error_code numeric::to_double(double& out) const {
  out = 0;
  if (is_nan()) {
    out = std::numeric_limits<double>::quiet_NaN();
    return {};
  }
  if (is_infinity()) {
    out = is_negative() ? -std::numeric_limits<double>::infinity() : std::numeric_limits<double>::infinity();
    return {};
  }
  double v = 0;
  auto r = detail::from_chars_float(text_.data(), text_.data() + text_.size(), v);
  // result_out_of_range covers overflow and underflow: neither is silently
  // turned into infinity or zero.
  if (r.ec != std::errc{}) return make_error_code(errc::out_of_range);
  out = v;
  return {};
}

std::error_code numeric::to_int64(std::int64_t& out) const {
  out = 0;
  if (!is_finite()) return make_error_code(errc::out_of_range);
  std::string_view s = text_;
  auto dot = s.find('.');
  if (dot != std::string_view::npos) {
    if (s.substr(dot + 1).find_first_not_of('0') != std::string_view::npos) return make_error_code(errc::out_of_range);
    s = s.substr(0, dot);
  }
  std::int64_t v = 0;
  auto r = std::from_chars(s.data(), s.data() + s.size(), v);
  if (r.ec != std::errc{} || r.ptr != s.data() + s.size()) return make_error_code(errc::out_of_range);
  out = v;
  return {};
}

double numeric::as_double() const {
  double v = 0;
  if (auto ec = to_double(v)) throw error(ec, "numeric " + text_.substr(0, 40) + " does not fit a double");
  return v;
}

std::int64_t numeric::as_int64() const {
  std::int64_t v = 0;
  if (auto ec = to_int64(v)) throw error(ec, "numeric " + text_.substr(0, 40) + " is not an int64");
  return v;
}

namespace detail::codec {

std::error_code decode_numeric_text(std::string_view in, numeric& out) { return numeric::parse(in, out); }

std::error_code decode_numeric_binary(std::string_view in, numeric& out) {
  if (in.size() < 8) return bad();
  const auto ndigits = static_cast<std::int16_t>(load_be(in.data(), 2));
  const auto weight = static_cast<std::int16_t>(load_be(in.data() + 2, 2));
  const auto sign = static_cast<std::uint16_t>(load_be(in.data() + 4, 2));
  const auto dscale = static_cast<std::uint16_t>(load_be(in.data() + 6, 2));
  if (ndigits < 0 || in.size() != 8 + 2 * static_cast<std::size_t>(ndigits)) return bad();
  if (sign == 0xC000) return numeric::parse("NaN", out);
  if (sign == 0xD000) return numeric::parse("Infinity", out);
  if (sign == 0xF000) return numeric::parse("-Infinity", out);
  if ((sign != 0x0000 && sign != 0x4000) || dscale > max_frac_digits) return bad();
  auto digit = [&](long idx, int& d) -> bool {
    d = 0;
    if (idx < 0 || idx >= ndigits) return true;
    d = static_cast<int>(load_be(in.data() + 8 + 2 * idx, 2));
    return d < 10000;
  };
  std::string s;
  if (sign == 0x4000) s.push_back('-');
  char buf[8];
  if (weight < 0) {
    s.push_back('0');
  } else {
    for (long w = weight; w >= 0; --w) {
      int d = 0;
      if (!digit(weight - w, d)) return bad();
      if (w == weight) {
        auto r = std::to_chars(buf, buf + sizeof buf, d);
        s.append(buf, r.ptr);
      } else {
        append4(s, d);
      }
    }
  }
  if (dscale > 0) {
    s.push_back('.');
    const std::size_t start = s.size();
    for (long k = 0; s.size() - start < dscale; ++k) {
      int d = 0;
      if (!digit(static_cast<long>(weight) + 1 + k, d)) return bad();
      append4(s, d);
    }
    s.resize(start + dscale);
  }
  // Every digit must have been in range, including ones past dscale.
  for (long i = 0; i < ndigits; ++i) {
    int d = 0;
    if (!digit(i, d)) return bad();
  }
  return numeric::parse(s, out);
}

void encode_numeric_binary(const numeric& in, std::string& out) {
  auto header = [&](std::int16_t nd, std::int16_t w, std::uint16_t sign, std::uint16_t dscale) {
    store_be(out, static_cast<std::uint16_t>(nd), 2);
    store_be(out, static_cast<std::uint16_t>(w), 2);
    store_be(out, sign, 2);
    store_be(out, dscale, 2);
  };
  if (in.is_nan()) return header(0, 0, 0xC000, 0);
  if (in.is_infinity()) return header(0, 0, in.is_negative() ? 0xF000 : 0xD000, 0);
  std::string_view s = in.str();
  const bool neg = !s.empty() && s[0] == '-';
  if (neg) s.remove_prefix(1);
  auto dot = s.find('.');
  std::string ip(s.substr(0, dot));
  std::string fp(dot == std::string_view::npos ? std::string_view{} : s.substr(dot + 1));
  const auto dscale = static_cast<std::uint16_t>(fp.size());
  ip.insert(0, (4 - ip.size() % 4) % 4, '0');
  fp.append((4 - fp.size() % 4) % 4, '0');
  std::vector<int> groups;
  for (std::size_t i = 0; i < ip.size(); i += 4) groups.push_back(std::stoi(ip.substr(i, 4)));
  for (std::size_t i = 0; i < fp.size(); i += 4) groups.push_back(std::stoi(fp.substr(i, 4)));
  long weight = static_cast<long>(ip.size() / 4) - 1;
  std::size_t first = 0;
  while (first < groups.size() && groups[first] == 0) {
    ++first;
    --weight;
  }
  std::size_t last = groups.size();
  while (last > first && groups[last - 1] == 0) --last;
  if (first == last) return header(0, 0, 0, dscale);
  header(static_cast<std::int16_t>(last - first), static_cast<std::int16_t>(weight), neg ? 0x4000 : 0, dscale);
  for (std::size_t i = first; i < last; ++i) store_be(out, static_cast<std::uint16_t>(groups[i]), 2);
}

}  // namespace detail::codec
}  // namespace pgpipe
