// A block of statements, run as the body of a function with no parameters.
void snippet() {
  // @snippet
}
