// The one check a typed read makes before any row: does the result's
// metadata (column names and type OIDs) fit the C++ row type's fields?
// Template-free, so that every row type shares one compiled checker and its
// messages; pgpipe/row_shape.hpp describes a row type in these terms.
// Compiled in src/core/codec/row_shape_check.cpp. Users must not touch this.
#pragma once

#include <pgpipe/types.hpp>
#include <pgpipe/type_traits.hpp>

#include <cstddef>
#include <span>
#include <string>
#include <string_view>
#include <system_error>

namespace pgpipe::detail {

/// One column of a result, as the server described it.
struct column_desc {
  std::string_view name;
  type_oid type = 0;
  wire_format format = wire_format::text;
};

/// One field of a C++ row type.
struct member_desc {
  /// The field's name (described structs); empty when fields go by position.
  std::string_view name;
  /// Whether the field's C++ type may be read from a column of this type
  /// (std::optional unwrapped: NULL is a per-value matter).
  bool (*accepts)(type_oid);
  /// The field's C++ type, for messages.
  std::string (*cpp_name)();
};

/// Where one field's values come from, decided once per result.
struct member_column {
  int column = 0;
  type_oid type = 0;
  wire_format format = wire_format::text;
};

/// Matches `members` to `columns`: by name when `by_name`, else by position
/// (the counts must then be equal). Fills `out` (one entry per member) and
/// returns an empty code, or:
///   errc::columns_mismatch: a count that differs, a field without a column,
///     a column without a field, a column name given twice (by name) - every
///     such problem named in `message`;
///   errc::type_mismatch: the first field whose C++ type cannot be read from
///     its column, `message` naming the field, the column and both types.
/// `message` is left alone on success. out.size() must equal members.size().
std::error_code check_row_shape(std::span<const column_desc> columns, std::span<const member_desc> members,
                                bool by_name, std::span<member_column> out, std::string& message);

/// "field "name" (column 2 "name", type text, read as int64_t)": how a failed
/// value names where it came from; `row` < 0 leaves the row out.
std::string describe_member_value(const member_desc& member, std::size_t member_index, const column_desc& column,
                                  int column_index, long long row);

}  // namespace pgpipe::detail
