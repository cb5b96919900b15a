// Umbrella header: everything a pgpipe user needs.
#pragma once

#include <pgpipe/error.hpp>
#include <pgpipe/logger.hpp>
#include <pgpipe/pool_params.hpp>
#include <pgpipe/stats.hpp>
#include <pgpipe/result.hpp>
#include <pgpipe/async_client.hpp>

// Written in parallel with the async driver; included once they exist.
#if __has_include(<pgpipe/blocking_pool.hpp>)
#include <pgpipe/blocking_pool.hpp>
#endif
#if __has_include(<pgpipe/blocking_executor.hpp>)
#include <pgpipe/blocking_executor.hpp>
#endif
#if __has_include(<pgpipe/scram.hpp>)
#include <pgpipe/scram.hpp>
#endif
