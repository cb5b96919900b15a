// TLS through both drivers: sslmode=verify-full against a CA and a
// server certificate the test makes. A user relies on: the right host name
// gives an encrypted session; a wrong host name or an unknown CA is refused
// with a message that says which; channel_binding=require works over TLS and
// is refused, clearly, without it. pgpipe passes these libpq options through
// its conninfo; the tests prove that nothing in the drivers (their own connect
// settings, timeouts, error mapping) weakens or hides them.
#include <pgpipe/async_client.hpp>
#include <pgpipe/blocking_pool.hpp>

#include "support/async_kit.hpp"
#include "support/cluster_fixture.hpp"
#include "support/kit.hpp"
#include "support/tls_certs.hpp"

#include <boost/asio/use_future.hpp>

#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <memory>
#include <string>

namespace {

namespace asio = boost::asio;
using namespace std::chrono_literals;
using pgpipe::test::with_options;

// What one attempt to run a query through a driver gave.
struct attempt {
  std::error_code ec;
  std::string message;  // what() or the diagnostics
  std::string ssl;      // pg_stat_ssl.ssl of the session ("t" over TLS)
  std::chrono::steady_clock::duration took{};  // from building the pool to the answer
  std::uint64_t connect_errors = 0;            // the pool's stats().errors.connect afterwards
};

const char* ssl_query = "select ssl::text from pg_stat_ssl where pid = pg_backend_pid()";

pgpipe::pool_params tls_params(const std::string& conninfo) {
  pgpipe::pool_params p = pgpipe::test::params_for(conninfo, 1);
  // A refused TLS session is not a permanent connect error to pool_core (it
  // retries with back-off until the deadline), so keep the deadline short.
  p.acquire_timeout = 1s;
  p.connect_timeout = 2s;
  return p;
}

attempt via_blocking(const std::string& conninfo) {
  attempt a;
  const auto t0 = std::chrono::steady_clock::now();
  pgpipe::blocking_pool pool{tls_params(conninfo)};
  try {
    a.ssl = pool.exec(ssl_query).value<std::string>();
  } catch (const pgpipe::error& e) {
    a.ec = e.code();
    a.message = e.what();
  }
  a.took = std::chrono::steady_clock::now() - t0;
  a.connect_errors = pool.stats().errors.connect;
  return a;
}

attempt via_async(const std::string& conninfo) {
  attempt a;
  const auto t0 = std::chrono::steady_clock::now();
  pgpipe::async_client client(tls_params(conninfo), {.loops = 1});
  auto f = client.async_query(ssl_query, pgpipe::test::use_future_ec);
  if (f.wait_for(30s) != std::future_status::ready) {
    a.ec = std::make_error_code(std::errc::timed_out);
    a.message = "the async query never completed";
    return a;
  }
  auto [ec, r] = f.get();
  a.ec = ec;
  if (ec) a.message = ec.message() + ": " + r.diag().to_string();
  else a.ssl = r.value<std::string>();
  a.took = std::chrono::steady_clock::now() - t0;
  a.connect_errors = client.stats().errors.connect;
  return a;
}

class tls_verify : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    pg_ = pgpipe::test::fresh_cluster().release();
    files_ = new pgpipe::test::tls_files(pgpipe::test::enable_tls(*pg_, "localhost"));
    // A second CA that signed nothing the server has.
    auto other = pgpipe::test::make_tls_files("localhost");
    other_ca_path_ = new std::string(pg_->base_dir() + "/other-ca.crt");
    std::ofstream(*other_ca_path_) << other.ca_cert_pem;
  }
  static void TearDownTestSuite() {
    delete pg_;
    delete files_;
    delete other_ca_path_;
  }
  // host= names the server for verification; hostaddr= is where to connect,
  // so "localhost" never resolves to an address the server does not listen on.
  static std::string conninfo(const std::string& options) { return with_options(pg_->conninfo(), options); }
  static std::string verify_full(const std::string& host, const std::string& ca) {
    return conninfo("host=" + host + " hostaddr=127.0.0.1 sslmode=verify-full sslrootcert=" + ca);
  }

  static pgpipe::devcluster::cluster* pg_;
  static pgpipe::test::tls_files* files_;
  static std::string* other_ca_path_;
};
pgpipe::devcluster::cluster* tls_verify::pg_ = nullptr;
pgpipe::test::tls_files* tls_verify::files_ = nullptr;
std::string* tls_verify::other_ca_path_ = nullptr;

