// README.md, "LISTEN/NOTIFY": a coroutine; `resync` and `handle` are the reader's.
namespace asio = boost::asio;

void resync();
void handle(const std::string& channel, const std::string& payload, int sender_pid);

asio::awaitable<void> snippet(pgpipe::async_client& client, pgpipe::pool_params params) {
  // @snippet
}
