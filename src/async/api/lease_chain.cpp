#include "async/api/lease_chain.hpp"

#include <boost/asio/associated_executor.hpp>
#include <boost/asio/async_result.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/use_awaitable.hpp>

namespace pgpipe::detail {
namespace {

namespace asio = boost::asio;

// One statement's slot in the chain; the last one to arrive wakes the waiter.
class chain_step final : public completion<result> {
 public:
  chain_step(std::shared_ptr<chain_state> st, std::size_t index) : st_(std::move(st)), index_(index) {}
  void complete(const asio::any_io_executor&, bool, std::error_code ec, result r) override {
    std::unique_ptr<chain_waiter> wake;
    {
      std::lock_guard lock(st_->m);
      st_->out[index_] = {ec, std::move(r)};
      if (--st_->left == 0) wake = std::move(st_->waiter);
    }
    if (wake) wake->resume();
  }

 private:
  std::shared_ptr<chain_state> st_;
  std::size_t index_;
};

// The coroutine's own handler, held in one allocation (a copyable
// std::function would need it shared: two) and posted as it is.
template <class Handler>
class waiter_of final : public chain_waiter {
 public:
  explicit waiter_of(Handler h) : h_(std::move(h)) {}
  void resume() override {
    auto ex = asio::get_associated_executor(h_);
    asio::post(ex, std::move(h_));
  }

 private:
  Handler h_;
};

}  // namespace

std::shared_ptr<chain_state> start_chain(lease_impl& l, std::vector<query_spec> specs, bool open_end) {
  auto st = std::make_shared<chain_state>();
  st->out.resize(specs.size());
  st->left = specs.size();
  std::vector<std::unique_ptr<completion<result>>> done;
  done.reserve(specs.size());
  for (std::size_t i = 0; i < specs.size(); ++i) done.push_back(std::make_unique<chain_step>(st, i));
  l.submit_chain(std::move(specs), std::move(done), open_end);
  return st;
}

asio::awaitable<void> wait_chain(std::shared_ptr<chain_state> st) {
  // Not a coroutine itself: the initiation suspends the caller directly.
  return asio::async_initiate<const asio::use_awaitable_t<>&, void()>(
      [st](auto handler) {
        auto ex = asio::get_associated_executor(handler);
        std::unique_lock lock(st->m);
        if (st->left == 0) {
          lock.unlock();
          asio::post(ex, std::move(handler));
          return;
        }
        st->waiter = std::make_unique<waiter_of<decltype(handler)>>(std::move(handler));
      },
      asio::use_awaitable);
}

}  // namespace pgpipe::detail
