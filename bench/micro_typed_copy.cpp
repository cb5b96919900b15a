// What the typed COPY writer's encoding costs against formatting the same
// COPY text by hand, with no server: 1,000,000 rows of copy_bench's shape
// (int id, text name) already built as structs, encoded into 64 KiB chunks
// that are then dropped. Client CPU time per row (CLOCK_PROCESS_CPUTIME_ID),
// the two alternated A B B A over `rounds` rounds, medians printed:
//   build/bench/pgpipe_micro_typed_copy [rounds]
// The hand-made text escapes nothing (it knows its names hold no special
// byte); the typed writer scans every string for the bytes it must escape.
#include <pgpipe/detail/typed_copy.hpp>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <string>
#include <vector>

namespace {

struct bench_row {
  std::int32_t id = 0;
  std::string name;
};

constexpr std::size_t row_count = 1'000'000;

double cpu_seconds() {
  timespec ts{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

// Both return the bytes made, so neither can be optimised away.
std::size_t by_hand(const std::vector<bench_row>& rows) {
  std::string chunk;
  std::size_t total = 0;
  for (const bench_row& r : rows) {
    chunk += std::to_string(r.id);
    chunk += '\t';
    chunk += r.name;
    chunk += '\n';
    if (chunk.size() >= pgpipe::detail::typed_copy_chunk_bytes) {
      total += chunk.size();
      chunk.clear();
    }
  }
  return total + chunk.size();
}

std::size_t typed(const std::vector<bench_row>& rows) {
  pgpipe::detail::copy_row_encoder<bench_row> enc;
  std::string chunk, message;
  std::size_t total = 0;
  for (const bench_row& r : rows) {
    if (enc.append(r, chunk, message)) {
      std::fprintf(stderr, "%s\n", message.c_str());
      std::exit(1);
    }
    if (chunk.size() >= pgpipe::detail::typed_copy_chunk_bytes) {
      total += chunk.size();
      chunk.clear();
    }
  }
  return total + chunk.size();
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

}  // namespace

int main(int argc, char** argv) {
  const int rounds = argc > 1 ? std::atoi(argv[1]) : 3;
  if (rounds <= 0) {
    std::fprintf(stderr, "usage: pgpipe_micro_typed_copy [rounds > 0]\n");
    return 2;
  }
  std::vector<bench_row> rows(row_count);
  for (std::size_t i = 0; i < row_count; ++i) {
    rows[i].id = static_cast<std::int32_t>(i);
    rows[i].name = "name number " + std::to_string(i);
  }
  std::vector<double> hand_ns, typed_ns;
  std::size_t check = 0;
  auto run = [&](bool is_typed) {
    const double t0 = cpu_seconds();
    check += is_typed ? typed(rows) : by_hand(rows);
    const double ns = (cpu_seconds() - t0) * 1e9 / static_cast<double>(row_count);
    (is_typed ? typed_ns : hand_ns).push_back(ns);
  };
  for (int r = 0; r < rounds; ++r) {
    const bool typed_first = r % 2 == 1;  // A B, B A, ...
    run(typed_first);
    run(!typed_first);
  }
  std::printf("| encoder | CPU ns/row (median of %d) |\n|---|---|\n| by hand | %.1f |\n| typed | %.1f |\n"
              "typed / by hand: %.2fx (checksum %zu)\n",
              rounds, median(hand_ns), median(typed_ns), median(typed_ns) / median(hand_ns), check);
  return 0;
}
