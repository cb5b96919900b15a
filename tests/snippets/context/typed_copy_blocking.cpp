// docs/using.md, typed COPY on a blocking lease: the reader's row type and
// `consume`.
struct item {
  std::int64_t id = 0;
  std::string name;
  std::optional<std::string> note;
};
void consume(const item& row);

void snippet(pgpipe::blocking_pool& pool) {
  // @snippet
}
