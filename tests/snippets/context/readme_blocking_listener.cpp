// README.md, blocking listener: `resync` and `handle` are the reader's.
void resync();
void handle(const std::string& channel, const std::string& payload, int sender_pid);

void snippet(pgpipe::pool_params params) {
  // @snippet
}
