#include "preflight.hpp"

#include <pgpipe/error.hpp>

#include <libpq-fe.h>
#include <sys/stat.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <memory>
#include <sstream>
#include <stdexcept>

namespace pgpipe::bench {
namespace {

struct conn_deleter {
  void operator()(PGconn* c) const noexcept { PQfinish(c); }
};
struct result_deleter {
  void operator()(PGresult* r) const noexcept { PQclear(r); }
};
using conn_ptr = std::unique_ptr<PGconn, conn_deleter>;

std::string where(const std::string& conninfo) {
  return conninfo.empty() ? "from the environment" : redact_conninfo(conninfo);
}

std::string trim_newline(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  return s;
}

// connect_timeout first, the user's conninfo after it (expanded from dbname):
// a later keyword wins, so the user's own timeout, if any, is kept. Without
// one, a server that drops packets would hang the bench for minutes.
conn_ptr connect(const std::string& conninfo) {
  const char* keys[] = {"connect_timeout", "dbname", nullptr};
  const char* values[] = {"10", conninfo.empty() ? nullptr : conninfo.c_str(), nullptr};
  conn_ptr c(PQconnectdbParams(keys, values, 1));
  if (!c) throw std::runtime_error("cannot reach the server (" + where(conninfo) + "): out of memory");
  if (PQstatus(c.get()) != CONNECTION_OK) {
    // libpq's message names host, port and user, never the password; the
    // conninfo is redacted.
    throw std::runtime_error("cannot reach the server (" + where(conninfo) + "): " +
                             trim_newline(PQerrorMessage(c.get())));
  }
  return c;
}

}  // namespace

void check_sql_file(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) {
    const int e = errno;
    throw std::invalid_argument("--sql: '" + path + "' " +
                                (e == ENOENT ? std::string("does not exist") : "cannot be read: " + std::string(std::strerror(e))));
  }
  if (S_ISDIR(st.st_mode)) throw std::invalid_argument("--sql: '" + path + "' is a directory, not a SQL file");
  std::ifstream in(path);
  if (!in) {
    const int e = errno;
    throw std::invalid_argument("--sql: '" + path + "' cannot be read: " + std::strerror(e));
  }
  std::ostringstream text;
  text << in.rdbuf();
  if (text.str().find_first_not_of(" \t\r\n") == std::string::npos) {
    throw std::invalid_argument("--sql: '" + path + "' is empty (it needs one SQL statement; see --help)");
  }
}

void check_server(const std::string& conninfo) { connect(conninfo); }

void check_statement(const std::string& conninfo, const workload& w) {
  auto c = connect(conninfo);
  std::unique_ptr<PGresult, result_deleter> r(
      PQprepare(c.get(), "", w.sql.c_str(), static_cast<int>(w.params.size()), nullptr));
  if (PQresultStatus(r.get()) == PGRES_COMMAND_OK) return;
  const char* state = PQresultErrorField(r.get(), PG_DIAG_SQLSTATE);
  const char* primary = PQresultErrorField(r.get(), PG_DIAG_MESSAGE_PRIMARY);
  std::string what = state ? make_sqlstate(state).message() + ": " : std::string();
  what += primary ? primary : trim_newline(PQresultErrorMessage(r.get()));
  throw std::runtime_error("the server rejected the statement of " + w.name + ": " + what);
}

}  // namespace pgpipe::bench
