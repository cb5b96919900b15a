// libFuzzer target for every decoder of pgpipe/type_traits.hpp: the bytes of
// a field come from the server or whatever sits between (a proxy, a broken
// network), so no input may crash, read out of bounds (ASan) or hit
// undefined behaviour (UBSan). Besides that it checks properties a user
// relies on:
//  - a decoder either succeeds or answers one of pgpipe's own codes;
//  - a numeric that decodes re-encodes to binary and decodes to the same text;
//  - a timestamp/date that decodes (finite) re-encodes to text that decodes
//    to the same value;
//  - a range, a multirange or an n-dimensional array that decodes
//    re-encodes (text and binary) to a value that decodes equal;
//  - a composite (nested, with an array field) that decodes re-encodes to
//    record text that decodes equal.
//
// Input: first byte selects the decoder and the format, the rest is the value.
#include <pgpipe/array.hpp>
#include <pgpipe/composite.hpp>
#include <pgpipe/range.hpp>
#include <pgpipe/type_traits.hpp>

#include <boost/describe/class.hpp>
#include <boost/json/value.hpp>
#include <boost/uuid/uuid.hpp>

#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace fuzz_types {
struct inner {
  std::string s;
  std::optional<std::int32_t> n;
  friend bool operator==(const inner&, const inner&) = default;
};
BOOST_DESCRIBE_STRUCT(inner, (), (s, n))
struct outer {
  std::optional<std::string> a;
  inner in;
  std::vector<std::optional<std::int64_t>> v;
  friend bool operator==(const outer&, const outer&) = default;
};
BOOST_DESCRIBE_STRUCT(outer, (), (a, in, v))
}  // namespace fuzz_types

template <>
struct pgpipe::is_composite<fuzz_types::inner> : std::true_type {};
template <>
struct pgpipe::is_composite<fuzz_types::outer> : std::true_type {};

