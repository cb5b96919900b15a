// Umbrella header: everything a pgpipe user needs, every public header of
// include/pgpipe/ (tests/snippets/umbrella_check.cmake fails when one is
// missing here). Needs every component (pgpipe::pgpipe).
#pragma once

// Shared by both drivers: errors, configuration, results, stats, types.
#include <pgpipe/array.hpp>
#include <pgpipe/composite.hpp>
#include <pgpipe/enums.hpp>
#include <pgpipe/error.hpp>
#include <pgpipe/logger.hpp>
#include <pgpipe/notification.hpp>
#include <pgpipe/pool_params.hpp>
#include <pgpipe/query_observer.hpp>
#include <pgpipe/range.hpp>
#include <pgpipe/read_routing.hpp>
#include <pgpipe/result.hpp>
#include <pgpipe/row_shape.hpp>
#include <pgpipe/stats.hpp>
#include <pgpipe/transaction_options.hpp>
#include <pgpipe/type_traits.hpp>
#include <pgpipe/typed_rows.hpp>
#include <pgpipe/types.hpp>

// The async driver.
#include <pgpipe/async_client.hpp>
#include <pgpipe/async_copy.hpp>
#include <pgpipe/async_lease.hpp>
#include <pgpipe/async_listener.hpp>
#include <pgpipe/async_read_router.hpp>
#include <pgpipe/async_row_stream.hpp>
#include <pgpipe/async_transaction_lease.hpp>
#include <pgpipe/async_typed_copy.hpp>
#include <pgpipe/async_typed_stream.hpp>
#include <pgpipe/query_options.hpp>
#include <pgpipe/transaction.hpp>
#include <pgpipe/with_diagnostics.hpp>

// The blocking driver.
#include <pgpipe/blocking_copy.hpp>
#include <pgpipe/blocking_executor.hpp>
#include <pgpipe/blocking_lease.hpp>
#include <pgpipe/blocking_listener.hpp>
#include <pgpipe/blocking_pool.hpp>
#include <pgpipe/blocking_read_router.hpp>
#include <pgpipe/blocking_row_stream.hpp>
#include <pgpipe/blocking_types.hpp>
#include <pgpipe/blocking_typed_copy.hpp>
#include <pgpipe/blocking_typed_stream.hpp>

// The SCRAM toolkit: <pgpipe/scram/*.hpp>.
#include <pgpipe/scram.hpp>
