// pipeline_core's randomized model test (fake server: pipeline_core_harness.hpp).
// Thousands of seeded runs of random submits, server answers (rows, SQL
// errors, stale statements, open transactions), breaks, cancels and
// timeouts, checked against a simple model of what a caller may observe.
#include "pipeline_core_harness.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <random>
#include <set>
#include <string>
#include <vector>

namespace {
using namespace pgpipe::test::pipeline_harness;

struct model_request {
  bool written = false;  ///< on the wire (written since it was last queued)
  bool lease = false;
  /// The server's last treatment of it: not answered yet, skipped (aborted
  /// in its batch), ran fine, failed.
  enum class treated { no, skipped, ok, error } last = treated::no;
};

TEST(pipeline_core, randomized_interleavings_keep_the_contract) {
  constexpr int runs = 3000;
  constexpr int steps = 200;
  std::size_t total_requests = 0;
  std::size_t total_at_break = 0;  ///< requests pending at a break, over all runs
  std::size_t total_skipped = 0;   ///< answers that were PIPELINE_ABORTED in a batch
  std::set<std::size_t> error_positions;  ///< where in a batch a failing request stood
  std::map<int, std::string> out_of_order;  ///< seed -> the first write out of submission order
  std::size_t total_rewritten = 0;          ///< writes of a request queued again, checked for order
  for (int seed = 1; seed <= runs; ++seed) {
    std::mt19937 rng(static_cast<unsigned>(seed));
    auto pick = [&](int n) { return static_cast<int>(rng() % static_cast<unsigned>(n)); };
    auto p = base_params();
    p.depth = 1 + static_cast<std::size_t>(pick(6));
    p.max_prepared = static_cast<std::size_t>(pick(4));
    p.stall_timeout = pick(2) ? 300ms : 0ms;
    p.sync_batch = 1 + static_cast<std::size_t>(pick(5));
    harness h(p);
    const bool lease = pick(2) == 0;
    std::map<pipe_id, model_request> reqs;
    std::vector<pipe_id> answered;  ///< ids whose Sync the server sent, user requests
    pipe_id next = 1;
    auto write = [&] {
      // Submission order: each request written is the oldest one submitted
      // that is neither on the wire nor answered (never written, skipped in
      // its batch, or queued again for a statement repair), however many
      // Syncs were read since the last write pass.
      std::set<pipe_id> unwritten;
      for (auto& [id, m] : reqs)
        if (!m.written && h.completions(id) == 0) unwritten.insert(id);
      const std::size_t before = h.sent_log.size();
      h.write();
      for (std::size_t i = before; i < h.sent_log.size(); ++i) {
        const pipe_id id = h.sent_log[i].id;
        if (!reqs.count(id)) continue;  // the core's own DEALLOCATE
        if (reqs[id].last != model_request::treated::no) ++total_rewritten;
        ASSERT_TRUE(unwritten.count(id)) << "seed " << seed << " request " << id << " written while on the wire or answered";
        if (id != *unwritten.begin() && !out_of_order.count(seed)) {
          out_of_order[seed] = "request " + std::to_string(id) + " written ahead of request " +
                               std::to_string(*unwritten.begin()) + ", submitted before it and still to be written";
        }
        unwritten.erase(id);
      }
      for (auto& w : h.wire) {
        if (reqs.count(w.id)) reqs[w.id].written = true;
      }
    };
    auto answer = [&](const server_answer& a) {
      const auto w = h.wire.front();
      const pipe_id id = w.id;
      const bool skipped = h.batch_failed;
      if (skipped) ++total_skipped;
      const std::size_t position = h.batch_answered.size();  // in its batch
      const bool was_open = reqs.count(id) && h.completions(id) == 0;
      std::vector<pipe_id> synced;
      auto keeps = h.reply(a, &synced);
      if (reqs.count(id)) {
        answered.push_back(id);
        using t = model_request::treated;
        const bool failed = (w.parse && a.err_in_parse) || a.exec == pipe_result::error;
        reqs[id].last = skipped ? t::skipped : failed ? t::error : t::ok;
        if (failed && !skipped && !w.sync) error_positions.insert(position);  // a batch went on behind it
        // The shell keeps the result of the request it belongs to, nothing of a skipped one.
        if (skipped) {
          for (auto k : keeps) EXPECT_EQ(k, pipe_keep::discard) << "seed " << seed << " request " << id;
        } else if (was_open && !failed && !w.internal) {
          EXPECT_NE(keeps.back(), pipe_keep::discard) << "seed " << seed << " request " << id;
        }
      }
      // Synced but not completed: skipped in its batch, or refused before
      // executing (statement repair): queued again, not on the wire any more.
      for (pipe_id s : synced)
        if (reqs.count(s) && h.completions(s) == 0) reqs[s].written = false;
    };
    // A break's promise to callers, checked at every break: each request still
    // waiting for its answer completes exactly once, with connection_lost when
    // it is on the wire (sent, its Sync not read: it may have executed) and
    // with not_sent when it is not (never written, or queued again for a
    // statement repair: safe to retry). The wire is the fake server's, not
    // the core's bookkeeping, so a core that mislabels a request fails here.
    std::size_t checked_at_break = 0;
    auto break_now = [&](const char* reason) {
      std::map<pipe_id, bool> pending;  // id -> on the wire
      for (auto& [id, m] : reqs) {
        if (h.completions(id) != 0) continue;
        pending[id] = std::any_of(h.wire.begin(), h.wire.end(), [id = id](const auto& w) { return w.id == id; }) ||
                      std::count(h.batch_answered.begin(), h.batch_answered.end(), id) != 0;
      }
      h.core.on_broken(reason);
      h.pump();
      for (auto& [id, on_wire] : pending) {
        ASSERT_EQ(h.completions(id), 1u) << "seed " << seed << " request " << id;
        EXPECT_EQ(h.outcome(id), on_wire ? pipe_outcome::connection_lost : pipe_outcome::not_sent)
            << "seed " << seed << " request " << id << (on_wire ? " (on the wire)" : " (not written)");
      }
      checked_at_break += pending.size();
    };
    for (int s = 0; s < steps && h.closes.empty(); ++s) {
      switch (pick(10)) {
        case 0:
        case 1:
        case 2: {
          auto r = lease ? lease_req("q" + std::to_string(pick(5))) : shared_req("q" + std::to_string(pick(5)));
          if (pick(8) == 0) r.deadline = h.now + std::chrono::milliseconds(pick(500));
          if (lease && pick(10) == 0) r.stream = true;
          // Shared runs: reads marked for coalescing, often in bursts of a
          // few statements, so batches are long and fail at every position.
          const int burst = !lease && pick(3) != 0 ? 1 + pick(6) : 1;
          for (int b = 0; b < burst; ++b) {
            if (burst > 1) {
              coalescible(r);
              r.sql = "r" + std::to_string(pick(2));
            }
            reqs[next] = {false, lease};
            h.submit(next++, r);
          }
          break;
        }
        case 3:
          write();
          break;
        case 4:
        case 5:
        case 6: {
          if (h.wire.empty()) break;
          harness::answer a;
          switch (pick(8)) {
            case 0:
              a.exec = pipe_result::error;
              a.sqlstate = "22012";
              break;
            case 1:
              a.exec = pipe_result::error;
              a.sqlstate = pick(2) ? "0A000" : "26000";
              a.retryable = true;
              break;
            case 2:
              a.err_in_parse = true;
              break;
            case 3:
              a.rows = pick(4);
              a.exec = pipe_result::rows;
              break;
            default:
              break;
          }
          if (pick(40) == 0) a.tx = tx_state::in_transaction;
          // The head the core expects must be the oldest request on the wire.
          ASSERT_EQ(h.core.head(), h.wire.front().id) << "seed " << seed;
          answer(a);
          break;
        }
        case 7:
          if (next > 1) {
            h.core.cancel(h.now, 1 + static_cast<pipe_id>(pick(static_cast<int>(next - 1))), pick(3) != 0);
            h.pump();
          }
          if (pick(2)) {
            h.core.on_cancel_returned();
            write();
          }
          break;
        case 8:
          h.now += std::chrono::milliseconds(pick(400));
          h.core.on_tick(h.now);
          h.pump();
          break;
        case 9:
          if (pick(15) == 0) break_now("random break");
          break;
      }
      ASSERT_LE(h.core.written(), p.depth) << "seed " << seed;
      ASSERT_LE(h.max_outstanding, p.depth) << "seed " << seed;
      ASSERT_LE(h.core.statements().size(), p.max_prepared) << "seed " << seed;
    }
    // Drain: the server answers everything, then the connection breaks.
    for (int guard = 0; guard < 1000 && h.closes.empty(); ++guard) {
      h.core.on_cancel_returned();
      write();
      if (h.wire.empty()) {
        h.now += 10s;  // expire what is still waiting
        h.core.on_tick(h.now);
        h.pump();
        if (h.core.waiting() == 0 && h.core.written() == 0) break;
        continue;
      }
      answer(server_answer());
    }
    break_now("end");
    ASSERT_FALSE(h.sent_after_close) << "seed " << seed;
    ASSERT_FALSE(h.replayed_executed) << "seed " << seed << ": a request that ran was written again";
    for (auto& [id, m] : reqs) {
      ASSERT_EQ(h.completions(id), 1u) << "seed " << seed << " request " << id;
      const pipe_outcome o = h.outcome(id);
      // Lost exactly when it was on the wire; not sent exactly when not.
      if (o == pipe_outcome::connection_lost || o == pipe_outcome::not_sent) {
        EXPECT_EQ(o == pipe_outcome::connection_lost, m.written) << "seed " << seed << " request " << id;
      }
      // A request answered successfully was answered by its own Sync.
      if (o == pipe_outcome::ok) {
        EXPECT_NE(std::find(answered.begin(), answered.end(), id), answered.end()) << "seed " << seed;
      }
      // Its outcome is what the server did with it the last time: a skipped
      // request is never reported as run (it is re-sent, or fails unsent/lost/cancelled).
      using t = model_request::treated;
      if (o == pipe_outcome::ok) {
        EXPECT_EQ(m.last, t::ok) << "seed " << seed << " request " << id;
      }
      if (o == pipe_outcome::sql_error || o == pipe_outcome::pooler_suspected) {
        EXPECT_EQ(m.last, t::error) << "seed " << seed << " request " << id;
      }
      if (m.last == t::skipped) {
        EXPECT_TRUE(o != pipe_outcome::ok && o != pipe_outcome::sql_error && o != pipe_outcome::no_result)
            << "seed " << seed << " request " << id;
      }
    }
    // In order: requests completed by their Sync complete in the order the
    // server answered them.
    std::vector<pipe_id> by_sync;
    for (pipe_id id : h.completion_order) {
      auto o = h.outcome(id);
      if (o == pipe_outcome::ok || o == pipe_outcome::sql_error) by_sync.push_back(id);
    }
    std::vector<pipe_id> last_answer;
    std::set<pipe_id> seen;
    for (auto it = answered.rbegin(); it != answered.rend(); ++it)
      if (seen.insert(*it).second) last_answer.insert(last_answer.begin(), *it);
    std::vector<pipe_id> expected;
    for (pipe_id id : last_answer)
      if (std::find(by_sync.begin(), by_sync.end(), id) != by_sync.end()) expected.push_back(id);
    ASSERT_EQ(by_sync, expected) << "seed " << seed;
    total_requests += reqs.size();
    total_at_break += checked_at_break;
  }
  EXPECT_TRUE(out_of_order.empty()) << out_of_order.size() << " of " << runs
                                    << " runs wrote requests out of submission order; first: seed "
                                    << out_of_order.begin()->first << ": " << out_of_order.begin()->second;
  RecordProperty("interleavings", runs);
  RecordProperty("requests", static_cast<int>(total_requests));
  RecordProperty("pending_at_a_break", static_cast<int>(total_at_break));
  RecordProperty("skipped_in_a_batch", static_cast<int>(total_skipped));
  RecordProperty("rewritten_in_order", static_cast<int>(total_rewritten));
  // Coalescing really happened and failed mid-batch often.
  EXPECT_GT(total_skipped, static_cast<std::size_t>(runs / 4));
  // The order check saw many requests written again.
  EXPECT_GT(total_rewritten, static_cast<std::size_t>(runs / 4));
  for (std::size_t pos = 0; pos < 4; ++pos) EXPECT_TRUE(error_positions.count(pos)) << "no error at position " << pos;
  EXPECT_GT(total_requests, static_cast<std::size_t>(runs * 10));
  // The break check above saw real work: many requests were pending at a break.
  EXPECT_GT(total_at_break, static_cast<std::size_t>(runs));
}

}  // namespace
