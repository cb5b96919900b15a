// docs/api-guide.md, "A transaction in one round trip": a coroutine with the
// client and the values the block sends.
namespace asio = boost::asio;

asio::awaitable<void> snippet(pgpipe::async_client& client, long account, long teller, long delta) {
  // @snippet
}
