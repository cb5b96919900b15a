// Kept for code that included it: the traits moved to the public header
// pgpipe/type_traits.hpp (text and binary formats, type-checked).
#pragma once

#include <pgpipe/type_traits.hpp>
