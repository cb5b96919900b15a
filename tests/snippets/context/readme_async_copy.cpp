// README.md, async COPY: a coroutine holding a lease (async_acquire), with the
// data to send; `consume` is the reader's.
namespace asio = boost::asio;

void consume(const std::string& rows);

asio::awaitable<void> snippet(pgpipe::async_lease& lease, std::vector<std::string> chunks) {
  // @snippet
}
