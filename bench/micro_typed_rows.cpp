// What reading rows into a struct through result::rows_as<T> costs against
// reading the same fields by hand (row[i].get<T>() by position), on a result
// built client-side: 100,000 rows of 6 columns, no server, so the figure is
// the client's decoding alone. Run under callgrind, counting each reader
// only:
//   valgrind --tool=callgrind --toggle-collect='read_typed*' build/bench/pgpipe_micro_typed_rows typed
//   valgrind --tool=callgrind --toggle-collect='read_by_hand*' build/bench/pgpipe_micro_typed_rows hand
// (docs/benchmarks.md, "Typed rows"). Prints a checksum so neither reader
// can be optimised away.
#include <pgpipe/result.hpp>

#include <boost/describe/class.hpp>
#include <libpq-fe.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace {

struct item {
  std::int64_t id = 0;
  std::string name;
  std::int32_t quantity = 0;
  double price = 0;
  std::optional<std::string> note;
  bool active = false;
};
BOOST_DESCRIBE_STRUCT(item, (), (id, name, quantity, price, note, active))

constexpr int rows = 100000;

pgpipe::result make_items() {
  PGresult* r = PQmakeEmptyPGresult(nullptr, PGRES_TUPLES_OK);
  char n0[] = "id", n1[] = "name", n2[] = "quantity", n3[] = "price", n4[] = "note", n5[] = "active";
  PGresAttDesc attrs[6] = {{n0, 0, 0, 0, pgpipe::oids::int8, 8, -1},   {n1, 0, 0, 0, pgpipe::oids::text, -1, -1},
                           {n2, 0, 0, 0, pgpipe::oids::int4, 4, -1},   {n3, 0, 0, 0, pgpipe::oids::float8, 8, -1},
                           {n4, 0, 0, 0, pgpipe::oids::text, -1, -1},  {n5, 0, 0, 0, pgpipe::oids::bool_, 1, -1}};
  PQsetResultAttrs(r, 6, attrs);
  for (int i = 0; i < rows; ++i) {
    std::string cells[6] = {std::to_string(1000000 + i), "product " + std::to_string(i), std::to_string(i % 500),
                            std::to_string(i % 100) + ".25", "note", i % 2 ? "t" : "f"};
    for (int c = 0; c < 6; ++c) {
      if (c == 4 && i % 3 == 0) {
        PQsetvalue(r, i, c, nullptr, -1);
      } else {
        PQsetvalue(r, i, c, cells[c].data(), static_cast<int>(cells[c].size()));
      }
    }
  }
  return pgpipe::result(r);
}

std::uint64_t sum_of(const item& x) {
  return static_cast<std::uint64_t>(x.id) + x.name.size() + static_cast<std::uint64_t>(x.quantity) +
         static_cast<std::uint64_t>(x.price) + (x.note ? x.note->size() : 0) + (x.active ? 1 : 0);
}

__attribute__((noinline)) std::uint64_t read_typed(const pgpipe::result& r) {
  std::uint64_t s = 0;
  for (const item& x : r.rows_as<item>()) s += sum_of(x);
  return s;
}

__attribute__((noinline)) std::uint64_t read_by_hand(const pgpipe::result& r) {
  std::uint64_t s = 0;
  item x;
  for (pgpipe::row row : r) {
    x.id = row[0].get<std::int64_t>();
    x.name = row[1].get<std::string>();
    x.quantity = row[2].get<std::int32_t>();
    x.price = row[3].get<double>();
    x.note = row[4].get<std::optional<std::string>>();
    x.active = row[5].get<bool>();
    s += sum_of(x);
  }
  return s;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string_view mode = argc > 1 ? argv[1] : "";
  if (mode != "typed" && mode != "hand") {
    std::fprintf(stderr, "usage: %s typed|hand\n", argv[0]);
    return 2;
  }
  const pgpipe::result r = make_items();
  const auto t0 = std::chrono::steady_clock::now();
  const std::uint64_t s = mode == "typed" ? read_typed(r) : read_by_hand(r);
  const auto us = std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now() - t0);
  std::printf("%s: checksum %llu, %lld us\n", std::string(mode).c_str(), static_cast<unsigned long long>(s),
              static_cast<long long>(us.count()));
  return 0;
}
