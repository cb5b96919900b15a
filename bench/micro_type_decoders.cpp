// What reading a value costs, text format against binary: 1M
// int8, timestamptz, uuid and numeric values each, decoded through the same
// path as field::get<T>() (type check + decoder), from bytes laid out as
// the server sends them. No server: this measures the client's decoding only.
//
//   build/bench/pgpipe_micro_type_decoders --benchmark_repetitions=3
//       --benchmark_report_aggregates_only=true       (one command line)
#include <pgpipe/type_traits.hpp>

#include <benchmark/benchmark.h>
#include <boost/uuid/uuid.hpp>

#include <array>
#include <chrono>
#include <cstdint>
#include <optional>
#include <random>
#include <string>
#include <vector>

namespace {

namespace codec = pgpipe::detail::codec;
namespace oids = pgpipe::oids;
using pgpipe::wire_format;

constexpr std::size_t n_values = 1'000'000;

struct column {
  std::vector<std::string> text;
  std::vector<std::string> binary;
};

column make_int8() {
  column c;
  std::mt19937_64 rng(1);
  for (std::size_t i = 0; i < n_values; ++i) {
    // Mostly small keys, some large: what id and counter columns hold.
    auto v = static_cast<std::int64_t>(i % 4 == 0 ? rng() : rng() % 1'000'000);
    c.text.push_back(*pgpipe::detail::encode_param(v));
    std::string b;
    codec::store_be(b, static_cast<std::uint64_t>(v), 8);
    c.binary.push_back(std::move(b));
  }
  return c;
}

column make_timestamptz() {
  column c;
  std::mt19937_64 rng(2);
  for (std::size_t i = 0; i < n_values; ++i) {
    // 1970..2100, microsecond precision; text as the server prints it in UTC.
    const auto us = static_cast<std::int64_t>(rng() % 4'102'444'800'000'000ULL);
    c.text.push_back(codec::encode_timestamp_text(us, true));
    std::string b;
    (void)codec::encode_timestamp_binary(us, b);
    c.binary.push_back(std::move(b));
  }
  return c;
}

column make_uuid() {
  column c;
  std::mt19937_64 rng(3);
  for (std::size_t i = 0; i < n_values; ++i) {
    std::array<std::uint8_t, 16> u;
    for (auto& x : u) x = static_cast<std::uint8_t>(rng());
    c.text.push_back(codec::encode_uuid_text(u));
    c.binary.emplace_back(reinterpret_cast<const char*>(u.data()), 16);
  }
  return c;
}

column make_numeric() {
  column c;
  std::mt19937_64 rng(4);
  for (std::size_t i = 0; i < n_values; ++i) {
    // Prices and amounts: up to 10 digits before the point, 2 or 4 after.
    const auto whole = rng() % 10'000'000'000ULL;
    const auto frac = rng() % 10'000;
    std::string s = std::to_string(whole) + "." + std::to_string(10'000 + frac).substr(1, i % 2 ? 2 : 4);
    pgpipe::numeric n(s);
    std::string b;
    codec::encode_numeric_binary(n, b);
    c.text.push_back(n.str());
    c.binary.push_back(std::move(b));
  }
  return c;
}

template <class T>
void decode_all(benchmark::State& state, const std::vector<std::string>& values, pgpipe::type_oid type,
                wire_format f) {
  for (auto _ : state) {
    for (const auto& v : values) {
      T out{};
      auto ec = pgpipe::detail::decode_field(std::optional<pgpipe::field_value>({v, type, f}), out);
      if (ec) state.SkipWithError("decode failed");
      benchmark::DoNotOptimize(out);
    }
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations() * values.size()));
}

const column& int8_values() {
  static const column c = make_int8();
  return c;
}
const column& ts_values() {
  static const column c = make_timestamptz();
  return c;
}
const column& uuid_values() {
  static const column c = make_uuid();
  return c;
}
const column& numeric_values() {
  static const column c = make_numeric();
  return c;
}

using ts = std::chrono::sys_time<std::chrono::microseconds>;

void int8_text(benchmark::State& s) { decode_all<std::int64_t>(s, int8_values().text, oids::int8, wire_format::text); }
void int8_binary(benchmark::State& s) { decode_all<std::int64_t>(s, int8_values().binary, oids::int8, wire_format::binary); }
void timestamptz_text(benchmark::State& s) { decode_all<ts>(s, ts_values().text, oids::timestamptz, wire_format::text); }
void timestamptz_binary(benchmark::State& s) { decode_all<ts>(s, ts_values().binary, oids::timestamptz, wire_format::binary); }
void uuid_text(benchmark::State& s) { decode_all<boost::uuids::uuid>(s, uuid_values().text, oids::uuid, wire_format::text); }
void uuid_binary(benchmark::State& s) { decode_all<boost::uuids::uuid>(s, uuid_values().binary, oids::uuid, wire_format::binary); }
void numeric_text(benchmark::State& s) { decode_all<pgpipe::numeric>(s, numeric_values().text, oids::numeric, wire_format::text); }
void numeric_binary(benchmark::State& s) { decode_all<pgpipe::numeric>(s, numeric_values().binary, oids::numeric, wire_format::binary); }

}  // namespace

BENCHMARK(int8_text)->Unit(benchmark::kMillisecond);
BENCHMARK(int8_binary)->Unit(benchmark::kMillisecond);
BENCHMARK(timestamptz_text)->Unit(benchmark::kMillisecond);
BENCHMARK(timestamptz_binary)->Unit(benchmark::kMillisecond);
BENCHMARK(uuid_text)->Unit(benchmark::kMillisecond);
BENCHMARK(uuid_binary)->Unit(benchmark::kMillisecond);
BENCHMARK(numeric_text)->Unit(benchmark::kMillisecond);
BENCHMARK(numeric_binary)->Unit(benchmark::kMillisecond);

BENCHMARK_MAIN();
