// copy_statement: what copy_in/copy_out of both drivers accept, decided from
// the text before anything is sent: exactly one statement, and a COPY.
//
// Why one: the blocking driver sends the COPY with the simple protocol,
// which runs every statement of the text, so `copy t from stdin; delete from
// t` would run the DELETE once the COPY ended; the async driver's extended
// protocol would refuse it only after sending. A statement other than COPY
// (a DELETE handed to copy_in by mistake) must not run either.
#pragma once

#include <string>
#include <string_view>

namespace pgpipe::detail {

/// Empty when `sql` is one COPY statement (a trailing semicolon, blanks and
/// comments allowed) with no NUL byte (sql_text.hpp); otherwise the message
/// of errc::invalid_argument.
std::string copy_statement_refusal(std::string_view sql);

}  // namespace pgpipe::detail
