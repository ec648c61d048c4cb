// sched/lapack_xerbla: LAPACK's error handler for the statically linked reference LAPACK that COIN-OR's LU
// factorisation calls (dgetrf/dgetrs; see the COIN-OR block of CMakeLists.txt). The reference XERBLA prints with
// gfortran's I/O runtime; this one, in C++, keeps libgfortran out of `strata`. LAPACK documents XERBLA as the
// routine installers replace. It is only reached on an illegal argument, i.e. a bug: one line, exit 1.
#include <cstddef>
#include <cstdio>
#include <cstdlib>

extern "C" void xerbla_(const char* routine, const int* argument, std::size_t routine_len) {
  std::fflush(stdout);
  std::fprintf(stderr, "strata: internal error: LAPACK %.*s: argument %d had an illegal value\n",
               static_cast<int>(routine_len), routine, *argument);
  std::exit(1);
}
