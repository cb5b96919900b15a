// connect_hooks: the connection string of one connect. before_connect's
// string and passwords, its exception as a connect error, and the host
// shuffle of load_balance_hosts = random (each host keeps its port). No
// server: PQconninfoParse only.
#include "pq/connect_hooks.hpp"

#include "pq/host_walk.hpp"

#include <pgpipe/error.hpp>

#include <gtest/gtest.h>

#include <map>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

namespace {

using pgpipe::load_balance;
using pgpipe::detail::connect_hooks;
using pgpipe::detail::plan_host_walk;
using pgpipe::detail::prepare_connect;
using pgpipe::detail::with_hosts_shuffled;

// "host:port" of each attempt the walk makes, in order.
std::vector<std::string> walk_of(const std::string& conninfo) {
  std::vector<std::string> out;
  for (const auto& a : plan_host_walk(conninfo, "pgpipe")) {
    std::string host, port;
    for (std::size_t i = 0; i < a.keys.size(); ++i) {
      if (a.keys[i] == "host") host = a.values[i];
      if (a.keys[i] == "port") port = a.values[i];
    }
    out.push_back(host + ":" + port);
  }
  return out;
}

TEST(connect_hooks, a_shuffle_keeps_each_host_with_its_port_and_reaches_every_order) {
  const std::string s = "host=a,b,c port=1,2,3 user=u password='p w' dbname=app";
  std::mt19937_64 rng(7);
  std::set<std::vector<std::string>> orders;
  for (int i = 0; i < 200; ++i) {
    const std::string shuffled = with_hosts_shuffled(s, rng);
    std::vector<std::string> walk = walk_of(shuffled);
    ASSERT_EQ(walk.size(), 3u) << shuffled;
    std::multiset<std::string> pairs(walk.begin(), walk.end());
    EXPECT_EQ(pairs, (std::multiset<std::string>{"a:1", "b:2", "c:3"})) << shuffled;
    orders.insert(walk);
    EXPECT_NE(shuffled.find("password='p w'"), std::string::npos) << "other settings must survive: " << shuffled;
  }
  EXPECT_EQ(orders.size(), 6u) << "every order of three hosts should appear in 200 shuffles";
}

TEST(connect_hooks, a_uri_and_one_port_for_all_hosts_are_shuffled_too) {
  std::mt19937_64 rng(11);
  std::set<std::string> firsts;
  for (int i = 0; i < 100; ++i) {
    const auto walk = walk_of(with_hosts_shuffled("postgresql://u@x:5,y:6/app", rng));
    ASSERT_EQ(walk.size(), 2u);
    firsts.insert(walk[0]);
    EXPECT_TRUE((walk == std::vector<std::string>{"x:5", "y:6"}) || (walk == std::vector<std::string>{"y:6", "x:5"}));
    const auto one_port = walk_of(with_hosts_shuffled("host=x,y port=9 dbname=app", rng));
    ASSERT_EQ(one_port.size(), 2u);
    EXPECT_EQ(one_port[0].substr(1), ":9");
  }
  EXPECT_EQ(firsts.size(), 2u);
}

TEST(connect_hooks, one_host_or_a_string_libpq_cannot_read_is_left_as_given) {
  std::mt19937_64 rng(3);
  EXPECT_EQ(with_hosts_shuffled("host=a port=1 dbname=app", rng), "host=a port=1 dbname=app");
  EXPECT_EQ(with_hosts_shuffled("host=a,b port=1,2,3", rng), "host=a,b port=1,2,3") << "mismatched lists: libpq says why";
  EXPECT_EQ(with_hosts_shuffled("host='unterminated", rng), "host='unterminated");
}

TEST(connect_hooks, before_connect_gives_the_string_and_its_password_is_scrubbed) {
  connect_hooks h;
  std::string seen;
  h.before_connect = [&](const std::string& c) {
    seen = c;
    return c + " password='fresh-token-42'";
  };
  const auto t = prepare_connect(h, "host=a dbname=app", {"old"});
  EXPECT_FALSE(t.ec);
  EXPECT_EQ(seen, "host=a dbname=app");
  EXPECT_EQ(t.conninfo, "host=a dbname=app password='fresh-token-42'");
  std::set<std::string> secrets(t.secrets.begin(), t.secrets.end());
  EXPECT_TRUE(secrets.count("old"));
  EXPECT_TRUE(secrets.count("fresh-token-42")) << "the new password must be scrubbed from this connect's errors";
}

TEST(connect_hooks, a_throwing_before_connect_is_a_connect_error_naming_it_without_the_password) {
  connect_hooks h;
  h.before_connect = [](const std::string&) -> std::string {
    throw std::runtime_error("token service down (last password s3cret)");
  };
  const auto t = prepare_connect(h, "host=a password=s3cret", {"s3cret"});
  EXPECT_EQ(t.ec, pgpipe::errc::connect_failed);
  EXPECT_NE(t.error_message.find("pool_params::before_connect failed: token service down"), std::string::npos)
      << t.error_message;
  EXPECT_EQ(t.error_message.find("s3cret"), std::string::npos) << t.error_message;
}

TEST(connect_hooks, without_hooks_the_string_is_unchanged) {
  const auto t = prepare_connect({}, "host=a,b port=1,2", {"x"});
  EXPECT_FALSE(t.ec);
  EXPECT_EQ(t.conninfo, "host=a,b port=1,2");
  EXPECT_EQ(t.secrets, std::vector<std::string>{"x"});
}

TEST(connect_hooks, random_load_balance_shuffles_through_prepare_connect) {
  connect_hooks h;
  h.load_balance_hosts = load_balance::random;
  std::set<std::string> firsts;
  for (int i = 0; i < 64; ++i) firsts.insert(walk_of(prepare_connect(h, "host=a,b port=1,2", {}).conninfo)[0]);
  EXPECT_EQ(firsts.size(), 2u);
}

}  // namespace
