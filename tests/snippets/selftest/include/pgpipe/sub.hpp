#pragma once
#include <pgpipe/sub/in_sub.hpp>
