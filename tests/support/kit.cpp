#include "support/kit.hpp"

#include "support/cluster_fixture.hpp"

#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <exception>

namespace pgpipe::test {

pool_params params_for(const std::string& conninfo, std::size_t max_size) {
  pool_params p;
  p.conninfo = conninfo;
  p.max_size = max_size;
  return p;
}

pool_params fault_params(const std::string& conninfo, std::size_t max_size) {
  using namespace std::chrono_literals;
  pool_params p = params_for(conninfo, max_size);
  p.acquire_timeout = 10s;
  p.connect_timeout = 2s;
  return p;
}

std::string app_conninfo(const std::string& app) {
  return with_options(shared_cluster().conninfo(), "application_name=" + app);
}

int server_connections_where(const devcluster::cluster& pg, const std::string& where) {
  return std::stoi(pg.query_value("select count(*) from pg_stat_activity where " + where));
}

int server_connections(const devcluster::cluster& pg, const std::string& app) {
  return server_connections_where(pg, "application_name = '" + app + "'");
}

void expect_no_secret(std::string_view text, std::initializer_list<std::string_view> secrets, std::string_view where) {
  for (std::string_view secret : secrets) {
    EXPECT_EQ(text.find(secret), std::string_view::npos) << "password in " << where << ": " << text;
  }
}

int refused_port() {
  // Bind port 0 (the kernel picks a free one), read it back, close: nothing
  // listens on it, and no fixed port is assumed free.
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = 0;
  ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a);
  socklen_t len = sizeof a;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  ::close(fd);
  return ntohs(a.sin_port);
}

limited_role::limited_role(const devcluster::cluster& pg, std::string name, std::string password)
    : pg_(pg), name_(std::move(name)), password_(std::move(password)) {
  pg.exec("drop role if exists " + name_);
  pg.exec("create role " + name_ + " login password '" + password_ + "' connection limit 2");
}

limited_role::~limited_role() {
  try {
    pg_.exec("select pg_terminate_backend(pid) from pg_stat_activity where usename = '" + name_ + "'");
    pg_.exec("drop role if exists " + name_);
  } catch (...) {
    // Best effort: a test that stopped the server leaves nothing to drop.
  }
}

std::string limited_role::conninfo(const std::string& app) const {
  return "host=127.0.0.1 port=" + std::to_string(pg_.port()) + " dbname=postgres user=" + name_ +
         " password=" + password_ + " application_name=" + app;
}

connection_sampler::connection_sampler(const devcluster::cluster& pg, std::function<pool_stats()> stats,
                                       std::string app)
    : pg_(pg), stats_(std::move(stats)), app_(std::move(app)), thread_([this] { run(); }) {}

connection_sampler::~connection_sampler() { stop(); }

void connection_sampler::stop() {
  stop_ = true;
  if (thread_.joinable()) thread_.join();
}

void connection_sampler::run() {
  using namespace std::chrono_literals;
  while (!stop_) {
    const auto s = stats_();
    const std::size_t held = s.connecting + s.idle + s.busy + s.draining + s.checking;
    max_pool_ = std::max(max_pool_.load(), held);
    try {
      max_server_ = std::max(max_server_.load(), server_connections(pg_, app_));
    } catch (const std::exception&) {
      // The server is restarting: nothing to sample right now.
    }
    std::this_thread::sleep_for(5ms);  // sampling period (pg_stat_activity has no event)
  }
}

}  // namespace pgpipe::test
