// Calls async_query with a run-time number of text parameters (the --sql
// file decides how many). async_query takes its parameters as a template
// pack, so the count is dispatched here once, up to max_params.
#pragma once

#include <pgpipe/async_client.hpp>

#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace pgpipe::bench {

inline constexpr std::size_t max_params = 8;

template <class Target, class Token>
decltype(auto) async_query_n(Target& t, const pgpipe::query_options& o, const std::string& sql,
                             const std::vector<std::string>& a, Token&& token) {
  switch (a.size()) {
    case 0: return t.async_query(o, sql, std::forward<Token>(token));
    case 1: return t.async_query(o, sql, a[0], std::forward<Token>(token));
    case 2: return t.async_query(o, sql, a[0], a[1], std::forward<Token>(token));
    case 3: return t.async_query(o, sql, a[0], a[1], a[2], std::forward<Token>(token));
    case 4: return t.async_query(o, sql, a[0], a[1], a[2], a[3], std::forward<Token>(token));
    case 5: return t.async_query(o, sql, a[0], a[1], a[2], a[3], a[4], std::forward<Token>(token));
    case 6: return t.async_query(o, sql, a[0], a[1], a[2], a[3], a[4], a[5], std::forward<Token>(token));
    case 7: return t.async_query(o, sql, a[0], a[1], a[2], a[3], a[4], a[5], a[6], std::forward<Token>(token));
    case 8: return t.async_query(o, sql, a[0], a[1], a[2], a[3], a[4], a[5], a[6], a[7], std::forward<Token>(token));
    default: throw std::invalid_argument("at most 8 parameters");
  }
}

template <class Target, class Token>
decltype(auto) async_query_n(Target& t, const std::string& sql, const std::vector<std::string>& a, Token&& token) {
  return async_query_n(t, pgpipe::query_options{}, sql, a, std::forward<Token>(token));
}

}  // namespace pgpipe::bench
