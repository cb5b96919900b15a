// connect_hooks: see connect_hooks.hpp.
#include "pq/connect_hooks.hpp"

#include "pq/libpq_failure.hpp"

#include <libpq-fe.h>

#include <algorithm>
#include <exception>
#include <memory>
#include <numeric>
#include <string_view>

namespace pgpipe::detail {

namespace {

std::vector<std::string> split_commas(std::string_view s) {
  std::vector<std::string> out;
  std::size_t from = 0;
  for (;;) {
    const std::size_t comma = s.find(',', from);
    out.emplace_back(s.substr(from, comma == std::string_view::npos ? std::string_view::npos : comma - from));
    if (comma == std::string_view::npos) return out;
    from = comma + 1;
  }
}

std::string join_commas(const std::vector<std::string>& parts, const std::vector<std::size_t>& order) {
  std::string out;
  for (std::size_t k = 0; k < order.size(); ++k) {
    if (k > 0) out += ',';
    out += parts[order[k]];
  }
  return out;
}

// A value as libpq's key=value syntax reads it back: single-quoted, with
// backslash and quote escaped.
void append_quoted(std::string& out, std::string_view v) {
  out += '\'';
  for (char c : v) {
    if (c == '\'' || c == '\\') out += '\\';
    out += c;
  }
  out += '\'';
}

struct options_deleter {
  void operator()(PQconninfoOption* o) const noexcept { PQconninfoFree(o); }
};

}  // namespace

connect_hooks connect_hooks_of(const pool_params& params) {
  return {params.before_connect, params.load_balance_hosts};
}

std::string with_hosts_shuffled(const std::string& conninfo, std::mt19937_64& rng) {
  std::unique_ptr<PQconninfoOption, options_deleter> opts(PQconninfoParse(conninfo.c_str(), nullptr));
  if (!opts) return conninfo;
  std::vector<std::string> host, hostaddr, port;
  for (PQconninfoOption* o = opts.get(); o->keyword != nullptr; ++o) {
    if (o->val == nullptr) continue;
    const std::string_view k = o->keyword;
    if (k == "host") host = split_commas(o->val);
    if (k == "hostaddr") hostaddr = split_commas(o->val);
    if (k == "port") port = split_commas(o->val);
  }
  const std::size_t n = std::max(host.size(), hostaddr.size());
  if (n <= 1) return conninfo;
  // libpq's rule: each list has one entry per host, or (port) one for all.
  if ((!host.empty() && host.size() != n) || (!hostaddr.empty() && hostaddr.size() != n) ||
      (port.size() > 1 && port.size() != n))
    return conninfo;
  std::vector<std::size_t> order(n);
  std::iota(order.begin(), order.end(), std::size_t{0});
  std::shuffle(order.begin(), order.end(), rng);
  std::string out;
  for (PQconninfoOption* o = opts.get(); o->keyword != nullptr; ++o) {
    if (o->val == nullptr) continue;
    const std::string_view k = o->keyword;
    std::string value = o->val;
    if (k == "host" && host.size() == n) value = join_commas(host, order);
    if (k == "hostaddr" && hostaddr.size() == n) value = join_commas(hostaddr, order);
    if (k == "port" && port.size() == n) value = join_commas(port, order);
    if (!out.empty()) out += ' ';
    out += k;
    out += '=';
    append_quoted(out, value);
  }
  return out;
}

connect_target prepare_connect(const connect_hooks& hooks, const std::string& conninfo,
                               const std::vector<std::string>& secrets) {
  connect_target t{conninfo, secrets, {}, {}};
  if (hooks.before_connect) {
    try {
      t.conninfo = hooks.before_connect(conninfo);
    } catch (const std::exception& e) {
      t.ec = make_error_code(errc::connect_failed);
      t.error_message = clean_message(std::string("pool_params::before_connect failed: ") + e.what(), secrets);
      return t;
    } catch (...) {
      t.ec = make_error_code(errc::connect_failed);
      t.error_message = "pool_params::before_connect failed (a non-standard exception)";
      return t;
    }
    for (std::string& s : passwords_of(t.conninfo)) t.secrets.push_back(std::move(s));
  }
  if (hooks.load_balance_hosts == load_balance::random) {
    thread_local std::mt19937_64 rng{std::random_device{}()};
    t.conninfo = with_hosts_shuffled(t.conninfo, rng);
  }
  return t;
}

}  // namespace pgpipe::detail
