// Every options struct of the public API can be written as a designated
// initializer naming only the fields a reader sets, warning-free under
// -Wextra -Werror (built by tests/snippets/snippets.cmake like the docs'
// blocks). g++ warns (-Wmissing-field-initializers) about each omitted member
// that has no default member initializer, so every member needs one.
#include <pgpipe/async_client.hpp>
#include <pgpipe/pool_params.hpp>
#include <pgpipe/query_options.hpp>
#include <pgpipe/read_routing.hpp>

#include <chrono>

namespace {

[[maybe_unused]] pgpipe::pool_params params() { return {.conninfo = "host=db", .max_size = 4}; }
[[maybe_unused]] pgpipe::pool_params empty_params() { return {.max_size = 4}; }
[[maybe_unused]] pgpipe::query_options read_only() { return {.read_only = true}; }
[[maybe_unused]] pgpipe::query_options timeout() { return {.timeout = std::chrono::seconds(1)}; }
[[maybe_unused]] pgpipe::read_routing_params routing() { return {.max_lag = std::chrono::seconds(5)}; }
[[maybe_unused]] pgpipe::read_routing_params names() { return {.replica_names = {"db2"}}; }
[[maybe_unused]] pgpipe::async_client_options loops() { return {.loops = 2}; }

}  // namespace
