// Policy: refuse only what we can recognise for certain, never a statement
// that merely mentions a keyword. The lexer therefore knows PostgreSQL's
// quoting rules (strings with '' and E'\'' escapes, dollar quotes, quoted
// identifiers, nested block comments): a false positive would refuse a
// legitimate query, which is worse than the rare case that slips through
// (that one is caught after the fact by the transaction-status safety net, or
// is documented as the caller's business, e.g. a DO block).
//
// Cost on the hot path: the first token is lexed (six for START, SET,
// PREPARE, CREATE); the whole text is lexed only when it contains
// set_config, advisory_lock or (for SELECT/WITH)
// temp, found by a case-insensitive substring search.
#include "core/sql/shared_statement.hpp"

#include "core/sql/sql_lexer.hpp"

#include <array>
#include <cctype>
#include <vector>

namespace pgpipe::detail {
namespace {

using tok = sql_tok;
using token = sql_token;
using lexer = sql_lexer;

char lower(char c) { return sql_lower(c); }

// `needle` is lower case. Every statement on the hot path is searched for
// up to three needles: the first letter is tested before anything else.
bool icontains(std::string_view hay, std::string_view needle) {
  if (needle.size() > hay.size()) return false;
  const char first = needle[0];
  for (std::size_t i = 0, last = hay.size() - needle.size(); i <= last; ++i) {
    if (lower(hay[i]) != first) continue;
    std::size_t k = 1;
    while (k < needle.size() && lower(hay[i + k]) == needle[k]) ++k;
    if (k == needle.size()) return true;
  }
  return false;
}

// `needle` (lower case) holds an underscore at `underscore`: true when `hay`
// holds it, any case. Equivalent to icontains, found faster: matches can only
// sit around an underscore, which memchr (string_view::find) finds a vector at
// a time and most statements hold few of, where icontains tests every byte.
bool icontains_around_underscore(std::string_view hay, std::string_view needle, std::size_t underscore) {
  for (std::size_t at = hay.find('_', underscore); at != std::string_view::npos; at = hay.find('_', at + 1)) {
    const std::size_t from = at - underscore;
    if (hay.size() - from < needle.size()) return false;  // later underscores start later still
    std::size_t k = 0;
    while (k < needle.size() && lower(hay[from + k]) == needle[k]) ++k;
    if (k == needle.size()) return true;
  }
  return false;
}

// set_config( or a session advisory lock may be called somewhere in `sql`.
bool mentions_session_function(std::string_view sql) {
  return icontains_around_underscore(sql, "set_config", 3) || icontains_around_underscore(sql, "advisory_lock", 8);
}

std::string upper(std::string s) {
  for (auto& c : s) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return s;
}

bool is_word(const token& t, std::string_view w) { return is_sql_word(t, w); }
bool is_punct(const token& t, char c) { return is_sql_punct(t, c); }

// The refusals name their statement; their messages are made only when a
// caller asks (refusal_message): a lease checks every statement it sends
// for a session change and reads no message.
shared_refusal transaction_refusal(std::string statement) {
  return {errc::transaction_needs_lease, std::move(statement), {}};
}

shared_refusal session_refusal(std::string statement) {
  return {errc::session_state_needs_lease, std::move(statement), {}};
}

std::string refusal_message(const shared_refusal& r) {
  const std::string& statement = r.statement;
  if (r.code == errc::transaction_needs_lease) {
    return statement +
           " would open a transaction on a connection other callers share (their queries are pipelined "
           "behind it): run transactions on a lease (async_client::async_acquire) or with the transaction "
           "helper (pgpipe::async_transaction, <pgpipe/transaction.hpp>). Nothing was sent.";
  }
  if (statement == "COPY") {
    return "COPY cannot run on a connection other callers share (the COPY protocol would stall the queries "
           "pipelined behind it): run it on a lease of its own (async driver: async_lease::copy_in / copy_out; "
           "blocking driver: pgpipe::blocking_copy_in / blocking_copy_out on a blocking_lease). Nothing was sent.";
  }
  if (statement == "LISTEN" || statement == "UNLISTEN") {
    // A lease would not do either: its channels stay on a pooled connection
    // whose notifications nobody reads.
    return statement +
           " needs a connection that stays with its reader, not a shared one or a lease: use pgpipe::async_listener "
           "or pgpipe::blocking_listener, which hold their own. Behind a transaction pooler (PgBouncer pool_mode = "
           "transaction) no connection stays: point the listener at the server or at a session-mode pool. "
           "Nothing was sent.";
  }
  return statement +
         " changes the session of a connection other callers share: run it on a lease "
         "(async_client::async_acquire; SET LOCAL inside its transaction), or set it for every connection with "
         "pool_params::on_connect (search_path, TimeZone, statement_timeout, application_name). Nothing was sent.";
}

bool is_temp_word(const token& t) { return is_word(t, "temp") || is_word(t, "temporary"); }

// The statement's first keywords.
std::optional<shared_refusal> check_leading(const std::array<token, 6>& t) {
  const token& k = t[0];
  if (k.kind != tok::word) return std::nullopt;
  const std::string& w = k.text;
  if (w == "begin") return transaction_refusal("BEGIN");
  if (w == "start" && is_word(t[1], "transaction")) return transaction_refusal("START TRANSACTION");
  if (w == "set") {
    // Transaction-scoped forms end with the statement's implicit transaction.
    if (is_word(t[1], "local") || is_word(t[1], "transaction") || is_word(t[1], "constraints")) return std::nullopt;
    if (is_word(t[1], "role")) return session_refusal("SET ROLE");
    if (is_word(t[1], "session") && is_word(t[2], "authorization")) return session_refusal("SET SESSION AUTHORIZATION");
    if (is_word(t[1], "session") && is_word(t[2], "characteristics"))
      return session_refusal("SET SESSION CHARACTERISTICS");
    return session_refusal(is_word(t[1], "session") ? "SET SESSION" : "SET");
  }
  if (w == "prepare") return is_word(t[1], "transaction") ? std::nullopt : std::optional(session_refusal("PREPARE"));
  for (std::string_view s : {"reset", "listen", "unlisten", "deallocate", "discard", "declare", "load", "copy"})
    if (w == s) return session_refusal(upper(w));
  if (w == "create") {
    std::size_t i = 1;
    if (is_word(t[i], "or") && is_word(t[i + 1], "replace")) i += 2;
    if ((is_word(t[i], "local") || is_word(t[i], "global")) && is_temp_word(t[i + 1])) ++i;
    if (is_temp_word(t[i])) {
      const std::string what = t[i + 1].kind == tok::word ? " " + upper(t[i + 1].text) : "";
      return session_refusal("CREATE TEMP" + what);  // ON COMMIT DROP: see classify_shared_statement
    }
    if ((is_word(t[i], "table") || is_word(t[i], "view") || is_word(t[i], "sequence")) && i + 2 < t.size() &&
        is_word(t[i + 1], "pg_temp") && is_punct(t[i + 2], '.'))
      return session_refusal("CREATE " + upper(t[i].text) + " pg_temp.*");
  }
  return std::nullopt;
}

constexpr std::array<std::string_view, 4> session_lock_functions{
    "pg_advisory_lock", "pg_advisory_lock_shared", "pg_try_advisory_lock", "pg_try_advisory_lock_shared"};

// is_local (set_config's third argument) is provably true.
bool literal_true(const std::vector<token>& arg) {
  if (arg.empty()) return false;
  const token& a = arg[0];
  if (is_word(a, "true")) return true;
  if (a.kind != tok::string) return false;
  std::string v;
  for (char c : a.text) v.push_back(lower(c));
  return v == "t" || v == "true" || v == "on" || v == "yes" || v == "y" || v == "1";
}

// Calls anywhere in the statement: set_config(..., not true), session
// advisory locks; SELECT ... INTO TEMP.
std::optional<shared_refusal> check_body(std::string_view sql, bool select_like) {
  lexer lx(sql);
  std::vector<token> toks;
  for (token t = lx.next(); t.kind != tok::end; t = lx.next()) toks.push_back(std::move(t));
  for (std::size_t i = 0; i < toks.size(); ++i) {
    const token& t = toks[i];
    if (t.kind != tok::word) continue;
    const bool call = i + 1 < toks.size() && is_punct(toks[i + 1], '(');
    if (call && t.text == "set_config") {
      // Third top-level argument.
      int depth = 0;
      int commas = 0;
      std::vector<token> third;
      for (std::size_t j = i + 1; j < toks.size(); ++j) {
        const token& a = toks[j];
        if (is_punct(a, '(') || is_punct(a, '[')) {
          if (depth++ == 0) continue;
        } else if (is_punct(a, ')') || is_punct(a, ']')) {
          if (--depth == 0) break;
        } else if (depth == 1 && is_punct(a, ',')) {
          ++commas;
          continue;
        }
        if (depth >= 1 && commas == 2) third.push_back(a);
      }
      if (!literal_true(third)) return session_refusal("set_config(..., is_local => false)");
    }
    if (call) {
      for (auto f : session_lock_functions)
        if (t.text == f) return session_refusal(std::string(f) + "()");
    }
    if (select_like && t.text == "into" && i + 1 < toks.size()) {
      std::size_t k = i + 1;
      if ((is_word(toks[k], "local") || is_word(toks[k], "global")) && k + 1 < toks.size()) ++k;
      if (is_temp_word(toks[k])) return session_refusal("SELECT INTO TEMP");
    }
  }
  return std::nullopt;
}

// check_leading reads past the first word only for these: every other
// first word (SELECT, INSERT, UPDATE, ...) is decided by itself, so the
// common statement lexes one token, not six.
bool needs_followers(const token& first) {
  return first.kind == tok::word &&
         (first.text == "start" || first.text == "set" || first.text == "prepare" || first.text == "create");
}

}  // namespace

std::optional<shared_refusal> classify_shared_statement(std::string_view sql) {
  lexer lx(sql);
  std::array<token, 6> lead;
  lead[0] = lx.next();
  if (needs_followers(lead[0]))
    for (std::size_t i = 1; i < lead.size(); ++i) lead[i] = lx.next();
  if (auto r = check_leading(lead)) {
    // A temp table dropped at commit leaves nothing behind its transaction.
    if (r->statement.starts_with("CREATE TEMP") && icontains(sql, "on commit drop")) {
      lexer all(sql);
      token prev2, prev1;
      for (token t = all.next(); t.kind != tok::end; t = all.next()) {
        if (is_word(prev2, "on") && is_word(prev1, "commit") && is_word(t, "drop")) r->outlives_transaction = false;
        prev2 = std::move(prev1);
        prev1 = std::move(t);
      }
    }
    return r;
  }
  const bool select_like = is_word(lead[0], "select") || is_word(lead[0], "with");
  if (mentions_session_function(sql) || (select_like && icontains(sql, "temp")))
    return check_body(sql, select_like);
  return std::nullopt;
}

std::optional<shared_refusal> check_shared_statement(std::string_view sql) {
  auto r = classify_shared_statement(sql);
  if (r) r->message = refusal_message(*r);
  return r;
}

}  // namespace pgpipe::detail
