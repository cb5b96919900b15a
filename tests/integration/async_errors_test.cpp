// What a failed operation tells its caller on the async driver: a failed
// query's result keeps its SQLSTATE and message, and the server's fields
// reach the diagnostics.
#include <pgpipe/pgpipe.hpp>

#include "support/cluster_fixture.hpp"
#include "support/kit.hpp"

#include <boost/asio/use_future.hpp>

#include <gtest/gtest.h>

#include <string>

namespace asio = boost::asio;
using namespace std::chrono_literals;

namespace {

using namespace pgpipe::test;  // the shared kit (tests/support)

pgpipe::pool_params errors_params() { return params_for(shared_cluster().conninfo(), 2); }

bool contains(std::string_view hay, std::string_view needle) { return hay.find(needle) != std::string_view::npos; }

}  // namespace

TEST(async_errors, reading_a_failed_querys_result_throws_its_sqlstate_and_message) {
  pgpipe::async_client client(errors_params());
  auto [ec, r] = client.async_query("selec 1", asio::use_future).get();
  ASSERT_EQ(ec, pgpipe::make_sqlstate("42601")) << ec.message();
  try {
    (void)r.value<int>();
    ADD_FAILURE() << "value<int>() on a failed query did not throw";
  } catch (const pgpipe::error& e) {
    EXPECT_EQ(pgpipe::sqlstate_of(e.code()), "42601") << e.what();
    EXPECT_EQ(e.diag().sqlstate, "42601") << e.what();
    EXPECT_TRUE(contains(e.what(), "syntax error at or near \"selec\"")) << e.what();
  }
  try {
    (void)r.empty();
    ADD_FAILURE() << "empty() on a failed query read as " << (r.native_handle() ? "a result" : "nothing");
  } catch (const pgpipe::error& e) {
    EXPECT_EQ(pgpipe::sqlstate_of(e.code()), "42601") << e.what();
  }
}
