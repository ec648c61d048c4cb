# cmake/Python: finds Debian's python3 (Interpreter + Development.Module) and pybind11 for the Python module
# (python/, docs/python.md). Sets STRATA_PYTHON_FOUND; when found, the module libraries are compiled -fPIC so the
# extension (a shared object) can link them. Never fails the configure: without pybind11 or the Python headers
# the module and its tests are skipped with a message.
set(STRATA_PYTHON_FOUND OFF)
if(NOT STRATA_PYTHON)
  return()
endif()
if(STRATA_SANITIZE OR STRATA_FUZZ)
  # An instrumented extension cannot be loaded into the uninstrumented interpreter.
  message(STATUS "strata: Python module skipped (sanitizer/fuzz build)")
  return()
endif()
# `python3` on PATH may be a pyenv or venv shim; Debian's interpreter is the one python3-dev and pybind11-dev match.
if(NOT DEFINED Python3_EXECUTABLE AND EXISTS /usr/bin/python3)
  set(Python3_EXECUTABLE /usr/bin/python3)
endif()
find_package(Python3 COMPONENTS Interpreter Development.Module QUIET)
if(NOT Python3_FOUND)
  message(STATUS "strata: Python module skipped: python3 interpreter or headers not found (apt-get install python3-dev)")
  return()
endif()
find_package(pybind11 CONFIG QUIET)
if(NOT pybind11_FOUND)
  message(STATUS "strata: Python module skipped: pybind11 not found (apt-get install pybind11-dev)")
  return()
endif()
set(STRATA_PYTHON_FOUND ON)
message(STATUS "strata: Python module for ${Python3_EXECUTABLE} (${Python3_VERSION}), pybind11 ${pybind11_VERSION}")
set(CMAKE_POSITION_INDEPENDENT_CODE ON)
# -fPIC alone makes every exported function interposable, which stops GCC inlining across them; the executables
# link the same objects statically, so keep the -fPIE code generation.
include(CheckCXXCompilerFlag)
check_cxx_compiler_flag(-fno-semantic-interposition STRATA_HAS_NO_SEMANTIC_INTERPOSITION)
if(STRATA_HAS_NO_SEMANTIC_INTERPOSITION)
  add_compile_options(-fno-semantic-interposition)
endif()
