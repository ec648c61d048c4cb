# cmake/Pch.cmake: precompiled headers for the build's heaviest common includes (CI time).
# Parsing nlohmann/json (2.2 s), fmt (1.1 s, then header-only; its compiled part is now src/core/fmt_impl.cpp) and
# the standard containers (0.9 s) took 5.5 s of the 8.8 s that GCC spent on a typical cost-model source
# (src/cost/estimate.cpp, -O3; measured with -fsyntax-only), and about 275 sources include them; template
# instantiation and code generation stay, so a source compiles 13-18 % faster with it (estimate.cpp 12.4 -> 10.7 s,
# plan/search.cpp 16.6 -> 14.4 s, a cost test 8.4 -> 6.9 s). One precompiled header per group of targets that
# share compile flags:
# the module libraries reuse strata_core's, the module tests reuse test_core's (the targets that link libtorch,
# whose definitions differ, build their own). A source stays correct without it (STRATA_PCH=OFF): every file
# still includes what it uses.
option(STRATA_PCH "Precompile the common system headers (nlohmann/json, fmt, the standard library)" ON)

set(STRATA_PCH_HEADERS
  <algorithm> <array> <cmath> <cstdint> <cstdio> <functional> <limits> <map> <memory> <optional> <set>
  <span> <stdexcept> <string> <string_view> <utility> <vector>
  <fmt/format.h> <nlohmann/json.hpp>)

# strata_pch(target [REUSE_FROM other] [EXTRA header...]): precompile STRATA_PCH_HEADERS (+ EXTRA) for target,
# or reuse another target's precompiled header (same flags and definitions required: clang refuses a mismatch).
function(strata_pch target)
  if(NOT STRATA_PCH)
    return()
  endif()
  cmake_parse_arguments(_pch "" "REUSE_FROM" "EXTRA" ${ARGN})
  if(_pch_REUSE_FROM)
    target_precompile_headers(${target} REUSE_FROM ${_pch_REUSE_FROM})
  else()
    target_precompile_headers(${target} PRIVATE ${STRATA_PCH_HEADERS} ${_pch_EXTRA})
  endif()
endfunction()
