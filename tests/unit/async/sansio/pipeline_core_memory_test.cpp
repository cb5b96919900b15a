// pipeline_core's queue memory: a connection that once queued many requests
// (a lease pipelining a long script) gives that memory back once its queues
// drain, instead of keeping its peak for the connection's life. Counted at
// the upstream resource the core's queues draw from (pipeline_params::memory).
#include "pipeline_core_harness.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstddef>
#include <memory_resource>

namespace {
using namespace pgpipe::test::pipeline_harness;

class counting_resource final : public std::pmr::memory_resource {
 public:
  std::size_t outstanding = 0;

 private:
  void* do_allocate(std::size_t bytes, std::size_t align) override {
    void* p = std::pmr::new_delete_resource()->allocate(bytes, align);
    outstanding += bytes;
    return p;
  }
  void do_deallocate(void* p, std::size_t bytes, std::size_t align) override {
    outstanding -= bytes;
    std::pmr::new_delete_resource()->deallocate(p, bytes, align);
  }
  bool do_is_equal(const std::pmr::memory_resource& o) const noexcept override { return this == &o; }
};

TEST(pipeline_core_memory, a_drained_queue_gives_its_peak_memory_back) {
  counting_resource upstream;
  pipeline_params p = base_params();
  p.depth = 64;
  p.memory = &upstream;
  {
    harness h(p);
    const std::size_t idle = upstream.outstanding;
    constexpr pipe_id n = 20000;
    for (pipe_id id = 1; id <= n; ++id) h.core.submit(id, lease_req("insert into t values (1)"));
    h.pump();
    const std::size_t peak = upstream.outstanding;
    // The counter sees the queue, or the check below could not fail.
    ASSERT_GT(peak, idle + n * 100) << "20000 queued requests drew less than 100 bytes each";
    for (;;) {
      h.write();
      if (h.wire.empty()) break;
      while (!h.wire.empty()) h.reply();
    }
    ASSERT_EQ(h.completion_order.size(), static_cast<std::size_t>(n));
    EXPECT_LT(upstream.outstanding, idle + 64 * 1024)
        << "after the drain the queues still hold " << upstream.outstanding << " bytes (peak " << peak << ")";
    // The connection goes on serving from what it kept.
    h.submit(n + 1, lease_req("select 1"));
    h.write();
    h.reply();
    EXPECT_EQ(h.outcome(n + 1), pipe_outcome::ok);
  }
  EXPECT_EQ(upstream.outstanding, 0u) << "the core returned less than it took";
}

}  // namespace
