// The libpq 17+ calls looked up at run time (pq/libpq_features.hpp): found
// where the loaded libpq has them, absent where it does not, whichever
// headers pgpipe was built with. The suite runs with Debian's libpq 15 and
// with libpq 18 at run time (.ci/compat), so each run checks its own side.
#include "pq/libpq_features.hpp"

#include "pq/libpq_version.hpp"

#include <gtest/gtest.h>
#include <libpq-fe.h>

#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

namespace {

using pgpipe::detail::libpq_features;
using pgpipe::detail::loaded_libpq_features;
using pgpipe::detail::resolve_libpq_features;

TEST(libpq_features, the_loaded_libpq_has_them_exactly_when_it_is_17_or_newer) {
  const libpq_features& f = loaded_libpq_features();
  const bool newer = PQlibVersion() >= 170000;
  EXPECT_EQ(f.send_pipeline_sync != nullptr, newer) << "PQlibVersion() = " << PQlibVersion();
  EXPECT_EQ(f.set_chunked_rows_mode != nullptr, newer);
  EXPECT_EQ(f.send_close_prepared != nullptr, newer);
  EXPECT_EQ(f.cancel_create != nullptr, newer);
  EXPECT_EQ(f.cancel_start != nullptr, newer);
  EXPECT_EQ(f.cancel_poll != nullptr, newer);
  EXPECT_EQ(f.cancel_status != nullptr, newer);
  EXPECT_EQ(f.cancel_socket != nullptr, newer);
  EXPECT_EQ(f.cancel_error_message != nullptr, newer);
  EXPECT_EQ(f.cancel_finish != nullptr, newer);
}

TEST(libpq_features, the_lookup_is_done_once) {
  EXPECT_EQ(&loaded_libpq_features(), &loaded_libpq_features());
}

TEST(libpq_features, a_libpq_without_them_resolves_to_none) {
  std::vector<std::string> asked;
  const libpq_features f = resolve_libpq_features([&](const char* name) -> void* {
    asked.emplace_back(name);
    return nullptr;
  });
  EXPECT_EQ(f.send_pipeline_sync, nullptr);
  EXPECT_EQ(f.set_chunked_rows_mode, nullptr);
  EXPECT_EQ(f.send_close_prepared, nullptr);
  EXPECT_EQ(f.cancel_create, nullptr);
  EXPECT_FALSE(f.cancel_usable());
  EXPECT_EQ(asked.size(), 10u);
  for (const char* name : {"PQsendPipelineSync", "PQsetChunkedRowsMode", "PQsendClosePrepared", "PQcancelCreate",
                           "PQcancelStart", "PQcancelPoll", "PQcancelStatus", "PQcancelSocket",
                           "PQcancelErrorMessage", "PQcancelFinish"})
    EXPECT_NE(std::find(asked.begin(), asked.end(), name), asked.end()) << name << " was not looked up";
}

int fake_sync(PGconn*) { return 1; }

TEST(libpq_features, each_name_gets_its_own_function) {
  const libpq_features f = resolve_libpq_features([](const char* name) -> void* {
    return std::strcmp(name, "PQsendPipelineSync") == 0 ? reinterpret_cast<void*>(&fake_sync) : nullptr;
  });
  EXPECT_EQ(f.send_pipeline_sync, &fake_sync);
  EXPECT_EQ(f.send_close_prepared, nullptr);
}

TEST(libpq_features, the_cancel_set_is_usable_only_when_complete) {
  libpq_features f = resolve_libpq_features([](const char*) -> void* { return reinterpret_cast<void*>(&fake_sync); });
  EXPECT_TRUE(f.cancel_usable());
  f.cancel_poll = nullptr;
  EXPECT_FALSE(f.cancel_usable());
}

TEST(libpq_features, stats_name_the_fast_paths_a_pool_uses) {
  pgpipe::libpq_fast_paths in_use;
  in_use.pipeline_sync = true;
  in_use.close_prepared = true;
  const pgpipe::detail::runtime_record record(in_use);
  const pgpipe::runtime_info info = record.snapshot();
  EXPECT_TRUE(info.fast_paths.pipeline_sync);
  EXPECT_TRUE(info.fast_paths.close_prepared);
  EXPECT_FALSE(info.fast_paths.chunked_rows);
  EXPECT_EQ(pgpipe::detail::runtime_text(info),
            "libpq " + pgpipe::detail::version_text(PQlibVersion()) +
                " (loaded at run time; fast paths: PQsendPipelineSync, PQsendClosePrepared)");
}

TEST(libpq_features, the_async_driver_uses_what_the_loaded_libpq_has) {
  const pgpipe::libpq_fast_paths p = pgpipe::detail::async_fast_paths(loaded_libpq_features());
  const bool newer = PQlibVersion() >= 170000;
  EXPECT_EQ(p.pipeline_sync, newer);
  EXPECT_EQ(p.close_prepared, newer);
  EXPECT_EQ(p.chunked_rows, newer);
  EXPECT_EQ(p.cancel_on_loop, newer);
  EXPECT_EQ(pgpipe::detail::async_fast_paths(libpq_features{}).pipeline_sync, false);
  EXPECT_EQ(pgpipe::detail::async_fast_paths(libpq_features{}).cancel_on_loop, false);
  EXPECT_EQ(pgpipe::detail::async_fast_paths(libpq_features{}).chunked_rows, false);
}

}  // namespace
