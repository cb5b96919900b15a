// The sizes of query parameters the server accepts, checked by both drivers
// before anything is sent (the async driver in check_params, the blocking
// one in check_text_params), with one wording.
//
// Why before sending: a value over the server's limit cannot succeed, and
// the server answers a message over its limit by closing the connection, so
// sending it would cost the session and report "connection lost" for a
// mistake in the arguments. Refused here, the request fails with
// errc::invalid_argument and the connection goes on serving.
#pragma once

#include <cstddef>
#include <string>

namespace pgpipe::detail {

/// The largest value the server can hold (its MaxAllocSize, 1 GiB - 1).
inline constexpr std::size_t max_param_bytes = (std::size_t{1} << 30) - 1;
/// The largest message the server reads (PQ_LARGE_MESSAGE_LIMIT): one Bind
/// carries every parameter of a query.
inline constexpr std::size_t max_message_bytes = max_param_bytes - 1;

/// The Bind message's size for `count` values of `value_bytes` bytes in all,
/// counted high: its header, the names and the format codes are allowed 256
/// bytes, and each value its 4-byte length and 2-byte format code.
constexpr std::size_t bind_message_bytes(std::size_t count, std::size_t value_bytes) noexcept {
  return value_bytes + 6 * count + 256;
}

inline std::string oversized_param_message(std::size_t one_based_index, std::size_t bytes) {
  return "parameter $" + std::to_string(one_based_index) + " is " + std::to_string(bytes) +
         " bytes; the server takes at most " + std::to_string(max_param_bytes) +
         " bytes in one value (1 GiB - 1); nothing was sent";
}

inline std::string oversized_params_total_message(std::size_t count, std::size_t value_bytes) {
  return "the " + std::to_string(count) + " parameters total " + std::to_string(value_bytes) +
         " bytes; they travel in one message, which the server takes up to " + std::to_string(max_message_bytes) +
         " bytes (1 GiB); nothing was sent";
}

/// The message of errc::invalid_argument for parameters of these sizes, or
/// an empty string when the server can take them. `size_of(i)` is the size of
/// value i (0-based; 0 for NULL).
template <class SizeOf>
std::string param_size_refusal(std::size_t count, SizeOf&& size_of) {
  std::size_t total = 0;
  for (std::size_t i = 0; i < count; ++i) {
    const std::size_t n = size_of(i);
    if (n > max_param_bytes) return oversized_param_message(i + 1, n);
    total += n;  // each at most 1 GiB: no overflow below 2^34 values
  }
  if (bind_message_bytes(count, total) > max_message_bytes) return oversized_params_total_message(count, total);
  return {};
}

}  // namespace pgpipe::detail
