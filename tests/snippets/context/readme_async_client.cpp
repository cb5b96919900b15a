// README.md, "Async driver": a coroutine; `key` is the caller's.
namespace asio = boost::asio;

asio::awaitable<void> snippet(std::string key) {
  // @snippet
}
