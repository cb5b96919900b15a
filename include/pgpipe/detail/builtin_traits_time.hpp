// Built-in param_traits/field_traits for dates and times. Included by
// pgpipe/type_traits.hpp (read the contract there).
//
// Infinity: 'infinity' and '-infinity' timestamps read as the time point's
// max() and min(), and those two values are sent back as 'infinity' and
// '-infinity'. A date read as sys_days does the same; year_month_day has no
// such value, so an infinite date read into it is errc::out_of_range.
// A finite value the C++ type cannot hold is errc::out_of_range, never a
// wrapped date.
#pragma once

#include <pgpipe/detail/codec.hpp>
#include <pgpipe/error.hpp>
#include <pgpipe/types.hpp>

#include <chrono>
#include <limits>
#include <optional>
#include <string>

namespace pgpipe {
namespace detail::time_conv {

using us = std::chrono::microseconds;

template <class TP>
std::error_code to_time_point(std::error_code ec, std::int64_t v, codec::special sp, TP& out) {
  if (ec) return ec;
  if (sp == codec::special::pos_infinity) {
    out = TP::max();
  } else if (sp == codec::special::neg_infinity) {
    out = TP::min();
  } else {
    out = TP(us(v));
  }
  return {};
}

// A time point of any duration, floored to microseconds, and its infinities.
template <class Dur>
bool to_micros(std::chrono::duration<typename Dur::rep, typename Dur::period> d, bool is_max, bool is_min,
               std::int64_t& v, codec::special& sp) {
  sp = is_max ? codec::special::pos_infinity : is_min ? codec::special::neg_infinity : codec::special::none;
  if (sp != codec::special::none) return true;
  if constexpr (std::ratio_greater_v<typename Dur::period, std::micro>) {
    // Coarser than microseconds (seconds, days): check the multiplication.
    using std::chrono::duration_cast;
    const auto limit = duration_cast<Dur>(us::max());
    if (d > limit || d < -limit) return false;
  }
  v = std::chrono::floor<us>(d).count();
  return true;
}

template <class Clock, class Dur>
std::error_code encode_ts_binary(std::chrono::time_point<Clock, Dur> tp, std::string& out) {
  using TP = std::chrono::time_point<Clock, Dur>;
  std::int64_t v = 0;
  codec::special sp{};
  if (!to_micros<Dur>(tp.time_since_epoch(), tp == TP::max(), tp == TP::min(), v, sp))
    return make_error_code(errc::out_of_range);
  if (sp != codec::special::none) {
    codec::store_be(out,
                    sp == codec::special::pos_infinity
                        ? static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max())
                        : static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::min()),
                    8);
    return {};
  }
  return codec::encode_timestamp_binary(v, out);
}

template <class Clock, class Dur>
std::optional<std::string> encode_ts_text(std::chrono::time_point<Clock, Dur> tp, bool with_zone) {
  using TP = std::chrono::time_point<Clock, Dur>;
  std::int64_t v = 0;
  codec::special sp{};
  // Out of range: send the text anyway, the server refuses it with its own
  // message (there is no error channel in a text encoder).
  if (!to_micros<Dur>(tp.time_since_epoch(), tp == TP::max(), tp == TP::min(), v, sp)) return std::string("overflow");
  if (sp == codec::special::pos_infinity) return std::string("infinity");
  if (sp == codec::special::neg_infinity) return std::string("-infinity");
  return codec::encode_timestamp_text(v, with_zone);
}

}  // namespace detail::time_conv

// ---- timestamptz: any system_clock time point --------------------------------------

template <class Dur>
struct param_traits<std::chrono::time_point<std::chrono::system_clock, Dur>> {
  static constexpr type_oid oid = oids::timestamptz;
  static std::optional<std::string> encode(std::chrono::time_point<std::chrono::system_clock, Dur> v) {
    return detail::time_conv::encode_ts_text(v, true);
  }
  static std::error_code encode_binary(std::chrono::time_point<std::chrono::system_clock, Dur> v, std::string& out) {
    return detail::time_conv::encode_ts_binary(v, out);
  }
};

