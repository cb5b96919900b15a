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

/// A statement's identity in the cache: its SQL text, plus its parameter
/// types' bytes when it is prepared typed (the same text with other types is
/// another statement), with their hash. A query looks its key up several
/// times (find at its send, use when it is named and when it is done): the
/// request computes the hash once (sql_key) and every lookup reuses it, and
/// the two parts are borrowed where the request holds them, never joined
/// into a string per query. Stored keys are `text`, or `text` NUL `types`
/// (no SQL text holds a NUL: libpq cannot send one).
struct hashed_text {
  /// The empty text (its hash computed once per process).
  hashed_text() noexcept : hash(empty_hash()) {}
  hashed_text(std::string_view t) noexcept : hashed_text(t, std::string_view()) {}  // NOLINT: like a string_view
  hashed_text(const std::string& t) noexcept : hashed_text(std::string_view(t)) {}  // NOLINT
  hashed_text(const char* t) noexcept : hashed_text(std::string_view(t)) {}  // NOLINT
  hashed_text(std::string_view t, std::string_view type_bytes) noexcept
      : text(t), types(type_bytes), hash(of(t, type_bytes)) {}
  std::string_view text;
  std::string_view types;  ///< empty: untyped
  std::size_t hash;
  /// The hash of a key given in parts; stored keys hash the same (split at their NUL).
  static std::size_t of(std::string_view text, std::string_view types) noexcept {
    std::size_t h = std::hash<std::string_view>{}(text);
    if (!types.empty()) h ^= std::hash<std::string_view>{}(types) + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2);
    return h;
  }
  static std::size_t empty_hash() noexcept {
    static const std::size_t h = of(std::string_view(), std::string_view());
    return h;
  }
  /// The stored form of this key.
  std::string joined() const;
  /// Whether `stored` is this key's stored form.
  bool matches(std::string_view stored) const noexcept;
};

class statement_cache {
 public:
  explicit statement_cache(std::size_t capacity) : capacity_(capacity) {}

  /// The name for `sql` if the server has it; marks it most recently used.
  const std::string* find(const hashed_text& sql);
  /// Room for one more name without evicting.
  bool has_room() const noexcept { return map_.size() < capacity_; }
  /// Drops the least recently used statement not in use; returns its name
  /// (the caller deallocates it), or nothing when every statement is in use.
  std::optional<std::string> evict();
  /// Records a new statement for `sql`; requires has_room().
  const std::string& add(const hashed_text& sql);
  /// The server no longer has (or must no longer use) `name` for `sql`.
  /// Returns whether the cache still had it.
  bool forget(const hashed_text& sql, const std::string& name);
  /// In-flight requests naming the statement (they pin it against eviction).
  void use(const hashed_text& sql, const std::string& name, int delta);

  std::size_t size() const noexcept { return map_.size(); }
  std::size_t capacity() const noexcept { return capacity_; }
  bool contains(const hashed_text& sql) const { return map_.find(sql) != map_.end(); }

 private:
  struct entry {
    std::string name;
    std::list<std::string>::iterator lru;  ///< position in lru_ (front = most recent)
    std::size_t in_use = 0;
  };
  // Looked up by the request's borrowed text with its hash (hashed_text), so
  // no key string is built and no text is hashed again per lookup:
  // transparent hash and equality.
  struct text_hash {
    using is_transparent = void;
    std::size_t operator()(const std::string& stored) const noexcept;
    std::size_t operator()(const hashed_text& k) const noexcept { return k.hash; }
  };
  struct text_equal {
    using is_transparent = void;
    bool operator()(const std::string& a, const std::string& b) const noexcept { return a == b; }
    bool operator()(const hashed_text& a, const std::string& b) const noexcept { return a.matches(b); }
    bool operator()(const std::string& a, const hashed_text& b) const noexcept { return b.matches(a); }
  };
  std::size_t capacity_;
  std::uint64_t next_ = 0;
  std::unordered_map<std::string, entry, text_hash, text_equal> map_;
  std::list<std::string> lru_;  ///< SQL texts, most recently used first
};

}  // namespace pgpipe::detail
