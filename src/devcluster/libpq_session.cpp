#include "devcluster/libpq_session.hpp"

#include <stdexcept>

namespace pgpipe::devcluster {
namespace {

struct pg_result_deleter {
  void operator()(PGresult* r) const noexcept { PQclear(r); }
};
using result_ptr = std::unique_ptr<PGresult, pg_result_deleter>;

}  // namespace

std::string quote_value(std::string_view v) {
  bool plain = !v.empty();
  for (char c : v) {
    if (c == ' ' || c == '\'' || c == '\\' || c == '\t' || c == '\n') plain = false;
  }
  if (plain) return std::string(v);
  std::string out = "'";
  for (char c : v) {
    if (c == '\'' || c == '\\') out.push_back('\\');
    out.push_back(c);
  }
  out.push_back('\'');
  return out;
}

std::string trim(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  return s;
}

conn_ptr connect_or_throw(const std::string& conninfo) {
  conn_ptr conn(PQconnectdb(conninfo.c_str()));
  if (!conn) throw std::runtime_error("devcluster: out of memory connecting");
  if (PQstatus(conn.get()) != CONNECTION_OK) {
    throw std::runtime_error("devcluster: connect failed: " + trim(PQerrorMessage(conn.get())));
  }
  return conn;
}

std::vector<std::vector<std::string>> run_query(PGconn* conn, std::string_view sql,
                                                const std::vector<std::string>& params) {
  // The protocol counts parameters in 16 bits.
  if (params.size() > 65535) throw std::runtime_error("devcluster: too many query parameters");
  std::string text(sql);
  std::vector<const char*> values;
  for (auto& p : params) values.push_back(p.c_str());
  // PQexec allows several statements (returns the last result); with
  // parameters the extended protocol is needed.
  PGresult* raw = params.empty() ? PQexec(conn, text.c_str())
                                 : PQexecParams(conn, text.c_str(), static_cast<int>(values.size()), nullptr,
                                                values.data(), nullptr, nullptr, 0);
  result_ptr res(raw);
  auto status = res ? PQresultStatus(res.get()) : PGRES_FATAL_ERROR;
  if (status != PGRES_TUPLES_OK && status != PGRES_COMMAND_OK) {
    std::string msg = res ? PQresultErrorMessage(res.get()) : "";
    if (msg.empty()) msg = PQerrorMessage(conn);
    std::string state;
    if (res) {
      if (const char* s = PQresultErrorField(res.get(), PG_DIAG_SQLSTATE)) state = s;
    }
    throw std::runtime_error("devcluster: query failed: " + trim(msg) + (state.empty() ? "" : " (SQLSTATE " + state + ")"));
  }
  std::vector<std::vector<std::string>> rows;
  const int nrows = PQntuples(res.get());
  const int ncols = PQnfields(res.get());
  rows.reserve(static_cast<std::size_t>(nrows));
  for (int r = 0; r < nrows; ++r) {
    std::vector<std::string> row;
    row.reserve(static_cast<std::size_t>(ncols));
    for (int c = 0; c < ncols; ++c) {
      row.emplace_back(PQgetisnull(res.get(), r, c) ? "" : PQgetvalue(res.get(), r, c));
    }
    rows.push_back(std::move(row));
  }
  return rows;
}

}  // namespace pgpipe::devcluster