template <>
struct field_traits<std::chrono::sys_time<std::chrono::microseconds>> {
  static constexpr bool binary_results = true;  // decode reads the binary form of every type accepts() admits
  static bool accepts(type_oid t) { return t == oids::timestamptz; }
  static std::string cpp_name() { return "std::chrono::sys_time<std::chrono::microseconds>"; }
  static std::error_code decode(const field_value& v, std::chrono::sys_time<std::chrono::microseconds>& out) {
    std::int64_t us = 0;
    detail::codec::special sp{};
    auto ec = v.format == wire_format::text ? detail::codec::decode_timestamp_text(v.data, true, us, sp)
                                            : detail::codec::decode_timestamp_binary(v.data, us, sp);
    return detail::time_conv::to_time_point(ec, us, sp, out);
  }
};

// ---- timestamp: local_time ----------------------------------------------------------

template <class Dur>
struct param_traits<std::chrono::local_time<Dur>> {
  static constexpr type_oid oid = oids::timestamp;
  static std::optional<std::string> encode(std::chrono::local_time<Dur> v) {
    return detail::time_conv::encode_ts_text(v, false);
  }
  static std::error_code encode_binary(std::chrono::local_time<Dur> v, std::string& out) {
    return detail::time_conv::encode_ts_binary(v, out);
  }
};

template <>
struct field_traits<std::chrono::local_time<std::chrono::microseconds>> {
  static constexpr bool binary_results = true;  // decode reads the binary form of every type accepts() admits
  static bool accepts(type_oid t) { return t == oids::timestamp; }
  static std::string cpp_name() { return "std::chrono::local_time<std::chrono::microseconds>"; }
  static std::error_code decode(const field_value& v, std::chrono::local_time<std::chrono::microseconds>& out) {
    std::int64_t us = 0;
    detail::codec::special sp{};
    auto ec = v.format == wire_format::text ? detail::codec::decode_timestamp_text(v.data, false, us, sp)
                                            : detail::codec::decode_timestamp_binary(v.data, us, sp);
    return detail::time_conv::to_time_point(ec, us, sp, out);
  }
};

// ---- date: sys_days and year_month_day ------------------------------------------------
// sys_days is a system_clock time point too; this full specialisation wins
// over the timestamptz one, so a sys_days parameter is a date.

template <>
struct param_traits<std::chrono::sys_days> {
  static constexpr type_oid oid = oids::date;
  static std::optional<std::string> encode(std::chrono::sys_days v) {
    if (v == std::chrono::sys_days::max()) return std::string("infinity");
    if (v == std::chrono::sys_days::min()) return std::string("-infinity");
    return detail::codec::encode_date_text(v.time_since_epoch().count());
  }
  static std::error_code encode_binary(std::chrono::sys_days v, std::string& out) {
    if (v == std::chrono::sys_days::max() || v == std::chrono::sys_days::min()) {
      detail::codec::store_be(out,
                              static_cast<std::uint32_t>(v == std::chrono::sys_days::max()
                                                             ? std::numeric_limits<std::int32_t>::max()
                                                             : std::numeric_limits<std::int32_t>::min()),
                              4);
      return {};
    }
    return detail::codec::encode_date_binary(v.time_since_epoch().count(), out);
  }
};

template <>
struct param_traits<std::chrono::year_month_day> {
  static constexpr type_oid oid = oids::date;
  static std::optional<std::string> encode(std::chrono::year_month_day v) {
    return param_traits<std::chrono::sys_days>::encode(std::chrono::sys_days(v));
  }
  static std::error_code encode_binary(std::chrono::year_month_day v, std::string& out) {
    if (!v.ok()) return make_error_code(errc::invalid_argument);
    return param_traits<std::chrono::sys_days>::encode_binary(std::chrono::sys_days(v), out);
  }
};

template <>
struct field_traits<std::chrono::sys_days> {
  static constexpr bool binary_results = true;  // decode reads the binary form of every type accepts() admits
  static bool accepts(type_oid t) { return t == oids::date; }
  static std::string cpp_name() { return "std::chrono::sys_days"; }
  static std::error_code decode(const field_value& v, std::chrono::sys_days& out) {
    std::int64_t d = 0;
    detail::codec::special sp{};
    auto ec = v.format == wire_format::text ? detail::codec::decode_date_text(v.data, d, sp)
                                            : detail::codec::decode_date_binary(v.data, d, sp);
    if (ec) return ec;
    out = sp == detail::codec::special::pos_infinity   ? std::chrono::sys_days::max()
          : sp == detail::codec::special::neg_infinity ? std::chrono::sys_days::min()
                                                       : std::chrono::sys_days(std::chrono::days(d));
    return {};
  }
};