namespace {

namespace oids = pgpipe::oids;
using pgpipe::field_value;
using pgpipe::wire_format;
using namespace std::chrono;

void check_code(const std::error_code& ec) {
  if (!ec) return;
  if (ec != pgpipe::errc::conversion_error && ec != pgpipe::errc::out_of_range &&
      ec != pgpipe::errc::type_mismatch && ec != pgpipe::errc::null_value &&
      ec != pgpipe::errc::dimensions_mismatch)
    std::abort();
}

template <class T>
std::error_code run(std::string_view data, pgpipe::type_oid type, wire_format f, T& out) {
  auto ec = pgpipe::detail::decode_field(std::optional<field_value>(field_value{data, type, f}), out);
  check_code(ec);
  return ec;
}

template <class T>
void run(std::string_view data, pgpipe::type_oid type, wire_format f) {
  T out{};
  (void)run(data, type, f, out);
}

void numeric_round_trip(std::string_view data, wire_format f) {
  pgpipe::numeric n;
  if (run(data, oids::numeric, f, n)) return;
  std::string b;
  pgpipe::detail::codec::encode_numeric_binary(n, b);
  pgpipe::numeric back;
  if (pgpipe::detail::codec::decode_numeric_binary(b, back) || back.str() != n.str()) std::abort();
}

void timestamp_round_trip(std::string_view data, wire_format f) {
  sys_time<microseconds> t;
  if (run(data, oids::timestamptz, f, t)) return;
  if (t == sys_time<microseconds>::max() || t == sys_time<microseconds>::min()) return;
  auto text = pgpipe::detail::encode_param(t);
  sys_time<microseconds> back;
  if (run(*text, oids::timestamptz, wire_format::text, back) || back != t) std::abort();
}

void date_round_trip(std::string_view data, wire_format f) {
  sys_days d;
  if (run(data, oids::date, f, d)) return;
  if (d == sys_days::max() || d == sys_days::min()) return;
  auto text = pgpipe::detail::encode_param(d);
  sys_days back;
  if (run(*text, oids::date, wire_format::text, back) || back != d) std::abort();
}

// What decodes from `data` encodes (as a parameter, both forms) to what
// decodes back equal.
template <class T>
void round_trip(std::string_view data, pgpipe::type_oid type, wire_format f) {
  T x{};
  if (run(data, type, f, x)) return;
  using P = pgpipe::param_traits<T>;
  auto text = P::encode(x);
  T back{};
  if (!text || run(*text, type, wire_format::text, back) || !(back == x)) std::abort();
  std::string bin;
  if (P::encode_binary(x, bin)) return;  // a value the binary form cannot carry
  T bback{};
  if (run(bin, type, wire_format::binary, bback) || !(bback == x)) std::abort();
}

// A composite that decodes (either format) encodes to record text that
// decodes equal; an array of them only has to decode or fail cleanly.
void composite_round_trip(std::string_view data, wire_format f) {
  constexpr pgpipe::type_oid user_type = oids::first_user_oid + 1;
  fuzz_types::outer x;
  if (run(data, user_type, f, x)) return;
  auto text = pgpipe::param_traits<fuzz_types::outer>::encode(x);
  fuzz_types::outer back;
  if (!text || run(*text, user_type, wire_format::text, back) || !(back == x)) std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 1) return 0;
  const auto sel = data[0];
  const wire_format f = (sel & 1) ? wire_format::binary : wire_format::text;
  // A copy of exactly the value's bytes: ASan sees any read past its end.
  const std::string value(reinterpret_cast<const char*>(data + 1), size - 1);
  const std::string_view v(value);
  switch ((sel >> 1) % 23) {
    case 0: run<std::int64_t>(v, oids::int8, f); run<std::int16_t>(v, oids::int2, f); break;
    case 1: run<std::uint32_t>(v, oids::oid, f); run<double>(v, oids::float8, f); run<float>(v, oids::float4, f); break;
    case 2: run<bool>(v, oids::bool_, f); run<std::string>(v, oids::text, f); break;
    case 3: run<std::vector<std::byte>>(v, oids::bytea, f); break;
    case 4: run<boost::uuids::uuid>(v, oids::uuid, f); break;
    case 5: timestamp_round_trip(v, f); break;
    case 6: run<local_time<microseconds>>(v, oids::timestamp, f); break;
    case 7: date_round_trip(v, f); run<year_month_day>(v, oids::date, f); break;
    case 8: run<microseconds>(v, oids::time, f); break;
    case 9: run<pgpipe::interval>(v, oids::interval, f); break;
    case 10: numeric_round_trip(v, f); break;
    case 11: run<boost::json::value>(v, oids::jsonb, f); run<boost::json::value>(v, oids::json, f); break;
    case 12: run<std::vector<std::optional<std::int64_t>>>(v, oids::int8_array, f); break;
    case 13: run<std::vector<std::optional<std::string>>>(v, oids::text_array, f); break;
    case 14: run<std::vector<std::optional<pgpipe::numeric>>>(v, oids::numeric_array, f); break;
    case 15: run<std::vector<std::optional<sys_time<microseconds>>>>(v, oids::timestamptz_array, f); break;
    case 16: run<std::vector<std::optional<boost::uuids::uuid>>>(v, oids::uuid_array, f); break;
    case 17: run<std::vector<std::optional<std::vector<std::byte>>>>(v, oids::bytea_array, f); break;
    case 18: run<std::vector<boost::json::value>>(v, oids::jsonb_array, f); break;
    case 19: run<std::vector<std::optional<pgpipe::interval>>>(v, oids::interval_array, f);
             run<std::vector<std::optional<sys_days>>>(v, oids::date_array, f); break;
    case 20: round_trip<pgpipe::range<std::int64_t>>(v, oids::int8range, f);
             round_trip<pgpipe::range<sys_time<microseconds>>>(v, oids::tstzrange, f);
             run<pgpipe::range<pgpipe::numeric>>(v, oids::numrange, f); break;
    case 21: round_trip<pgpipe::array<std::optional<std::int32_t>>>(v, oids::int4_array, f);
             run<std::vector<std::vector<std::optional<std::string>>>>(v, oids::text_array, f); break;
    case 22: run<std::vector<pgpipe::range<sys_days>>>(v, oids::datemultirange, f);
             round_trip<pgpipe::multirange<std::int64_t>>(v, oids::int8multirange, f);
             round_trip<pgpipe::multirange<sys_time<microseconds>>>(v, oids::tstzmultirange, f);
             run<pgpipe::array<std::string>>(v, oids::text_array, f);
             composite_round_trip(v, f);
             run<std::vector<std::optional<fuzz_types::inner>>>(v, oids::first_user_oid, f);
             run<std::vector<std::optional<fuzz_types::inner>>>(v, oids::record_array, f); break;
  }
  return 0;
}
