// pipeline_core with borrowed statement-cache keys (sql_key): the shell lends
// the request's own SQL text and the core keeps the request alive as long as
// its entry, even after the caller was answered (cancelled, detached) and the
// shell dropped the request, until the server is past it.
#include "async/sansio/pipeline_core.hpp"

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

namespace {

using namespace pgpipe::detail;

struct fake_request {
  std::string sql;
};

pipe_request borrowed(const std::shared_ptr<fake_request>& owner) {
  pipe_request r;
  r.sql = sql_key(owner->sql, owner);
  r.pooled = true;
  return r;
}

std::vector<pipe_action> take(pipeline_core& core) { return core.take_actions(); }

const pipe_action* find(const std::vector<pipe_action>& as, pipe_action::kind k, pipe_id id) {
  for (const auto& a : as)
    if (a.what == k && a.id == id) return &a;
  return nullptr;
}

TEST(pipeline_core_key, owning_key_from_a_string) {
  sql_key k = std::string("select 1");
  EXPECT_EQ(k.view(), "select 1");
  sql_key copy = k;
  k = std::string("select 2");
  EXPECT_EQ(copy.view(), "select 1") << "a copy shares the text, never sees a reassignment";
  EXPECT_EQ(k.view(), "select 2");
}

TEST(pipeline_core_key, detached_request_keeps_its_text_until_its_sync) {
  const auto now = pool_clock::now();
  pipeline_core core(pipeline_params{});
  auto owner = std::make_shared<fake_request>(fake_request{"select ten from san_pham where ma = $1"});
  std::weak_ptr<fake_request> watch = owner;
  core.submit(now, 1, borrowed(owner));
  core.write_pass(now);
  auto sent = take(core);
  const pipe_action* s = find(sent, pipe_action::kind::send, 1);
  ASSERT_NE(s, nullptr);
  EXPECT_TRUE(s->parse) << "first use carries its Parse";
  const std::string name = s->name;

  // The caller cancels: answered at once, the entry stays written.
  core.cancel(now, 1, true);
  auto done = take(core);
  const pipe_action* c = find(done, pipe_action::kind::complete, 1);
  ASSERT_NE(c, nullptr);
  EXPECT_EQ(c->outcome, pipe_outcome::cancelled_detached);
  owner.reset();  // the shell drops the request once it is completed
  EXPECT_FALSE(watch.expired()) << "the core's entry still needs the text (statement cache, at its Sync)";

  // The server answers Parse, Execute, Sync: the statement stays cached
  // under the same text and is reused by the next request with that text.
  (void)core.on_result(pipe_result::command_ok);
  core.on_command_end();
  (void)core.on_result(pipe_result::rows);
  core.on_command_end();
  core.on_sync(now, tx_state::idle);
  (void)take(core);
  EXPECT_TRUE(watch.expired()) << "released once the server is past it";
  EXPECT_TRUE(core.statements().contains("select ten from san_pham where ma = $1"));

  auto next = std::make_shared<fake_request>(fake_request{"select ten from san_pham where ma = $1"});
  core.submit(now, 2, borrowed(next));
  core.write_pass(now);
  auto again = take(core);
  const pipe_action* s2 = find(again, pipe_action::kind::send, 2);
  ASSERT_NE(s2, nullptr);
  EXPECT_FALSE(s2->parse);
  EXPECT_EQ(s2->name, name);
}

TEST(pipeline_core_key, break_releases_every_borrowed_text) {
  const auto now = pool_clock::now();
  pipeline_core core(pipeline_params{});
  std::vector<std::weak_ptr<fake_request>> watch;
  for (pipe_id id = 1; id <= 3; ++id) {
    auto owner = std::make_shared<fake_request>(fake_request{"select " + std::to_string(id)});
    watch.push_back(owner);
    core.submit(now, id, borrowed(owner));
    if (id == 2) core.write_pass(now);
  }
  (void)take(core);
  for (auto& w : watch) EXPECT_FALSE(w.expired());
  core.on_broken("test");
  (void)take(core);
  for (auto& w : watch) EXPECT_TRUE(w.expired());
}

}  // namespace
