// Which read-only-marked statements may share a Sync with their neighbours
// (pool_params::read_batch_max). libpq-free, so it is unit-tested alone.
//
// A coalesced batch is one implicit transaction: a neighbour's error rolls
// back what the statements before it did, after their callers were told they
// succeeded. The batch runs only on a read-only session, where the server
// refuses writes (25006) before they happen; what a read-only transaction
// still allows, and a rollback would undo or a neighbour would see, is kept
// out here:
//  - SET / SET LOCAL / SET TRANSACTION as the first statement of a batch can
//    make the whole transaction read-write (no snapshot is taken yet);
//  - set_config(..., true) changes settings for the neighbours after it;
//  - NOTIFY / pg_notify are delivered at commit: a rollback would drop a
//    notification reported as sent.
// The rule is positive and lexical: the statement starts with SELECT, WITH,
// VALUES or TABLE (after blanks and opening parentheses) and nowhere
// mentions set_config or pg_notify, in any case, even in a string or a
// comment (a false alarm only costs that request its own Sync). Spellings a
// text check cannot read are refused whole: a Unicode-escaped identifier
// (U&"..."), SQL run from a string (query_to_xml) and dblink.
//
// What it cannot promise: it reads the statement, not the bodies of the
// functions the statement calls. A function that calls set_config(..., true),
// runs SET LOCAL or NOTIFY, writes a temporary table or acts outside the
// transaction passes, and a neighbour's error would roll back its effect
// after its caller was told it succeeded. The read-only marker is the
// caller's promise that no function it calls does any of that
// (docs/reliability.md, "Sync coalescing").
#pragma once

#include <string_view>

namespace pgpipe::detail {

bool may_share_sync(std::string_view sql) noexcept;

}  // namespace pgpipe::detail
