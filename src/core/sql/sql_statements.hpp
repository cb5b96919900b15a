// sql_statements: the statements a text holds, split where the server's
// simple-query protocol splits them: at semicolons outside string literals,
// quoted identifiers and comments (sql_lexer). Empty statements (";;", a
// trailing ";") are not statements. Sans-IO, a pure function.
//
// Used to refuse a second statement where a driver promises one (COPY on a
// blocking lease), and to find the statement whose command tag a simple
// query reports (the last one).
//
// Not understood: a semicolon inside a SQL-standard function body
// (CREATE FUNCTION ... BEGIN ATOMIC ...; END) counts as a boundary, so such a
// text counts as more than one statement.
#pragma once

#include <string_view>
#include <vector>

namespace pgpipe::detail {

/// Each statement's text, from its first token to its last (blanks,
/// comments and the semicolon left out), in order.
std::vector<std::string_view> sql_statements(std::string_view sql);

}  // namespace pgpipe::detail
