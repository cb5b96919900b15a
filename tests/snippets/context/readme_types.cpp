// README.md, "Types": a coroutine holding both drivers' entry points; what
// the block reads back goes to `use`, as the reader's code would.
namespace asio = boost::asio;

void use(const auto&... values);

asio::awaitable<void> snippet(pgpipe::async_client& client, pgpipe::blocking_pool& pool) {
  // @snippet
  use(back, when, json, labels, total, placed_again);
}
