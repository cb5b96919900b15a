// The header's name before the naming rule (docs/api-guide.md, "Names"):
// include <pgpipe/async_row_stream.hpp>. Kept for one release, with the type's old
// name as a deprecated alias there.
#pragma once

#include <pgpipe/async_row_stream.hpp>
