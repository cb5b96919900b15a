// host_walk: see host_walk.hpp.
#include "pq/host_walk.hpp"

#include "pq/libpq_failure.hpp"

#include <libpq-fe.h>

#include <memory>
#include <optional>

namespace pgpipe::detail {

namespace {

// libpq's rule, on a classified failure (see walk_moves_on below).
bool moves_on_code(const std::error_code& ec, const diagnostics& diag) {
  if (ec == errc::auth_failed || ec == errc::bad_conninfo) return false;
  if (ec == make_sqlstate("57P03")) return true;
  return diag.message.empty();
}

bool moves_on(const connect_failure& f) { return moves_on_code(f.ec, f.diag); }

// libpq's list syntax: comma-separated, an empty entry means the default.
std::vector<std::string> split_list(const std::string& s) {
  std::vector<std::string> out;
  std::string cur;
  for (char c : s) {
    if (c == ',') {
      out.push_back(cur);
      cur.clear();
    } else {
      cur += c;
    }
  }
  out.push_back(cur);
  return out;
}

connect_attempt whole_string(const std::string& conninfo, const std::string& fallback) {
  connect_attempt a;
  a.keys = {"dbname", "fallback_application_name"};
  a.values = {conninfo, fallback};
  a.expand_dbname = true;
  return a;
}

}  // namespace

std::vector<connect_attempt> plan_host_walk(const std::string& conninfo, const std::string& fallback) {
  char* err = nullptr;
  std::unique_ptr<PQconninfoOption, decltype(&PQconninfoFree)> opts(PQconninfoParse(conninfo.c_str(), &err),
                                                                    &PQconninfoFree);
  if (err) PQfreemem(err);
  if (!opts) return {whole_string(conninfo, fallback)};

  // Every option the string set, in libpq's order (a map would lose nothing
  // but order, which libpq does not care about; keep it anyway for logs).
  std::vector<std::pair<std::string, std::string>> set;
  for (const PQconninfoOption* o = opts.get(); o->keyword; ++o)
    if (o->val) set.emplace_back(o->keyword, o->val);
  auto value_of = [&](const std::string& key) -> std::optional<std::string> {
    for (const auto& [k, v] : set)
      if (k == key) return v;
    return std::nullopt;
  };

  const auto host = value_of("host");
  const auto hostaddr = value_of("hostaddr");
  const std::vector<std::string> hosts = host ? split_list(*host) : std::vector<std::string>{};
  const std::vector<std::string> addrs = hostaddr ? split_list(*hostaddr) : std::vector<std::string>{};
  const std::size_t n = std::max(hosts.size(), addrs.size());
  if (n <= 1) return {whole_string(conninfo, fallback)};
  if (!hosts.empty() && !addrs.empty() && hosts.size() != addrs.size()) return {whole_string(conninfo, fallback)};
  const auto port = value_of("port");
  const std::vector<std::string> ports = port ? split_list(*port) : std::vector<std::string>{};
  if (ports.size() > 1 && ports.size() != n) return {whole_string(conninfo, fallback)};

  // prefer-standby: libpq tries every host for a standby first, then every
  // host again accepting any server.
  const auto tsa = value_of("target_session_attrs");
  std::vector<std::optional<std::string>> passes{tsa};
  if (tsa && *tsa == "prefer-standby") passes = {std::string("standby"), std::string("any")};

  std::vector<connect_attempt> out;
  for (const auto& pass : passes) {
    for (std::size_t i = 0; i < n; ++i) {
      connect_attempt a;
      for (const auto& [k, v] : set) {
        if (k == "host" || k == "hostaddr" || k == "port" || k == "target_session_attrs") continue;
        a.keys.push_back(k);
        a.values.push_back(v);
      }
      auto add = [&a](const char* key, const std::string& v) {
        if (v.empty()) return;  // empty entry: libpq's default
        a.keys.push_back(key);
        a.values.push_back(v);
      };
      const std::string h = i < hosts.size() ? hosts[i] : std::string();
      const std::string addr = i < addrs.size() ? addrs[i] : std::string();
      const std::string p = ports.empty() ? std::string() : ports.size() == 1 ? ports[0] : ports[i];
      add("host", h);
      add("hostaddr", addr);
      add("port", p);
      if (pass) add("target_session_attrs", *pass);
      if (!value_of("fallback_application_name")) add("fallback_application_name", fallback);
      a.where = "host " + (h.empty() ? addr.empty() ? std::string("(default)") : addr : h) +
                (p.empty() ? std::string() : " port " + p);
      out.push_back(std::move(a));
    }
  }
  return out;
}

// libpq's rule (PQconnectPoll): a host that is down, silent or of the wrong
// kind (target_session_attrs) sends the walk to the next one, and so does a
// server answering 57P03 ("cannot connect now": starting up, shutting down,
// in recovery without hot standby), since during a failover that is exactly
// the old primary or a standby not yet up, and the next host may be the
// promoted one. Any other error the server answered with (authentication,
// no such database or role, too many connections) ends the walk: the next
// host is most likely configured alike, and trying it with the same
// credentials would only multiply the failure.
PGconn* start_connect(const connect_attempt& a) {
  std::vector<const char*> keys, vals;
  for (std::size_t i = 0; i < a.keys.size(); ++i) {
    keys.push_back(a.keys[i].c_str());
    vals.push_back(a.values[i].c_str());
  }
  keys.push_back(nullptr);
  vals.push_back(nullptr);
  return PQconnectStartParams(keys.data(), vals.data(), a.expand_dbname ? 1 : 0);
}

bool walk_moves_on(std::string_view message) {
  const connect_failure f = classify_connect_failure(message, false, {});
  return moves_on(f);
}

std::string connect_timeout_text(std::chrono::milliseconds connect_timeout) {
  return "timeout expired after " + std::to_string(connect_timeout.count()) + " ms (connect_timeout)";
}

host_walk::host_walk(std::vector<connect_attempt> plan, std::size_t first)
    : plan_(std::move(plan)), index_(plan_.empty() ? 0 : first % plan_.size()) {
  if (plan_.empty()) plan_.push_back(connect_attempt{});  // PQconnectStartParams then names what is missing
}

walk_step host_walk::on_attempt_failed(std::string message, bool needs_password, bool timed_out) {
  connect_failure f = classify_connect_failure(message, needs_password, {});
  // On one line, as every caller's report and log shows it (libpq's text
  // ends in a newline and may span several).
  message = std::move(f.message);
  if (timed_out) f.ec = make_error_code(errc::server_unreachable);
  // One attempt carries the whole string: libpq's message (or the timeout)
  // is already the whole story.
  if (plan_.size() == 1) return ended(f.ec, std::move(message), std::move(f.diag));
  const connect_attempt& a = current();
  failures_.push_back(a.where.empty() ? message : a.where + ": " + message);
  last_ec_ = f.ec;
  last_diag_ = std::move(f.diag);
  ++tried_;
  if (!timed_out && !moves_on_code(last_ec_, last_diag_)) return give_up();
  if (tried_ < plan_.size()) {
    index_ = (index_ + 1) % plan_.size();
    return walk_step{.try_next = true, .ec = {}, .message = {}, .diag = {}};
  }
  std::string all = "every host failed: " + join();
  const std::error_code ec = classify_connect_error(all);  // before `all` moves
  return ended(ec, std::move(all), last_diag_);
}

walk_step host_walk::give_up() const {
  // Stopped by a server's answer, or by the caller: that failure's code.
  return ended(last_ec_ ? last_ec_ : make_error_code(errc::server_unreachable), join(), last_diag_);
}

std::string host_walk::join() const {
  std::string all;
  for (const auto& f : failures_) all += (all.empty() ? "" : "; ") + f;
  return all;
}

walk_step host_walk::ended(std::error_code ec, std::string message, diagnostics diag) const {
  diag.client_message = connect_error_text(message);
  return walk_step{.try_next = false, .ec = ec, .message = std::move(message), .diag = std::move(diag)};
}

}  // namespace pgpipe::detail
