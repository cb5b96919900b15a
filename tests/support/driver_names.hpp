// Names a typed test's instances after the driver (badinput/async,
// badinput/blocking): TYPED_TEST_SUITE's third argument.
#pragma once

#include <string>

namespace pgpipe::test {

struct driver_names {
  template <class D>
  static std::string GetName(int) {
    return D::name;
  }
};

}  // namespace pgpipe::test
