// Umbrella header: everything a pgpipe user needs.
#pragma once

#include <pgpipe/error.hpp>
#include <pgpipe/logger.hpp>
#include <pgpipe/pool_params.hpp>
#include <pgpipe/stats.hpp>
#include <pgpipe/result.hpp>
#include <pgpipe/async_client.hpp>
#include <pgpipe/async_lease.hpp>
#include <pgpipe/row_stream.hpp>
#include <pgpipe/transaction.hpp>
#include <pgpipe/blocking_pool.hpp>
#include <pgpipe/blocking_copy.hpp>
#include <pgpipe/blocking_executor.hpp>
#include <pgpipe/scram.hpp>
#include <pgpipe/read_router.hpp>
#include <pgpipe/blocking_read_router.hpp>
#include <pgpipe/query_observer.hpp>
#include <pgpipe/blocking_listener.hpp>
