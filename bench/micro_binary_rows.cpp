// What reading rows through result::rows_as<T> costs with text values
// against binary ones, on results built client-side from the same values
// (the text cells from param_traits' encode, the binary cells from the
// codec's encoders, as the server would send them): 100,000 rows, no
// server, so the figure is the client's decoding alone. Run under
// callgrind, counting the reader only:
//   valgrind --tool=callgrind --toggle-collect='read_rows*' build/bench/pgpipe_micro_binary_rows text four
//   valgrind --tool=callgrind --toggle-collect='read_rows*' build/bench/pgpipe_micro_binary_rows binary four
// `four`: int8, timestamptz, uuid, numeric; `three`: the same without the
// numeric (docs/benchmarks.md, "Decoding values: text against binary").
// Prints a checksum so the reader cannot be optimised away.
#include <pgpipe/result.hpp>

#include <pgpipe/detail/codec.hpp>

#include <boost/describe/class.hpp>
#include <boost/uuid/uuid.hpp>
#include <libpq-fe.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>
#include <vector>

namespace {

using micros = std::chrono::sys_time<std::chrono::microseconds>;

struct four {
  std::int64_t id = 0;
  micros at{};
  boost::uuids::uuid key{};
  pgpipe::numeric amount;
};
BOOST_DESCRIBE_STRUCT(four, (), (id, at, key, amount))

struct three {
  std::int64_t id = 0;
  micros at{};
  boost::uuids::uuid key{};
};
BOOST_DESCRIBE_STRUCT(three, (), (id, at, key))

constexpr int rows = 100000;

template <class T>
std::string cell(const T& v, bool binary) {
  if (!binary) return *pgpipe::param_traits<T>::encode(v);
  std::string out;
  if constexpr (std::is_same_v<T, pgpipe::numeric>) {
    pgpipe::detail::codec::encode_numeric_binary(v, out);
  } else {
    (void)pgpipe::param_traits<T>::encode_binary(v, out);
  }
  return out;
}

pgpipe::result make_rows(bool binary, int columns) {
  PGresult* r = PQmakeEmptyPGresult(nullptr, PGRES_TUPLES_OK);
  char n0[] = "id", n1[] = "at", n2[] = "key", n3[] = "amount";
  const int f = binary ? 1 : 0;
  PGresAttDesc attrs[4] = {{n0, 0, 0, f, pgpipe::oids::int8, 8, -1},
                           {n1, 0, 0, f, pgpipe::oids::timestamptz, 8, -1},
                           {n2, 0, 0, f, pgpipe::oids::uuid, 16, -1},
                           {n3, 0, 0, f, pgpipe::oids::numeric, -1, -1}};
  PQsetResultAttrs(r, columns, attrs);
  for (int i = 0; i < rows; ++i) {
    boost::uuids::uuid key{};
    for (std::size_t b = 0; b < key.size(); ++b) key.data[b] = static_cast<std::uint8_t>(i * 31 + static_cast<int>(b));
    const std::string cells[4] = {
        cell<std::int64_t>(9'000'000'000LL + i, binary),
        cell(micros(std::chrono::microseconds(1'700'000'000'000'000LL + 1'000'003LL * i)), binary),
        cell(key, binary),
        cell(pgpipe::numeric(std::to_string(i) + "." + std::to_string(i % 100) + "25"), binary)};
    for (int c = 0; c < columns; ++c) PQsetvalue(r, i, c, const_cast<char*>(cells[c].data()), static_cast<int>(cells[c].size()));
  }
  return pgpipe::result(r);
}

std::uint64_t sum_of(const three& x) {
  return static_cast<std::uint64_t>(x.id) + static_cast<std::uint64_t>(x.at.time_since_epoch().count()) + x.key.data[3];
}
std::uint64_t sum_of(const four& x) {
  return static_cast<std::uint64_t>(x.id) + static_cast<std::uint64_t>(x.at.time_since_epoch().count()) + x.key.data[3] +
         x.amount.str().size();
}

template <class T>
__attribute__((noinline)) std::uint64_t read_rows(const pgpipe::result& r) {
  std::uint64_t s = 0;
  for (const T& x : r.rows_as<T>()) s += sum_of(x);
  return s;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string_view format = argc > 1 ? argv[1] : "";
  const std::string_view shape = argc > 2 ? argv[2] : "";
  if ((format != "text" && format != "binary") || (shape != "four" && shape != "three")) {
    std::fprintf(stderr, "usage: %s text|binary four|three\n", argv[0]);
    return 2;
  }
  const pgpipe::result r = make_rows(format == "binary", shape == "four" ? 4 : 3);
  const auto t0 = std::chrono::steady_clock::now();
  const std::uint64_t s = shape == "four" ? read_rows<four>(r) : read_rows<three>(r);
  const auto us = std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now() - t0);
  std::printf("%s %s: checksum %llu, %lld us\n", std::string(format).c_str(), std::string(shape).c_str(),
              static_cast<unsigned long long>(s), static_cast<long long>(us.count()));
  return 0;
}
