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

// The server answers the head: its Parse (when it carried one), its
// Execute's rows, then its Sync.
void answer_head(pipeline_core& core, bool parse, time_point now) {
  if (parse) {
    (void)core.on_result(pipe_result::command_ok);
    core.on_command_end();
  }
  (void)core.on_result(pipe_result::rows);
  core.on_command_end();
  core.on_sync(now, tx_state::idle);
}

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
  core.submit(1, borrowed(owner));
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
  answer_head(core, true, now);
  (void)take(core);
  EXPECT_TRUE(watch.expired()) << "released once the server is past it";
  EXPECT_TRUE(core.statements().contains("select ten from san_pham where ma = $1"));

  auto next = std::make_shared<fake_request>(fake_request{"select ten from san_pham where ma = $1"});
  core.submit(2, borrowed(next));
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
    core.submit(id, borrowed(owner));
    if (id == 2) core.write_pass(now);
  }
  (void)take(core);
  for (auto& w : watch) EXPECT_FALSE(w.expired());
  core.on_broken("test");
  (void)take(core);
  for (auto& w : watch) EXPECT_TRUE(w.expired());
}

// A statement prepared with parameter types is named by its text and its
// types (borrowed from the request in two parts): the same text with the
// same types reuses the statement, with other types it is another one.
TEST(pipeline_core_key, typed_keys_name_text_and_types_together) {
  const auto now = pool_clock::now();
  pipeline_core core(pipeline_params{});
  struct typed_request {
    std::string sql;
    std::vector<unsigned> types;
  };
  auto send_one = [&](pipe_id id, std::vector<unsigned> types) {
    auto owner = std::make_shared<typed_request>(typed_request{"select $1", std::move(types)});
    pipe_request r;
    const std::string_view bytes(reinterpret_cast<const char*>(owner->types.data()),
                                 owner->types.size() * sizeof(unsigned));
    r.sql = sql_key(owner->sql, owner, bytes);
    r.param_count = owner->types.size();
    core.submit(id, std::move(r));
    core.write_pass(now);
    auto sent = take(core);
    const pipe_action* s = find(sent, pipe_action::kind::send, id);
    EXPECT_NE(s, nullptr);
    pipe_action out = s != nullptr ? *s : pipe_action(pipe_action::kind::send);
    answer_head(core, s != nullptr && s->parse, now);
    (void)take(core);
    return out;
  };
  const pipe_action int4 = send_one(1, {23});
  const pipe_action text = send_one(2, {25});
  const pipe_action int4_again = send_one(3, {23});
  const pipe_action untyped = send_one(4, {});
  EXPECT_TRUE(int4.parse);
  EXPECT_TRUE(text.parse) << "other types: another statement";
  EXPECT_NE(text.name, int4.name);
  EXPECT_FALSE(int4_again.parse) << "same text and types: the statement is reused";
  EXPECT_EQ(int4_again.name, int4.name);
  EXPECT_TRUE(untyped.parse) << "untyped: another statement again";
  EXPECT_EQ(core.statements().size(), 3u);
  EXPECT_TRUE(core.statements().contains("select $1"));
}

}  // namespace
