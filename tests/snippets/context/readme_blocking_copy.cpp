// README.md, blocking COPY: `consume` is the reader's.
void consume(const std::string& row);

void snippet(pgpipe::blocking_pool& pool) {
  // @snippet
}