void expect_refused(const attempt& a, const std::string& named) {
  EXPECT_TRUE(a.ec) << "connected anyway (ssl=" << a.ssl << ")";
  EXPECT_EQ(a.ec, pgpipe::errc_condition::connect_error) << a.ec.message() << ": " << a.message;
  EXPECT_NE(a.message.find(named), std::string::npos) << "expected \"" << named << "\" in: " << a.message;
}

TEST_F(tls_verify, verify_full_with_the_right_host_name_is_encrypted) {
  for (auto* via : {&via_blocking, &via_async}) {
    SCOPED_TRACE(via == &via_blocking ? "blocking" : "async");
    auto a = via(verify_full("localhost", files_->ca_cert_path));
    ASSERT_FALSE(a.ec) << a.message;
    EXPECT_EQ(a.ssl, "true");
  }
}

TEST_F(tls_verify, verify_full_with_a_wrong_host_name_is_refused_naming_the_mismatch) {
  for (auto* via : {&via_blocking, &via_async}) {
    SCOPED_TRACE(via == &via_blocking ? "blocking" : "async");
    // The certificate is for "localhost"; the client asks for 127.0.0.1.
    expect_refused(via(verify_full("127.0.0.1", files_->ca_cert_path)), "does not match host name");
  }
}

TEST_F(tls_verify, verify_full_with_an_unknown_ca_is_refused_naming_the_verification_failure) {
  for (auto* via : {&via_blocking, &via_async}) {
    SCOPED_TRACE(via == &via_blocking ? "blocking" : "async");
    expect_refused(via(verify_full("localhost", *other_ca_path_)), "certificate verify failed");
  }
}

// docs/reliability.md: a refused TLS session is not a permanent error to
// pool_core, so the pool retries it (with back-off) until acquire_timeout and
// the caller waits that long; it then gets the TLS error, not a timeout.
TEST_F(tls_verify, a_refused_tls_session_is_retried_until_acquire_timeout) {
  const auto acquire_timeout = tls_params("").acquire_timeout;
  for (auto* via : {&via_blocking, &via_async}) {
    const char* driver = via == &via_blocking ? "blocking" : "async";
    SCOPED_TRACE(driver);
    const auto a = via(verify_full("127.0.0.1", files_->ca_cert_path));
    expect_refused(a, "does not match host name");
    const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(a.took);
    EXPECT_GE(ms, acquire_timeout) << "gave up before acquire_timeout";
    EXPECT_LE(ms, acquire_timeout + 5s) << "a bound for a loaded machine under TSan";
    EXPECT_GE(a.connect_errors, 2u) << "refused once, never retried";
    std::printf("[figure] tls_refused.%s.failed_after_ms=%lld connect_attempts=%llu (acquire_timeout %lld ms)\n", driver,
                static_cast<long long>(ms.count()), static_cast<unsigned long long>(a.connect_errors),
                static_cast<long long>(acquire_timeout.count()));
  }
}

TEST_F(tls_verify, channel_binding_require_works_over_tls_and_is_refused_without_it) {
  for (auto* via : {&via_blocking, &via_async}) {
    SCOPED_TRACE(via == &via_blocking ? "blocking" : "async");
    auto ok = via(verify_full("localhost", files_->ca_cert_path) + " channel_binding=require");
    ASSERT_FALSE(ok.ec) << ok.message;
    EXPECT_EQ(ok.ssl, "true");
    expect_refused(via(conninfo("sslmode=disable channel_binding=require")), "channel binding");
  }
}

TEST_F(tls_verify, the_password_of_a_refused_tls_session_never_appears) {
  for (auto* via : {&via_blocking, &via_async}) {
    SCOPED_TRACE(via == &via_blocking ? "blocking" : "async");
    for (const auto& a : {via(verify_full("127.0.0.1", files_->ca_cert_path)),
                          via(conninfo("sslmode=disable channel_binding=require"))}) {
      ASSERT_TRUE(a.ec);
      EXPECT_EQ(a.message.find(pg_->password()), std::string::npos) << a.message;
    }
  }
}

}  // namespace
