// statement_cache: see statement_cache.hpp for the contract.
//
// Eviction scans from the least recently used end for an entry no request
// in flight names. With a pipeline depth far below the capacity (128 vs
// 1000 by default) the scan stops after a few entries.
#include "async/sansio/statement_cache.hpp"

namespace pgpipe::detail {

std::string hashed_text::joined() const {
  std::string s;
  s.reserve(text.size() + (types.empty() ? 0 : 1 + types.size()));
  s.append(text);
  if (!types.empty()) s.append(1, '\0').append(types);
  return s;
}

bool hashed_text::matches(std::string_view stored) const noexcept {
  if (types.empty()) return stored == text;
  return stored.size() == text.size() + 1 + types.size() && stored.substr(0, text.size()) == text &&
         stored[text.size()] == '\0' && stored.substr(text.size() + 1) == types;
}

std::size_t statement_cache::text_hash::operator()(const std::string& stored) const noexcept {
  const std::string_view s = stored;
  const auto nul = s.find('\0');
  if (nul == std::string_view::npos) return hashed_text::of(s, {});
  return hashed_text::of(s.substr(0, nul), s.substr(nul + 1));
}

const std::string* statement_cache::find(const hashed_text& sql) {
  auto it = map_.find(sql);
  if (it == map_.end()) return nullptr;
  lru_.splice(lru_.begin(), lru_, it->second.lru);
  return &it->second.name;
}

std::optional<std::string> statement_cache::evict() {
  for (auto l = lru_.rbegin(); l != lru_.rend(); ++l) {
    auto it = map_.find(*l);
    if (it == map_.end() || it->second.in_use != 0) continue;
    std::string name = std::move(it->second.name);
    lru_.erase(it->second.lru);
    map_.erase(it);
    return name;
  }
  return std::nullopt;
}

const std::string& statement_cache::add(const hashed_text& sql) {
  lru_.emplace_front(sql.joined());
  auto& e = map_[lru_.front()];
  e.name = "pgpipe_" + std::to_string(++next_);
  e.lru = lru_.begin();
  e.in_use = 0;
  return e.name;
}

bool statement_cache::forget(const hashed_text& sql, const std::string& name) {
  auto it = map_.find(sql);
  if (it == map_.end() || it->second.name != name) return false;
  lru_.erase(it->second.lru);
  map_.erase(it);
  return true;
}

void statement_cache::use(const hashed_text& sql, const std::string& name, int delta) {
  auto it = map_.find(sql);
  if (it == map_.end() || it->second.name != name) return;  // forgotten meanwhile
  if (delta < 0 && it->second.in_use == 0) return;
  it->second.in_use = static_cast<std::size_t>(static_cast<long long>(it->second.in_use) + delta);
}

}  // namespace pgpipe::detail
