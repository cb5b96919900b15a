// What a decoder can say about a failure beyond its error_code: a value
// made of values (a composite) knows which of its fields failed and why, and
// the error message should name it, but field_traits::decode returns only a
// code. The decoder leaves a note on its thread, keyed by the bytes it
// failed on; the code that turns the failure into a message takes the note
// for the same bytes (a note left by a failure nobody described is never
// attached to another value's message: its bytes differ).
// Users must not touch this.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <utility>

namespace pgpipe::detail {

struct value_note {
  const char* data = nullptr;
  std::size_t size = 0;
  std::string text;
};

inline value_note& thread_value_note() {
  thread_local value_note note;
  return note;
}

/// Records why decoding `bytes` failed (replacing any earlier note).
inline void leave_value_note(std::string_view bytes, std::string text) {
  auto& n = thread_value_note();
  n.data = bytes.data();
  n.size = bytes.size();
  n.text = std::move(text);
}

/// The note left for exactly `bytes`, removed; empty when there is none.
inline std::string take_value_note(std::string_view bytes) {
  auto& n = thread_value_note();
  if (n.text.empty() || n.data != bytes.data() || n.size != bytes.size()) return {};
  n.data = nullptr;
  n.size = 0;
  return std::exchange(n.text, {});
}

}  // namespace pgpipe::detail
