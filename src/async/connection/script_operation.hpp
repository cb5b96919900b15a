// script_operation: a script on a lease (async_lease::async_execute_script):
// several statements sent as one simple query, outside pipeline mode.
//
// Why outside pipeline mode: libpq sends no simple query in pipeline mode
// (PQsendQuery is extended protocol there, one statement per call). So a
// script is a solo operation (solo_operation.hpp), as a COPY is: the
// connection leaves pipeline mode, sends the text with PQsendQuery, reads
// every result, and enters pipeline mode again once libpq has no more. What
// is kept of each result, what a COPY in the script gets, and when the
// script's own transaction is rolled back are pq/script_results' rules,
// shared with the blocking driver. A script answered early (its deadline, the
// caller's cancellation) is cancelled on the server (pipeline_core::solo_stop),
// and its results are still read to the end before anything else is written.
#pragma once

#include "async/connection/solo_operation.hpp"
#include "pq/script_results.hpp"

#include <memory>
#include <optional>

namespace pgpipe::detail {

class script_operation final : public solo_operation {
 public:
  explicit script_operation(std::shared_ptr<query_request> req) : req_(std::move(req)) {}

  const char* what() const noexcept override { return "a script"; }
  void start(solo_host& host, query_request& req) override;
  void flush(solo_host& host) override;
  /// Reads the script's results: the first error and the last result are kept.
  void pump(solo_host& host) override;
  bool runs(const query_request& req) const noexcept override { return req_.get() == &req; }

 private:
  /// Every result read: back to pipeline mode; the request's outcome is set.
  void done(solo_host& host);

  std::shared_ptr<query_request> req_;
  bool in_copy_out_ = false;      ///< a COPY TO STDOUT's rows are being read and dropped
  bool rolling_back_ = false;     ///< ending the transaction it began and failed in
  std::optional<script_results> results_;  ///< what its results left (pq/script_results.hpp)
};

}  // namespace pgpipe::detail
