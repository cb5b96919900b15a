// README.md, "Transactions with retry": a coroutine holding both drivers'
// entry points (each made as in the blocks above).
namespace asio = boost::asio;

asio::awaitable<void> snippet(pgpipe::async_client& client, pgpipe::blocking_pool& pool, std::string key) {
  // @snippet
}
