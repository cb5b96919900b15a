// statement_cache: the prepared-statement policy of one connection, for both
// drivers. libpq-free: a driver reports facts (the SQL key it runs, whether
// it may drop a statement now, a failure's SQLSTATE, whether the request
// carried its own Parse, whether a transaction block is open) and the cache
// answers verdicts (run under name X, prepare under name X, run unnamed;
// re-prepare and run again or fail) and the names the driver must drop from
// the server (invalidated(), then remove_invalidated() once sent).
//
// Contract (pinned by tests/unit/core/statements/statement_cache_test.cpp):
//  1. One naming scheme: "pgpipe_<n>", n counting from 1 per connection; a
//     name is never reused, so a DEALLOCATE of an old name never hits a newer
//     statement for the same SQL.
//  2. Bounded: at most capacity() names are cached. put() on a full cache
//     evicts the least recently used statement that nothing pins (in flight,
//     or a name handed to a user), and hands its name to invalidated(); when
//     the driver may not drop a statement now, or every statement is pinned,
//     put() answers null: run unnamed.
//  3. One stale test (is_stale_statement): 26000, or 0A000 "cached plan must
//     not change result type": the server refused the statement before it
//     executed anything.
//  4. One repair bound: a request re-runs for a stale statement at most
//     max_repairs times; never inside a transaction block (the error aborted
//     it), never when nobody waits for it. The stale statement is dropped
//     whether or not the request runs again, so the next use prepares it
//     afresh; its name goes to invalidated() unless the server said it has
//     none (26000).
//  5. Pooler detection: a request that carried its own Parse (this
//     connection made the name a moment ago) failing with 42P05 or 26000
//     means the server session changed under the connection (a transaction
//     pooler): naming stops for good (get/put answer null).
//  6. A failed Parse made no statement: it is forgotten, nothing to drop.
#pragma once

#include <cstdint>
#include <functional>
#include <list>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace pgpipe::detail {

/// A statement's identity: its SQL text, plus its parameter types' bytes when
/// it is prepared typed (the same text with other types is another
/// statement), with their hash. A driver looks a key up several times per
/// query: the hash is computed once, when the key is made, and both parts are
/// borrowed where the request holds them, never joined into a string per
/// query. Stored keys are `text`, or `text` NUL `types` (no SQL text holds a
/// NUL: libpq cannot send one).
struct statement_key {
  /// The empty text (its hash computed once per process).
  statement_key() noexcept : hash(empty_hash()) {}
  statement_key(std::string_view t) noexcept : statement_key(t, std::string_view()) {}  // NOLINT: like a string_view
  statement_key(const std::string& t) noexcept : statement_key(std::string_view(t)) {}  // NOLINT
  statement_key(const char* t) noexcept : statement_key(std::string_view(t)) {}  // NOLINT
  statement_key(std::string_view t, std::string_view type_bytes) noexcept
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

/// Names a connection keeps before it evicts: bounds server memory when an
/// application generates SQL. Both drivers' default.
inline constexpr std::size_t default_statement_capacity = 1000;

/// Contract 3: the server refused a cached named statement before executing
/// it. `primary` is the error's primary message (the 0A000 code alone also
/// covers unrelated refusals that a re-run would meet again).
bool is_stale_statement(std::string_view sqlstate, std::string_view primary) noexcept;

/// Contract 5: the two SQLSTATEs a transaction pooler causes for named
/// statements (26000 invalid_sql_statement_name, 42P05 duplicate_prepared_statement).
bool is_pooler_symptom(std::string_view sqlstate) noexcept;

/// What a driver knows about a failed named request.
struct statement_failure {
  std::string_view sqlstate;
  bool stale = false;            ///< is_stale_statement() of the error
  bool at_parse = false;         ///< the Parse itself failed
  bool carried_parse = false;    ///< this request prepared the statement it ran
  bool in_transaction = false;   ///< a transaction block (or a chain run as one) was open: the error aborted it
  bool caller_waits = true;      ///< someone still waits for the outcome
  unsigned repairs = 0;          ///< re-runs of this request for a stale statement so far
};

enum class statement_verdict : unsigned char {
  error,             ///< an ordinary error: the caller sees it
  pooler_suspected,  ///< contract 5: naming stopped; the caller sees the error, told why
  rerun,             ///< contract 4: the stale statement is dropped; prepare again and run again
  stale_error,       ///< contract 4: the stale statement is dropped; the caller sees the error
};

class statement_cache {
 public:
  /// Contract 4: enough for a migration of a few statements in a row
  /// (ADD COLUMN, then ALTER TYPE), and a bound when a plan keeps changing.
  static constexpr unsigned max_repairs = 3;

