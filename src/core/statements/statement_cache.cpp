// statement_cache: see statement_cache.hpp for the contract.
//
// Policy reasons:
//  - A full cache evicts rather than stops naming: an application with more
//    SQL texts than the capacity keeps its hot statements named, and server
//    memory stays bounded all the same. Eviction scans from the least
//    recently used end for an unpinned entry; with a pipeline depth far below
//    the capacity (128 vs 1000 by default) the scan stops after a few.
//  - The driver decides when it may drop (may_drop): the async core not
//    inside a chain it would split, the blocking driver not inside an aborted
//    transaction. Evicted and stale names wait in invalidated() until the
//    driver sends their drops, as pgx's stmtcache hands them back.
//  - A stale statement prepared by this very request is repaired too: a
//    migration can commit between a Parse and its Execute when they travel in
//    separate round trips (the blocking driver's), and where they share one
//    the refusal cannot happen, so the rule costs nothing there.
//  - 26000 for a statement this request just prepared, or 42P05 for a name
//    this connection never used before, is no migration: only another server
//    session explains it, and a re-run would meet the same.
#include "core/statements/statement_cache.hpp"

#include <utility>

namespace pgpipe::detail {

std::string statement_key::joined() const {
  std::string s;
  s.reserve(text.size() + (types.empty() ? 0 : 1 + types.size()));
  s.append(text);
  if (!types.empty()) s.append(1, '\0').append(types);
  return s;
}

bool statement_key::matches(std::string_view stored) const noexcept {
  if (types.empty()) return stored == text;
  return stored.size() == text.size() + 1 + types.size() && stored.substr(0, text.size()) == text &&
         stored[text.size()] == '\0' && stored.substr(text.size() + 1) == types;
}

bool is_stale_statement(std::string_view sqlstate, std::string_view primary) noexcept {
  return sqlstate == "26000" || (sqlstate == "0A000" && primary == "cached plan must not change result type");
}

bool is_pooler_symptom(std::string_view sqlstate) noexcept { return sqlstate == "26000" || sqlstate == "42P05"; }

std::size_t statement_cache::key_hash::operator()(const std::string& stored) const noexcept {
  const std::string_view s = stored;
  const auto nul = s.find('\0');
  if (nul == std::string_view::npos) return statement_key::of(s, {});
  return statement_key::of(s.substr(0, nul), s.substr(nul + 1));
}

const std::string* statement_cache::get(const statement_key& key) {
  if (!naming_) return nullptr;
  auto it = map_.find(key);
  if (it == map_.end()) return nullptr;
  lru_.splice(lru_.begin(), lru_, it->second.lru);
  return &it->second.name;
}

bool statement_cache::evict() {
  for (auto l = lru_.rbegin(); l != lru_.rend(); ++l) {
    auto it = map_.find(*l);
    if (it == map_.end() || it->second.in_use != 0) continue;
    invalidated_.push_back(std::move(it->second.name));
    lru_.erase(it->second.lru);
    map_.erase(it);
    return true;
  }
  return false;
}

const std::string* statement_cache::put(const statement_key& key, bool may_drop) {
  if (!naming_) return nullptr;
  if (map_.size() >= capacity_ && !(may_drop && evict())) return nullptr;
  lru_.emplace_front(key.joined());
  auto [it, fresh] = map_.try_emplace(lru_.front());
  if (!fresh) {  // a caller that did not ask get() first: keep the statement it has
    lru_.pop_front();
    return &it->second.name;
  }
  it->second.name = "pgpipe_" + std::to_string(++next_);
  it->second.lru = lru_.begin();
  return &it->second.name;
}

bool statement_cache::invalidate(const statement_key& key, const std::string& name, bool on_server) {
  auto it = map_.find(key);
  if (it == map_.end() || it->second.name != name) return false;
  if (on_server) invalidated_.push_back(std::move(it->second.name));
  lru_.erase(it->second.lru);
  map_.erase(it);
  return true;
}

statement_verdict statement_cache::judge(const statement_key& key, const std::string& name,
                                         const statement_failure& f) {
  if (name.empty()) return statement_verdict::error;
  if (f.carried_parse && is_pooler_symptom(f.sqlstate)) {
    // Which statements that other session has is unknown: none is dropped.
    invalidate(key, name, false);
    stop_naming();
    return statement_verdict::pooler_suspected;
  }
  if (f.at_parse) {
    invalidate(key, name, false);
    return statement_verdict::error;
  }
  if (!f.stale) return statement_verdict::error;  // an Execute that failed leaves its statement
  // 26000 says the server has no such statement; any other refusal that it
  // still holds the old one.
  invalidate(key, name, f.sqlstate != "26000");
  if (f.in_transaction || !f.caller_waits || f.repairs >= max_repairs) return statement_verdict::stale_error;
  return statement_verdict::rerun;
}

void statement_cache::use(const statement_key& key, const std::string& name, int delta) {
  auto it = map_.find(key);
  if (it == map_.end() || it->second.name != name) return;  // forgotten meanwhile
  if (delta < 0 && it->second.in_use == 0) return;
  it->second.in_use = static_cast<std::size_t>(static_cast<long long>(it->second.in_use) + delta);
}

bool statement_cache::stop_naming() noexcept { return std::exchange(naming_, false); }

}  // namespace pgpipe::detail
