// core/fmt_impl: fmt's compiled part, built once here instead of in every source (CI build time).
// The project compiles against fmt's headers without FMT_HEADER_ONLY: a source then calls fmt's non-template
// entry points (vformat, vprint, the float formatter) instead of generating them itself, which took GCC about 3 s
// of a 15 s CLI source (src/cli/cmd_plan.cpp at -O3, measured 2026-11-26). Linking Debian's libfmt.so would do
// the same but adds a shared object for the loader at every `strata` start (issue 11), so the definitions are
// compiled into strata_core from fmt's own implementation header, and the templates that fmt's headers declare
// but leave to its library are instantiated below for char (the only character type strata formats).
#include <fmt/format-inl.h>

FMT_BEGIN_NAMESPACE
namespace detail {
// format.h declares these `extern template` unless FMT_HEADER_ONLY: the locale-dependent separators that the
// number formatter asks for.
template auto thousands_sep_impl<char>(locale_ref) -> thousands_sep_result<char>;
template auto decimal_point_impl<char>(locale_ref) -> char;
}  // namespace detail
FMT_END_NAMESPACE