  explicit statement_cache(std::size_t capacity = default_statement_capacity) : capacity_(capacity) {}

  /// Get: the name for `key` if the server has it (marks it most recently
  /// used); null when there is none or naming stopped.
  const std::string* get(const statement_key& key);
  /// Put: a new name for `key`, which the caller prepares with its first use
  /// (it must not be cached: get() answered null). On a full cache, evicts
  /// (contract 2) when `may_drop` says the driver can drop a statement now.
  /// Null: run unnamed.
  const std::string* put(const statement_key& key, bool may_drop);
  /// Invalidate: the server no longer has, or must no longer use, `name` for
  /// `key`; when `on_server`, its name goes to invalidated(). False (and
  /// nothing done) when `key` maps to another name by then (a second failure
  /// reported for a statement already replaced).
  bool invalidate(const statement_key& key, const std::string& name, bool on_server);
  /// The verdict on a failed request that ran `name` for `key` (contracts
  /// 4, 5, 6), with its effect on the cache already applied.
  statement_verdict judge(const statement_key& key, const std::string& name, const statement_failure& f);

  /// GetInvalidated: names to drop from the server (DEALLOCATE or Close), in
  /// the order they left the cache.
  const std::vector<std::string>& invalidated() const noexcept { return invalidated_; }
  /// RemoveInvalidated: the driver has sent the drops of invalidated().
  void remove_invalidated() noexcept { invalidated_.clear(); }

  /// Pins (delta +1) or unpins (-1) the statement against eviction: a
  /// request in flight names it, or a user holds its name.
  void use(const statement_key& key, const std::string& name, int delta);

  /// Contract 5: no name from now on. True the first time (log it then).
  bool stop_naming() noexcept;
  bool naming() const noexcept { return naming_; }

  std::size_t size() const noexcept { return map_.size(); }
  std::size_t capacity() const noexcept { return capacity_; }
  bool contains(const statement_key& key) const { return map_.find(key) != map_.end(); }

 private:
  struct entry {
    std::string name;
    std::list<std::string>::iterator lru;  ///< position in lru_ (front = most recent)
    std::size_t in_use = 0;
  };
  // Looked up by the request's borrowed key with its hash: transparent hash
  // and equality, so no key string is built and no text hashed per lookup.
  struct key_hash {
    using is_transparent = void;
    std::size_t operator()(const std::string& stored) const noexcept;
    std::size_t operator()(const statement_key& k) const noexcept { return k.hash; }
  };
  struct key_equal {
    using is_transparent = void;
    bool operator()(const std::string& a, const std::string& b) const noexcept { return a == b; }
    bool operator()(const statement_key& a, const std::string& b) const noexcept { return a.matches(b); }
    bool operator()(const std::string& a, const statement_key& b) const noexcept { return b.matches(a); }
  };
  /// Drops the least recently used unpinned statement into invalidated_.
  bool evict();

  std::size_t capacity_;
  std::uint64_t next_ = 0;
  bool naming_ = true;
  std::unordered_map<std::string, entry, key_hash, key_equal> map_;
  std::list<std::string> lru_;  ///< stored keys, most recently used first
  std::vector<std::string> invalidated_;
};

}  // namespace pgpipe::detail
