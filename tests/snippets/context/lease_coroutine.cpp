// A coroutine holding an async lease (from async_acquire).
namespace asio = boost::asio;

asio::awaitable<void> snippet(pgpipe::async_lease& lease) {
  // @snippet
}
