// PostgreSQL's names for SQLSTATE codes ("23514" -> "check_violation") and
// for their classes ("23" -> "Integrity Constraint Violation").
#pragma once

#include <string_view>

namespace pgpipe::detail {

/// The condition name PostgreSQL gives `sqlstate`, or "" for a code it does not define.
std::string_view sqlstate_name(std::string_view sqlstate) noexcept;
/// The name of the class (first two characters) of `sqlstate`, or "" when unknown.
std::string_view sqlstate_class_name(std::string_view sqlstate) noexcept;

}  // namespace pgpipe::detail
