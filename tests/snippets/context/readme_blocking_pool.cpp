// README.md, "Blocking driver": statements on a thread that may block.
void snippet(const std::string& key) {
  // @snippet
}
