// docs/using.md, typed COPY on an async lease: a coroutine holding a lease
// (async_acquire) and the rows to send; `consume` is the reader's.
namespace asio = boost::asio;

struct item {
  std::int64_t id = 0;
  std::string name;
  std::optional<std::string> note;
};
void consume(const item& row);

asio::awaitable<void> snippet(pgpipe::async_lease& lease, std::vector<item> items) {
  // @snippet
}