template <>
struct field_traits<std::chrono::year_month_day> {
  static constexpr bool binary_results = true;  // decode reads the binary form of every type accepts() admits
  static bool accepts(type_oid t) { return t == oids::date; }
  static std::string cpp_name() { return "std::chrono::year_month_day"; }
  static std::error_code decode(const field_value& v, std::chrono::year_month_day& out) {
    std::chrono::sys_days d;
    if (auto ec = field_traits<std::chrono::sys_days>::decode(v, d)) return ec;
    // std::chrono::year holds -32767..32767 and has no infinity.
    constexpr std::int64_t lo = -12'687'428, hi = 11'248'737;  // -32767-01-01, 32767-12-31
    const auto n = d.time_since_epoch().count();
    if (d == std::chrono::sys_days::max() || d == std::chrono::sys_days::min() || n < lo || n > hi)
      return make_error_code(errc::out_of_range);
    out = std::chrono::year_month_day(d);
    return {};
  }
};

// ---- time: hh_mm_ss<microseconds>, microseconds since midnight ------------------------------

template <>
struct param_traits<std::chrono::hh_mm_ss<std::chrono::microseconds>> {
  static constexpr type_oid oid = oids::time;
  static std::optional<std::string> encode(const std::chrono::hh_mm_ss<std::chrono::microseconds>& v) {
    return detail::codec::encode_time_text(v.to_duration().count());
  }
  static std::error_code encode_binary(const std::chrono::hh_mm_ss<std::chrono::microseconds>& v, std::string& out) {
    const auto n = v.to_duration().count();
    if (n < 0 || n > 86'400'000'000) return make_error_code(errc::out_of_range);
    detail::codec::store_be(out, static_cast<std::uint64_t>(n), 8);
    return {};
  }
};

template <>
struct field_traits<std::chrono::microseconds> {
  static constexpr bool binary_results = true;  // decode reads the binary form of every type accepts() admits
  static bool accepts(type_oid t) { return t == oids::time; }
  static std::string cpp_name() { return "std::chrono::microseconds"; }
  static std::error_code decode(const field_value& v, std::chrono::microseconds& out) {
    std::int64_t n = 0;
    auto ec = v.format == wire_format::text ? detail::codec::decode_time_text(v.data, n)
                                            : detail::codec::decode_time_binary(v.data, n);
    if (!ec) out = std::chrono::microseconds(n);
    return ec;
  }
};

template <>
struct field_traits<std::chrono::hh_mm_ss<std::chrono::microseconds>> {
  static constexpr bool binary_results = true;  // decode reads the binary form of every type accepts() admits
  static bool accepts(type_oid t) { return t == oids::time; }
  static std::string cpp_name() { return "std::chrono::hh_mm_ss<std::chrono::microseconds>"; }
  static std::error_code decode(const field_value& v, std::chrono::hh_mm_ss<std::chrono::microseconds>& out) {
    std::chrono::microseconds d{};
    auto ec = field_traits<std::chrono::microseconds>::decode(v, d);
    if (!ec) out = std::chrono::hh_mm_ss<std::chrono::microseconds>(d);
    return ec;
  }
};

// ---- interval ------------------------------------------------------------------------------

template <>
struct param_traits<interval> {
  static constexpr type_oid oid = oids::interval;
  static std::optional<std::string> encode(const interval& v) { return detail::codec::encode_interval_text(v); }
  static std::error_code encode_binary(const interval& v, std::string& out) {
    detail::codec::encode_interval_binary(v, out);
    return {};
  }
};

template <>
struct field_traits<interval> {
  static constexpr bool binary_results = true;  // decode reads the binary form of every type accepts() admits
  static bool accepts(type_oid t) { return t == oids::interval; }
  static std::string cpp_name() { return "pgpipe::interval"; }
  static std::error_code decode(const field_value& v, interval& out) {
    return v.format == wire_format::text ? detail::codec::decode_interval_text(v.data, out)
                                         : detail::codec::decode_interval_binary(v.data, out);
  }
};

}  // namespace pgpipe
