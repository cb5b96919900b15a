// The shape check of typed reads (pgpipe/detail/row_shape_check.hpp).
//
// Why everything is reported at once for names: a query and a struct that
// drifted apart usually differ in more than one column, and a message that
// lists them all saves a round of edit-run-read.
// Why a column name given twice is an error by name: the server allows
// `select a.id, b.id`, and silently taking one of them would read the wrong
// value into the field.
#include <pgpipe/detail/row_shape_check.hpp>
#include <pgpipe/error.hpp>

#include <string>
#include <vector>

namespace pgpipe::detail {
namespace {

std::string quoted(std::string_view s) { return "\"" + std::string(s) + "\""; }

std::string member_label(const member_desc& m, std::size_t i) {
  return m.name.empty() ? "field " + std::to_string(i) : "field " + quoted(m.name);
}

std::string column_list(std::span<const column_desc> columns) {
  std::string s;
  for (std::size_t c = 0; c < columns.size(); ++c) {
    if (c) s += ", ";
    s += quoted(columns[c].name);
  }
  return s.empty() ? "none" : s;
}

}  // namespace

std::string describe_member_value(const member_desc& member, std::size_t member_index, const column_desc& column,
                                  int column_index, long long row) {
  std::string m = member_label(member, member_index) + " from column " + std::to_string(column_index) + " (" +
                  quoted(column.name) + ", type " + type_name_of(column.type) + ", read as " + member.cpp_name() + ")";
  if (row >= 0) m += " of row " + std::to_string(row);
  return m;
}

std::error_code check_row_shape(std::span<const column_desc> columns, std::span<const member_desc> members,
                                bool by_name, std::span<member_column> out, std::string& message) {
  if (!by_name) {
    if (columns.size() != members.size()) {
      message = "the result has " + std::to_string(columns.size()) + " column(s) (" + column_list(columns) +
                "), the row type has " + std::to_string(members.size()) + " field(s)";
      return make_error_code(errc::columns_mismatch);
    }
    for (std::size_t i = 0; i < members.size(); ++i) out[i].column = static_cast<int>(i);
  } else {
    std::string problems;
    auto add = [&](const std::string& p) {
      if (!problems.empty()) problems += "; ";
      problems += p;
    };
    std::vector<bool> used(columns.size(), false);
    for (std::size_t i = 0; i < members.size(); ++i) {
      int found = -1;
      for (std::size_t c = 0; c < columns.size(); ++c) {
        if (columns[c].name != members[i].name) continue;
        if (found >= 0) {
          add("column " + quoted(columns[c].name) + " appears more than once");
          break;
        }
        found = static_cast<int>(c);
      }
      if (found < 0) {
        add("no column for " + member_label(members[i], i));
        continue;
      }
      used[static_cast<std::size_t>(found)] = true;
      out[i].column = found;
    }
    for (std::size_t c = 0; c < columns.size(); ++c)
      if (!used[c]) add("column " + std::to_string(c) + " (" + quoted(columns[c].name) + ") has no field");
    if (!problems.empty()) {
      message = "the result's columns (" + column_list(columns) + ") do not match the row type: " + problems;
      return make_error_code(errc::columns_mismatch);
    }
  }
  for (std::size_t i = 0; i < members.size(); ++i) {
    const column_desc& col = columns[static_cast<std::size_t>(out[i].column)];
    if (!members[i].accepts(col.type)) {
      message = describe_member_value(members[i], i, col, out[i].column, -1) + ": the types do not match";
      return make_error_code(errc::type_mismatch);
    }
    out[i].type = col.type;
    out[i].format = col.format;
  }
  return {};
}

}  // namespace pgpipe::detail
