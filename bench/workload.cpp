#include "workload.hpp"

#include <libpq-fe.h>

#include <charconv>
#include <cstdio>
#include <fstream>
#include <memory>
#include <sstream>
#include <stdexcept>

namespace pgpipe::bench {
namespace {

std::string trim(std::string s) {
  const auto b = s.find_first_not_of(" \t\r");
  if (b == std::string::npos) return {};
  const auto e = s.find_last_not_of(" \t\r");
  return s.substr(b, e - b + 1);
}

std::int64_t parse_int(const std::string& v, const std::string& where) {
  std::int64_t out = 0;
  auto [p, ec] = std::from_chars(v.data(), v.data() + v.size(), out);
  if (ec != std::errc{} || p != v.data() + v.size()) throw std::invalid_argument(where + ": '" + v + "' is not an integer");
  return out;
}

// "SP%06d" -> prefix "SP", width 6, suffix "". Only %d and %0Nd: anything
// richer would need a formatter pgbench cannot mirror in SQL.
void parse_format(param_spec& p, const std::string& fmt, const std::string& where) {
  const auto pct = fmt.find('%');
  if (pct == std::string::npos) throw std::invalid_argument(where + ": format '" + fmt + "' has no %d");
  auto pos = pct + 1;
  int width = 0;
  if (pos < fmt.size() && fmt[pos] == '0') {
    ++pos;
    while (pos < fmt.size() && fmt[pos] >= '0' && fmt[pos] <= '9') width = width * 10 + (fmt[pos++] - '0');
    if (width == 0 || width > 20) throw std::invalid_argument(where + ": bad width in '" + fmt + "'");
  }
  if (pos >= fmt.size() || fmt[pos] != 'd') throw std::invalid_argument(where + ": format must hold %d or %0Nd");
  p.prefix = fmt.substr(0, pct);
  p.suffix = fmt.substr(pos + 1);
  if (p.prefix.find('%') != std::string::npos || p.suffix.find('%') != std::string::npos) {
    throw std::invalid_argument(where + ": format holds more than one %");
  }
  p.width = width;
}

std::string sql_literal(const std::string& s) {
  std::string out = "'";
  for (char c : s) {
    if (c == '\'') out += '\'';
    out += c;
  }
  return out + "'";
}

struct pg_conn_deleter {
  void operator()(PGconn* c) const noexcept { PQfinish(c); }
};
struct pg_result_deleter {
  void operator()(PGresult* r) const noexcept { PQclear(r); }
};

}  // namespace

std::string format_key(const param_spec& p, std::int64_t n) {
  std::string digits = std::to_string(n);
  if (p.width > 0 && static_cast<int>(digits.size()) < p.width && n >= 0) {
    digits.insert(0, static_cast<std::size_t>(p.width) - digits.size(), '0');
  }
  return p.prefix + digits + p.suffix;
}

std::string draw(const param_spec& p, rng& r) {
  switch (p.what) {
    case param_spec::kind::integer:
      return std::to_string(std::uniform_int_distribution<std::int64_t>(p.lo, p.hi)(r));
    case param_spec::kind::pick:
      return p.choices[std::uniform_int_distribution<std::size_t>(0, p.choices.size() - 1)(r)];
    case param_spec::kind::format:
      return format_key(p, std::uniform_int_distribution<std::int64_t>(p.lo, p.hi)(r));
  }
  return {};
}

workload builtin_workload() {
  workload w = parse_workload(
      "-- param: format SP%06d 1 " + std::to_string(table_rows) + "\n"
      "select ten, so_luong from san_pham where ma = $1\n",
      "built-in");
  w.builtin = true;
  return w;
}

workload parse_workload(const std::string& text, const std::string& name) {
  workload w;
  w.name = name;
  std::istringstream in(text);
  std::string line;
  int number = 0;
  std::string sql;
  while (std::getline(in, line)) {
    ++number;
    const std::string t = trim(line);
    const std::string where = name + ":" + std::to_string(number);
    if (t.rfind("--", 0) == 0) {
      std::string body = trim(t.substr(2));
      if (body.rfind("param:", 0) != 0) continue;  // a plain comment
      std::istringstream words(body.substr(6));
      std::string kind;
      words >> kind;
      param_spec p;
      if (kind == "int") {
        std::string lo, hi;
        words >> lo >> hi;
        p.what = param_spec::kind::integer;
        p.lo = parse_int(lo, where);
        p.hi = parse_int(hi, where);
      } else if (kind == "format") {
        std::string fmt, lo, hi;
        words >> fmt >> lo >> hi;
        p.what = param_spec::kind::format;
        parse_format(p, fmt, where);
        p.lo = parse_int(lo, where);
        p.hi = parse_int(hi, where);
      } else if (kind == "pick") {
        std::string rest;
        std::getline(words, rest);
        p.what = param_spec::kind::pick;
        std::istringstream items(trim(rest));
        std::string item;
        while (std::getline(items, item, ',')) {
          item = trim(item);
          if (!item.empty()) p.choices.push_back(item);
        }
        if (p.choices.empty()) throw std::invalid_argument(where + ": pick needs a comma-separated list");
      } else {
        throw std::invalid_argument(where + ": unknown param kind '" + kind + "' (int, pick, format)");
      }
      if (p.what != param_spec::kind::pick && p.lo > p.hi) {
        throw std::invalid_argument(where + ": range is empty (" + std::to_string(p.lo) + " > " + std::to_string(p.hi) + ")");
      }
      std::string extra;
      if (p.what != param_spec::kind::pick && (words >> extra)) {
        throw std::invalid_argument(where + ": unexpected '" + extra + "'");
      }
      w.params.push_back(std::move(p));
    } else if (!t.empty()) {
      if (!sql.empty()) sql += '\n';
      sql += line;
    }
  }
  sql = trim(sql);
  while (!sql.empty() && (sql.back() == ';' || sql.back() == ' ' || sql.back() == '\n')) sql.pop_back();
  if (sql.empty()) throw std::invalid_argument(name + ": no SQL statement");
  if (sql.find(';') != std::string::npos) {
    throw std::invalid_argument(name + ": one statement only (a ';' was found before the end)");
  }
  // The drivers bind parameters through a fixed-size dispatch (async_query
  // takes them as a template pack).
  if (w.params.size() > 8) throw std::invalid_argument(name + ": at most 8 parameters are supported");
  w.sql = sql;
  return w;
}

workload load_workload_file(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw std::invalid_argument("--sql: cannot read '" + path + "'");
  std::ostringstream text;
  text << in.rdbuf();
  return parse_workload(text.str(), path);
}

std::string pgbench_script(const workload& w) {
  std::string script;
  std::vector<std::string> replacement;
  for (std::size_t i = 0; i < w.params.size(); ++i) {
    const auto& p = w.params[i];
    // Appends rather than "lit" + std::string: g++ 12 -O2 warns (-Wrestrict,
    // a false positive) on the latter.
    std::string var = "p";
    var += std::to_string(i + 1);
    switch (p.what) {
      case param_spec::kind::integer:
        script += "\\set " + var + " random(" + std::to_string(p.lo) + ", " + std::to_string(p.hi) + ")\n";
        replacement.push_back(":" + var);
        break;
      case param_spec::kind::pick: {
        script += "\\set " + var + " random(1, " + std::to_string(p.choices.size()) + ")\n";
        std::string arr = "(array[";
        for (std::size_t c = 0; c < p.choices.size(); ++c) {
          if (c != 0) arr += ',';
          arr += sql_literal(p.choices[c]);
        }
        replacement.push_back(arr + "]::text[])[:" + var + "]");
        break;
      }
      case param_spec::kind::format: {
        script += "\\set " + var + " random(" + std::to_string(p.lo) + ", " + std::to_string(p.hi) + ")\n";
        std::string expr = "(";
        expr += sql_literal(p.prefix);
        expr += " || ";
        expr += p.width > 0 ? "lpad(:" + var + "::text, " + std::to_string(p.width) + ", '0')" : ":" + var + "::text";
        if (!p.suffix.empty()) expr += " || " + sql_literal(p.suffix);
        replacement.push_back(expr + ")");
        break;
      }
    }
  }
  // Replace $N outside quoted literals and identifiers; longest numbers first
  // is implied by parsing the whole number.
  std::string sql;
  char quote = 0;
  for (std::size_t i = 0; i < w.sql.size(); ++i) {
    const char c = w.sql[i];
    if (quote) {
      sql += c;
      if (c == quote) quote = 0;
      continue;
    }
    if (c == '\'' || c == '"') {
      quote = c;
      sql += c;
      continue;
    }
    if (c == '$' && i + 1 < w.sql.size() && w.sql[i + 1] >= '1' && w.sql[i + 1] <= '9') {
      std::size_t j = i + 1;
      std::size_t n = 0;
      while (j < w.sql.size() && w.sql[j] >= '0' && w.sql[j] <= '9') n = n * 10 + static_cast<std::size_t>(w.sql[j++] - '0');
      if (n >= 1 && n <= replacement.size()) {
        sql += replacement[n - 1];
        i = j - 1;
        continue;
      }
    }
    sql += c;
  }
  // pgbench reads one SQL command per line unless it ends with ';'.
  for (auto& ch : sql) {
    if (ch == '\n') ch = ' ';
  }
  return script + sql + ";\n";
}

bool ensure_table(const std::string& conninfo) {
  std::unique_ptr<PGconn, pg_conn_deleter> conn(PQconnectdb(conninfo.c_str()));
  if (PQstatus(conn.get()) != CONNECTION_OK) {
    // libpq's messages name host and user, never the password.
    throw std::runtime_error(std::string("cannot connect to load the table: ") + PQerrorMessage(conn.get()));
  }
  auto run = [&](const char* sql) {
    std::unique_ptr<PGresult, pg_result_deleter> r(PQexec(conn.get(), sql));
    const auto st = PQresultStatus(r.get());
    if (st != PGRES_COMMAND_OK && st != PGRES_TUPLES_OK) {
      throw std::runtime_error(std::string("loading san_pham: ") + PQresultErrorMessage(r.get()));
    }
    return std::string(PQntuples(r.get()) > 0 ? PQgetvalue(r.get(), 0, 0) : "");
  };
  if (run("select to_regclass('san_pham') is not null") == "t") return false;
  // One transaction: a concurrent bench or an interrupted load never leaves a
  // half-filled table behind.
  run("begin");
  run("create table san_pham (ma text primary key, ten text, so_luong int)");
  const std::string insert =
      "insert into san_pham select 'SP' || lpad(i::text, 6, '0'), 'San pham ' || i, (i * 7919) % 1000 "
      "from generate_series(1, " + std::to_string(table_rows) + ") i";
  run(insert.c_str());
  run("commit");
  run("analyze san_pham");
  return true;
}

}  // namespace pgpipe::bench
