// Fixture for umbrella_check.cmake: misses missing.hpp and sub/not_in_sub.hpp,
// names gone.hpp, which does not exist.
#pragma once
#include <pgpipe/listed.hpp>
#include <pgpipe/sub.hpp>
#include <pgpipe/gone.hpp>
