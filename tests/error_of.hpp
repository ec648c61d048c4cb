// tests/error_of: the message of the core::InputError a call throws ("" when it throws none), for the tests of
// every module that check what bad input is told.
#pragma once
#include <string>

#include "strata/core/error.hpp"

namespace strata_test {

inline std::string error_of(auto&& fn) {
  try {
    fn();
  } catch (const strata::core::InputError& e) {
    return e.what();
  }
  return "";
}

}  // namespace strata_test
