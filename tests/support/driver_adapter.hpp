// One small interface over both drivers, so a scenario both must pass is
// written once as a typed test (TYPED_TEST_SUITE(..., pgpipe::test::drivers))
// and runs against each by construction.
//
// A driver adapter D has:
//   static constexpr const char* name;              "async" or "blocking"
//   static constexpr bool checks_conninfo_at_construction;
//   explicit D(const pool_params&);                 may throw pgpipe::error
//   outcome run(std::string_view sql, args...);     one query, waited for
//   pool_stats stats() const;
//   std::string log();                              what the driver logged
#pragma once

#include <pgpipe/async_client.hpp>
#include <pgpipe/blocking_pool.hpp>

#include <boost/asio/use_future.hpp>
#include <gtest/gtest.h>

#include <chrono>
#include <future>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

namespace pgpipe::test {

/// How one query ended, the same for both drivers. `text` holds the code's
/// message and every diagnostics field, for "names the problem" and
/// "never shows the password" checks.
struct outcome {
  std::error_code ec;
  diagnostics diag;
  std::string text;
  /// The first field of the first row as the server sent it ("" when none);
  /// cast to text in the SQL to compare it across drivers.
  std::string first;
};

inline std::string describe(const std::error_code& ec, const diagnostics& d, std::string_view what = {}) {
  std::string t = ec.message() + " | " + d.to_string() + " | " + d.severity + " | " + d.sqlstate + " | " +
                  d.message + " | " + d.detail + " | " + d.hint + " | " + d.context + " | " + d.client_message;
  if (!what.empty()) t += " | " + std::string(what);
  return t;
}

/// The async driver: one loop, a query waited for with use_future (bounded).
class async_driver {
 public:
  static constexpr const char* name = "async";
  /// The constructor only validates params; the conninfo is parsed on connect.
  static constexpr bool checks_conninfo_at_construction = false;

  explicit async_driver(const pool_params& p) {
    async_client_options o;
    o.loops = 1;
    o.logger = [this](log_level, std::string_view line) {
      std::lock_guard lk(mu_);
      lines_.emplace_back(line);
    };
    client_ = std::make_unique<async_client>(p, o);
  }

  template <class... Args>
  outcome run(std::string_view sql, Args&&... args) {
    auto f = client_->async_query(sql, std::forward<Args>(args)..., boost::asio::use_future);
    outcome o;
    if (f.wait_for(std::chrono::seconds(30)) != std::future_status::ready) {
      o.ec = make_error_code(std::errc::timed_out);
      o.text = "never completed";
      return o;
    }
    auto [ec, r] = f.get();
    o.ec = ec;
    o.diag = r.diag();
    o.text = describe(ec, o.diag);
    if (!ec && r.size() > 0 && r.columns() > 0) o.first = std::string(r[0][0].text());
    return o;
  }
  pool_stats stats() const { return client_->stats(); }
  std::string log() {
    std::lock_guard lk(mu_);
    std::string s;
    for (const auto& l : lines_) s += l + "\n";
    return s;
  }

 private:
  std::mutex mu_;
  std::vector<std::string> lines_;
  std::unique_ptr<async_client> client_;  // last: destroyed first, before the log it writes to
};

/// The blocking driver: pool.exec on the calling thread; errors are caught
/// into an outcome.
class blocking_driver {
 public:
  static constexpr const char* name = "blocking";
  /// The pool parses the conninfo in its constructor (errc::bad_conninfo).
  static constexpr bool checks_conninfo_at_construction = true;

  explicit blocking_driver(const pool_params& p)
      : pool_(p, [this](log_level, std::string_view line) {
          std::lock_guard lk(mu_);
          lines_.emplace_back(line);
        }) {}
  ~blocking_driver() { pool_.set_logger({}); }

  template <class... Args>
  outcome run(std::string_view sql, Args&&... args) {
    outcome o;
    try {
      const pqxx::result r = pool_.exec(sql, std::forward<Args>(args)...);
      if (!r.empty() && r.columns() > 0) o.first = r[0][0].c_str();
    } catch (const pgpipe::error& e) {
      o.ec = e.code();
      o.diag = e.diag();
      o.text = describe(o.ec, o.diag, e.what());
    }
    return o;
  }
  pool_stats stats() const { return pool_.stats(); }
  std::string log() {
    std::lock_guard lk(mu_);
    std::string s;
    for (const auto& l : lines_) s += l + "\n";
    return s;
  }

 private:
  std::mutex mu_;
  std::vector<std::string> lines_;
  blocking_pool pool_;  // last: its logger writes to the members above
};

using drivers = ::testing::Types<async_driver, blocking_driver>;

/// Names typed-test instances after the driver: badinput/async, badinput/blocking.
struct driver_names {
  template <class D>
  static std::string GetName(int) {
    return D::name;
  }
};

}  // namespace pgpipe::test
