// Date and time codecs. Policy:
// - Text input is what the server prints with DateStyle ISO and
//   IntervalStyle postgres (the defaults, and what pgpipe's own parameters
//   use); anything else is conversion_error, never a guess at a day/month
//   order.
// - The calendar arithmetic is our own (Howard Hinnant's days_from_civil)
//   over int64, because std::chrono::year stops at 32767 and the server goes
//   to 294276 AD.
// - Overflow is checked with the compiler's checked arithmetic: a value the
//   C++ type cannot hold is out_of_range, never a wrapped date.
#include <pgpipe/detail/codec.hpp>
#include "core/codec/codec_errors.hpp"
#include <pgpipe/error.hpp>

#include <charconv>
#include <cstdio>
#include <cstdlib>
#include <limits>

namespace pgpipe::detail::codec {
namespace {

constexpr std::int64_t us_per_sec = 1'000'000;
constexpr std::int64_t us_per_day = 86'400 * us_per_sec;
// 2000-01-01, the server's epoch, relative to 1970-01-01.
constexpr std::int64_t pg_epoch_days = 10'957;
constexpr std::int64_t pg_epoch_us = pg_epoch_days * us_per_day;
// The server's timestamp range, in microseconds since 2000-01-01
// (MIN_TIMESTAMP, END_TIMESTAMP in datatype/timestamp.h).
constexpr std::int64_t pg_min_timestamp = -211'813'488'000'000'000;
constexpr std::int64_t pg_end_timestamp = 9'223'371'331'200'000'000;
// Julian day 0 (4714-11-24 BC) .. 5874898-01-01: date's range, days since 2000.
constexpr std::int64_t pg_min_date = -2'451'545;
constexpr std::int64_t pg_end_date = 2'147'483'494;

std::error_code range() { return make_error_code(errc::out_of_range); }

// A cursor over the input that never reads past its end.
struct reader {
  std::string_view s;
  std::size_t i = 0;
  bool done() const { return i >= s.size(); }
  bool eat(char c) {
    if (i < s.size() && s[i] == c) {
      ++i;
      return true;
    }
    return false;
  }
  bool eat(std::string_view w) {
    if (s.substr(i, w.size()) == w) {
      i += w.size();
      return true;
    }
    return false;
  }
  // Exactly n digits (n > 0) or, with n == 0, 1..max_digits digits.
  bool digits(std::int64_t& v, std::size_t n, std::size_t max_digits = 9) {
    std::size_t start = i;
    v = 0;
    while (i < s.size() && s[i] >= '0' && s[i] <= '9' && (i - start) < (n ? n : max_digits)) {
      v = v * 10 + (s[i] - '0');
      ++i;
    }
    std::size_t got = i - start;
    return n ? got == n : got > 0;
  }
  // ".ffffff": 1..6 digits scaled to microseconds (the server prints at most 6).
  bool fraction(std::int64_t& us) {
    us = 0;
    if (!eat('.')) return true;
    std::size_t start = i;
    std::int64_t v = 0;
    if (!digits(v, 0, 6)) return false;
    for (std::size_t k = i - start; k < 6; ++k) v *= 10;
    us = v;
    return true;
  }
};

bool is_leap(std::int64_t y) { return (y % 4 == 0 && y % 100 != 0) || y % 400 == 0; }
unsigned last_day(std::int64_t y, unsigned m) {
  static constexpr unsigned d[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  return m == 2 && is_leap(y) ? 29 : d[m - 1];
}

// "YYYY-MM-DD" (4 or more year digits) into a day number; BC is applied by the caller.
bool parse_ymd(reader& r, std::int64_t& y, std::int64_t& m, std::int64_t& d) {
  if (!r.digits(y, 0, 7) || !r.eat('-') || !r.digits(m, 2) || !r.eat('-') || !r.digits(d, 2)) return false;
  return m >= 1 && m <= 12 && d >= 1;
}

bool parse_bc(reader& r, std::int64_t& y) {
  if (r.eat(" BC")) {
    if (y < 1) return false;
    y = 1 - y;  // 1 BC is year 0
  }
  return true;
}

bool parse_hms(reader& r, std::int64_t& us, std::int64_t max_hours) {
  std::int64_t h = 0, mi = 0, s = 0, f = 0;
  if (!r.digits(h, 0, 10) || !r.eat(':') || !r.digits(mi, 2) || !r.eat(':') || !r.digits(s, 2) || !r.fraction(f))
    return false;
  if (h > max_hours || mi > 59 || s > 59) return false;
  us = ((h * 60 + mi) * 60 + s) * us_per_sec + f;
  return true;
}

}  // namespace

std::int64_t days_from_civil(std::int64_t y, unsigned m, unsigned d) noexcept {
  y -= m <= 2;
  const std::int64_t era = (y >= 0 ? y : y - 399) / 400;
  const std::int64_t yoe = y - era * 400;
  const std::int64_t doy = (153 * (m > 2 ? m - 3 : m + 9) + 2) / 5 + d - 1;
  const std::int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + doe - 719468;
}

void civil_from_days(std::int64_t z, std::int64_t& y, unsigned& m, unsigned& d) noexcept {
  z += 719468;
  const std::int64_t era = (z >= 0 ? z : z - 146096) / 146097;
  const std::int64_t doe = z - era * 146097;
  const std::int64_t yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
  const std::int64_t doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
  const std::int64_t mp = (5 * doy + 2) / 153;
  d = static_cast<unsigned>(doy - (153 * mp + 2) / 5 + 1);
  m = static_cast<unsigned>(mp < 10 ? mp + 3 : mp - 9);
  y = yoe + era * 400 + (m <= 2);
}

// ---- timestamp ------------------------------------------------------------

namespace {
// 'infinity' / '-infinity', as timestamps and dates spell them in text.
bool parse_infinity(std::string_view in, special& sp) {
  if (in == "infinity") sp = special::pos_infinity;
  else if (in == "-infinity") sp = special::neg_infinity;
  else return false;
  return true;
}
}  // namespace

std::error_code decode_timestamp_text(std::string_view in, bool with_zone, std::int64_t& us, special& sp) {
  sp = special::none;
  us = 0;
  if (parse_infinity(in, sp)) return {};
  reader r{in};
  std::int64_t y = 0, m = 0, d = 0, tod = 0;
  if (!parse_ymd(r, y, m, d) || !r.eat(' ') || !parse_hms(r, tod, 23)) return bad();
  std::int64_t offset_s = 0;
  if (with_zone) {
    // "+HH", "+HH:MM" or "+HH:MM:SS" (historical zones have seconds).
    int sign = r.eat('+') ? 1 : (r.eat('-') ? -1 : 0);
    if (sign == 0) return bad();
    std::int64_t oh = 0, om = 0, os = 0;
    if (!r.digits(oh, 2)) return bad();
    if (r.eat(':')) {
      if (!r.digits(om, 2)) return bad();
      if (r.eat(':') && !r.digits(os, 2)) return bad();
    }
    if (oh > 15 || om > 59 || os > 59) return bad();
    offset_s = sign * (oh * 3600 + om * 60 + os);
  }
  if (!parse_bc(r, y) || !r.done()) return bad();
  if (static_cast<unsigned>(d) > last_day(y, static_cast<unsigned>(m))) return bad();
  const std::int64_t days = days_from_civil(y, static_cast<unsigned>(m), static_cast<unsigned>(d));
  // days * us_per_day + tod - offset, checked: the last ~30,000 years the
  // server can hold do not fit int64 microseconds since 1970.
  std::int64_t v = 0;
  if (__builtin_mul_overflow(days, us_per_day, &v) || __builtin_add_overflow(v, tod, &v) ||
      __builtin_sub_overflow(v, offset_s * us_per_sec, &v))
    return range();
  us = v;
  return {};
}

std::error_code decode_timestamp_binary(std::string_view in, std::int64_t& us, special& sp) {
  sp = special::none;
  us = 0;
  if (in.size() != 8) return bad();
  const auto v = static_cast<std::int64_t>(load_be(in.data(), 8));
  if (v == std::numeric_limits<std::int64_t>::max()) {
    sp = special::pos_infinity;
    return {};
  }
  if (v == std::numeric_limits<std::int64_t>::min()) {
    sp = special::neg_infinity;
    return {};
  }
  if (__builtin_add_overflow(v, pg_epoch_us, &us)) {
    us = 0;
    return range();
  }
  return {};
}

std::string encode_timestamp_text(std::int64_t us, bool with_zone) {
  std::int64_t days = us / us_per_day, tod = us % us_per_day;
  if (tod < 0) {
    tod += us_per_day;
    --days;
  }
  std::int64_t y = 0;
  unsigned m = 0, d = 0;
  civil_from_days(days, y, m, d);
  const bool bc = y <= 0;
  if (bc) y = 1 - y;
  char buf[96];
  const std::int64_t h = tod / (3600 * us_per_sec), mi = tod / (60 * us_per_sec) % 60, s = tod / us_per_sec % 60,
                     f = tod % us_per_sec;
  int n = std::snprintf(buf, sizeof buf, "%04lld-%02u-%02u %02lld:%02lld:%02lld.%06lld%s%s",
                        static_cast<long long>(y), m, d, static_cast<long long>(h), static_cast<long long>(mi),
                        static_cast<long long>(s), static_cast<long long>(f), with_zone ? "+00" : "",
                        bc ? " BC" : "");
  return std::string(buf, static_cast<std::size_t>(n));
}

std::error_code encode_timestamp_binary(std::int64_t us, std::string& out) {
  std::int64_t v = 0;
  if (__builtin_sub_overflow(us, pg_epoch_us, &v) || v < pg_min_timestamp || v >= pg_end_timestamp) return range();
  store_be(out, static_cast<std::uint64_t>(v), 8);
  return {};
}

// ---- date -----------------------------------------------------------------

std::error_code decode_date_text(std::string_view in, std::int64_t& days, special& sp) {
  sp = special::none;
  days = 0;
  if (parse_infinity(in, sp)) return {};
  reader r{in};
  std::int64_t y = 0, m = 0, d = 0;
  if (!parse_ymd(r, y, m, d) || !parse_bc(r, y) || !r.done()) return bad();
  if (static_cast<unsigned>(d) > last_day(y, static_cast<unsigned>(m))) return bad();
  days = days_from_civil(y, static_cast<unsigned>(m), static_cast<unsigned>(d));
  return {};
}

std::error_code decode_date_binary(std::string_view in, std::int64_t& days, special& sp) {
  sp = special::none;
  days = 0;
  if (in.size() != 4) return bad();
  const auto v = static_cast<std::int32_t>(static_cast<std::uint32_t>(load_be(in.data(), 4)));
  if (v == std::numeric_limits<std::int32_t>::max()) {
    sp = special::pos_infinity;
    return {};
  }
  if (v == std::numeric_limits<std::int32_t>::min()) {
    sp = special::neg_infinity;
    return {};
  }
  days = std::int64_t{v} + pg_epoch_days;
  return {};
}

std::string encode_date_text(std::int64_t days) {
  std::int64_t y = 0;
  unsigned m = 0, d = 0;
  civil_from_days(days, y, m, d);
  const bool bc = y <= 0;
  if (bc) y = 1 - y;
  char buf[48];
  int n = std::snprintf(buf, sizeof buf, "%04lld-%02u-%02u%s", static_cast<long long>(y), m, d, bc ? " BC" : "");
  return std::string(buf, static_cast<std::size_t>(n));
}

std::error_code encode_date_binary(std::int64_t days, std::string& out) {
  const std::int64_t v = days - pg_epoch_days;
  if (v < pg_min_date || v >= pg_end_date) return range();
  store_be(out, static_cast<std::uint64_t>(v), 4);
  return {};
}

// ---- time -----------------------------------------------------------------

std::error_code decode_time_text(std::string_view in, std::int64_t& us) {
  us = 0;
  reader r{in};
  std::int64_t v = 0;
  if (!parse_hms(r, v, 24) || !r.done() || v > us_per_day) return bad();
  us = v;
  return {};
}

std::error_code decode_time_binary(std::string_view in, std::int64_t& us) {
  us = 0;
  if (in.size() != 8) return bad();
  const auto v = static_cast<std::int64_t>(load_be(in.data(), 8));
  if (v < 0 || v > us_per_day) return bad();
  us = v;
  return {};
}

std::string encode_time_text(std::int64_t us) {
  char buf[48];
  int n = std::snprintf(buf, sizeof buf, "%02lld:%02lld:%02lld.%06lld", static_cast<long long>(us / 3'600'000'000),
                        static_cast<long long>(us / 60'000'000 % 60), static_cast<long long>(us / us_per_sec % 60),
                        static_cast<long long>(us % us_per_sec));
  return std::string(buf, static_cast<std::size_t>(n));
}

// ---- interval -------------------------------------------------------------

std::error_code decode_interval_text(std::string_view in, interval& out) {
  // IntervalStyle postgres: "[N year[s]] [N mon[s]] [N day[s]] [[+-]H:MM:SS[.f]]",
  // each number with its own sign, e.g. "-1 years -2 mons +3 days -04:05:06".
  out = {};
  reader r{in};
  std::int64_t months = 0, days = 0, us = 0;
  bool any = false;
  while (!r.done()) {
    if (any && !r.eat(' ')) return bad();
    int sign = r.eat('-') ? -1 : (r.eat('+'), 1);
    std::size_t mark = r.i;
    std::int64_t n = 0;
    if (!r.digits(n, 0, 10)) return bad();
    if (r.i < in.size() && in[r.i] == ':') {
      r.i = mark;
      std::int64_t t = 0;
      if (!parse_hms(r, t, std::numeric_limits<std::int64_t>::max() / (3600 * us_per_sec) - 1)) return bad();
      us = sign * t;
      any = true;
      if (!r.done()) return bad();  // the time is always last
      break;
    }
    n *= sign;
    if (r.eat(" years") || r.eat(" year")) {
      months += n * 12;
    } else if (r.eat(" mons") || r.eat(" mon")) {
      months += n;
    } else if (r.eat(" days") || r.eat(" day")) {
      days += n;
    } else {
      return bad();
    }
    any = true;
  }
  if (!any) return bad();
  if (months < std::numeric_limits<std::int32_t>::min() || months > std::numeric_limits<std::int32_t>::max() ||
      days < std::numeric_limits<std::int32_t>::min() || days > std::numeric_limits<std::int32_t>::max())
    return range();
  out.months = static_cast<std::int32_t>(months);
  out.days = static_cast<std::int32_t>(days);
  out.microseconds = us;
  return {};
}

std::error_code decode_interval_binary(std::string_view in, interval& out) {
  out = {};
  if (in.size() != 16) return bad();
  out.microseconds = static_cast<std::int64_t>(load_be(in.data(), 8));
  out.days = static_cast<std::int32_t>(static_cast<std::uint32_t>(load_be(in.data() + 8, 4)));
  out.months = static_cast<std::int32_t>(static_cast<std::uint32_t>(load_be(in.data() + 12, 4)));
  return {};
}

std::string encode_interval_text(const interval& in) {
  // Unsigned arithmetic for the magnitude: -INT64_MIN does not exist.
  const bool neg = in.microseconds < 0;
  const std::uint64_t mag = neg ? 0 - static_cast<std::uint64_t>(in.microseconds)
                                : static_cast<std::uint64_t>(in.microseconds);
  char buf[128];
  int n = std::snprintf(buf, sizeof buf, "%d mons %d days %s%llu:%02llu:%02llu.%06llu", in.months, in.days,
                        neg ? "-" : "+", static_cast<unsigned long long>(mag / 3'600'000'000ULL),
                        static_cast<unsigned long long>(mag / 60'000'000ULL % 60),
                        static_cast<unsigned long long>(mag / 1'000'000ULL % 60),
                        static_cast<unsigned long long>(mag % 1'000'000ULL));
  return std::string(buf, static_cast<std::size_t>(n));
}

void encode_interval_binary(const interval& in, std::string& out) {
  store_be(out, static_cast<std::uint64_t>(in.microseconds), 8);
  store_be(out, static_cast<std::uint32_t>(in.days), 4);
  store_be(out, static_cast<std::uint32_t>(in.months), 4);
}

}  // namespace pgpipe::detail::codec
