// statement_cache: which SQL texts have a named prepared statement on one
// connection's server session. libpq-free; owned by pipeline_core.
//
// Contract:
//  - Bounded: at most `capacity` names exist on the server at once, counting
//    names evicted but whose DEALLOCATE has not been sent yet (the caller
//    sends it at once: evict() hands the name back).
//  - Least recently used first out, but never a statement that a request in
//    flight still names (`in_use`): deallocating it would make that request
//    fail with 26000.
//  - A name is never reused, so a DEALLOCATE of an old name can never hit a
//    newer statement for the same SQL.
//  - forget(sql, name) is a no-op when `sql` maps to another name by then (a
//    second failure reported for a statement already replaced).
#pragma once

#include <cstdint>
#include <functional>
#include <list>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>

namespace pgpipe::detail {

class statement_cache {
 public:
  explicit statement_cache(std::size_t capacity) : capacity_(capacity) {}

  /// The name for `sql` if the server has it; marks it most recently used.
  const std::string* find(std::string_view sql);
  /// Room for one more name without evicting.
  bool has_room() const noexcept { return map_.size() < capacity_; }
  /// Drops the least recently used statement not in use; returns its name
  /// (the caller deallocates it), or nothing when every statement is in use.
  std::optional<std::string> evict();
  /// Records a new statement for `sql`; requires has_room().
  const std::string& add(std::string_view sql);
  /// The server no longer has (or must no longer use) `name` for `sql`.
  /// Returns whether the cache still had it.
  bool forget(std::string_view sql, const std::string& name);
  /// In-flight requests naming the statement (they pin it against eviction).
  void use(std::string_view sql, const std::string& name, int delta);

  std::size_t size() const noexcept { return map_.size(); }
  std::size_t capacity() const noexcept { return capacity_; }
  bool contains(std::string_view sql) const { return map_.find(sql) != map_.end(); }

 private:
  struct entry {
    std::string name;
    std::list<std::string>::iterator lru;  ///< position in lru_ (front = most recent)
    std::size_t in_use = 0;
  };
  // Looked up by the request's borrowed text (string_view) per query, so no
  // key string is built per query: transparent hash and equality.
  struct text_hash {
    using is_transparent = void;
    std::size_t operator()(std::string_view s) const noexcept { return std::hash<std::string_view>{}(s); }
  };
  std::size_t capacity_;
  std::uint64_t next_ = 0;
  std::unordered_map<std::string, entry, text_hash, std::equal_to<>> map_;
  std::list<std::string> lru_;  ///< SQL texts, most recently used first
};

}  // namespace pgpipe::detail
