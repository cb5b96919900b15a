// A pgpipe::result built client-side with libpq's PQmakeEmptyPGresult,
// PQsetResultAttrs and PQsetvalue: rows and columns of any type and format
// for unit tests, no server.
#pragma once

#include <pgpipe/result.hpp>

#include <libpq-fe.h>

#include <cstddef>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace pgpipe_test {

struct made_column {
  std::string name;
  pgpipe::type_oid type = pgpipe::oids::text;
  pgpipe::wire_format format = pgpipe::wire_format::text;
};

/// `rows` of cells (std::nullopt is NULL), one per column of `columns`.
inline pgpipe::result make_rows(const std::vector<made_column>& columns,
                                const std::vector<std::vector<std::optional<std::string>>>& rows) {
  PGresult* r = PQmakeEmptyPGresult(nullptr, PGRES_TUPLES_OK);
  std::vector<std::string> names;
  names.reserve(columns.size());
  std::vector<PGresAttDesc> attrs(columns.size());
  for (std::size_t i = 0; i < columns.size(); ++i) {
    names.push_back(columns[i].name);
    attrs[i] = PGresAttDesc{names.back().data(), 0, 0, static_cast<int>(columns[i].format), columns[i].type, -1, -1};
  }
  if (!PQsetResultAttrs(r, static_cast<int>(attrs.size()), attrs.data())) throw std::runtime_error("PQsetResultAttrs");
  for (std::size_t row = 0; row < rows.size(); ++row) {
    if (rows[row].size() != columns.size()) throw std::logic_error("make_rows: a row with the wrong cell count");
    for (std::size_t c = 0; c < columns.size(); ++c) {
      const auto& cell = rows[row][c];
      std::string v = cell.value_or("");
      const int ok = PQsetvalue(r, static_cast<int>(row), static_cast<int>(c), cell ? v.data() : nullptr,
                                cell ? static_cast<int>(v.size()) : -1);
      if (!ok) throw std::runtime_error("PQsetvalue");
    }
  }
  return pgpipe::result(r);
}

}  // namespace pgpipe_test
