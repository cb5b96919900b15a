// async_client::async_stream (contract in <pgpipe/async_client.hpp>): a
// lease of its own, the stream started on it, the lease kept by the stream.
#include <pgpipe/async_client.hpp>

#include "async/api/acquire_failure.hpp"

#include <boost/asio/system_executor.hpp>

#include <memory>
#include <utility>

namespace pgpipe {

namespace asio = boost::asio;

void async_client::submit_stream(const std::shared_ptr<detail::client_impl>& impl, detail::query_spec spec,
                                 std::unique_ptr<detail::completion<async_row_stream>> done, asio::cancellation_slot slot) {
  std::shared_ptr<detail::completion<async_row_stream>> d(std::move(done));
  auto acquired = [d, spec = std::move(spec)](std::error_code ec, async_lease l) mutable {
    if (ec) {
      d->complete(asio::system_executor(), true, ec, async_row_stream(detail::acquire_failure(l, ec, "the stream")));
      return;
    }
    auto ex = l.get_executor();
    async_row_stream s = l.start_stream(std::move(spec));
    s.owner_ = std::make_shared<async_lease>(std::move(l));
    d->complete(ex, false, {}, std::move(s));
  };
  submit_acquire(impl, std::make_unique<detail::completion_impl<async_lease, decltype(acquired)>>(std::move(acquired)),
                 slot);
}

}  // namespace pgpipe
