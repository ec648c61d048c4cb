// tests/cost/test_nccl_tests: nccl-tests text output (examples/nccl-tests/, the tool's column layout) parsed into
// timings and fitted to α + β·bytes; malformed input is an InputError naming the line.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <sstream>

#include "helpers.hpp"
#include "strata/cost/nccl_tests.hpp"

using namespace strata;
using namespace strata::cost;

namespace {

std::string read_example(const std::string& name) {
  std::ifstream in(std::string(STRATA_SOURCE_DIR) + "/examples/nccl-tests/" + name);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

const char* kHeader =
    "# nThread 1 nGpus 4 minBytes 8 maxBytes 1024 step: 2(factor) warmup iters: 5 iters: 20\n"
    "#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong\n"
    "#        (B)    (elements)                               (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)\n";

}  // namespace

TEST(NcclTests, ParsesTheExampleRuns) {
  const auto ar = parse_nccl_tests(read_example("all_reduce_perf_2x_dgx-a100.txt"), "ar.txt");
  EXPECT_EQ(ar.test, "all_reduce_perf");
  EXPECT_EQ(ar.op, Collective::allreduce);
  EXPECT_EQ(ar.ranks, 16);  // 16 "Rank" lines (one process per GPU)
  ASSERT_EQ(ar.rows.size(), 28u);  // 8 B .. 1 GiB, doubling
  EXPECT_DOUBLE_EQ(ar.rows.front().bytes, 8);
  EXPECT_NEAR(ar.rows.front().time_s, 39.13e-6, 1e-12);  // out-of-place column
  EXPECT_DOUBLE_EQ(ar.rows.back().bytes, 1073741824);
  const auto fit = fit_nccl_tests(ar);
  EXPECT_EQ(fit.group_size, 16);
  // The sample's large sizes run at ~98.7 GB/s algorithm bandwidth: β ≈ 1/98.7e9 s/B, α tens of µs.
  EXPECT_NEAR(1.0 / fit.beta_s_per_byte, 98.7e9, 3e9);
  EXPECT_GT(fit.alpha_s, 0);
  EXPECT_LT(fit.alpha_s, 200e-6);
  const auto sr = parse_nccl_tests(read_example("sendrecv_perf_2x_dgx-a100.txt"), "sr.txt");
  EXPECT_EQ(sr.op, Collective::p2p);
  EXPECT_EQ(fit_nccl_tests(sr).group_size, 2);
  EXPECT_EQ(parse_nccl_tests(read_example("all_gather_perf_2x_dgx-a100.txt"), "ag.txt").op, Collective::allgather);
  EXPECT_EQ(parse_nccl_tests(read_example("reduce_scatter_perf_2x_dgx-a100.txt"), "rs.txt").op,
            Collective::reduce_scatter);
}

TEST(NcclTests, FitRecoversAlphaBetaOfExactRows) {
  // time = 20 µs + bytes / 10 GB/s, single-process run of 4 GPUs (nThread 1 nGpus 4), test named by the caller.
  std::string text = kHeader;
  for (double b : {1024.0, 1048576.0, 1073741824.0})
    text += fmt::format("{:12.0f} {:12.0f} float sum -1 {:.4f} 0 0 0 {:.4f} 0 0 0\n", b, b / 4, 20 + b / 1e4,
                        20 + b / 1e4);
  const auto run = parse_nccl_tests(text, "x.txt", "all_gather_perf");
  EXPECT_EQ(run.ranks, 4);
  const auto fit = fit_nccl_tests(run);
  EXPECT_NEAR(fit.alpha_s, 20e-6, 1e-9);
  EXPECT_NEAR(fit.beta_s_per_byte, 1e-10, 1e-15);
}

TEST(NcclTests, MalformedInputIsAnInputErrorNamingTheLine) {
  const std::string h = kHeader;
  EXPECT_NE(cost_test::error_of([&] { parse_nccl_tests(h + "1024 256 float sum -1 abc 0 0 0\n", "x.txt", "all_reduce"); })
                .find("x.txt:4"),
            std::string::npos);
  EXPECT_NE(cost_test::error_of([&] { parse_nccl_tests(h + "1024 256 float sum -1 5.0 0 0 3 5 0 0 3\n", "x.txt",
                                                       "all_reduce_perf"); })
                .find("wrong"),
            std::string::npos);
  EXPECT_NE(cost_test::error_of([&] { parse_nccl_tests(h, "x.txt", "all_reduce_perf"); }).find("no result rows"),
            std::string::npos);
  EXPECT_NE(cost_test::error_of([&] { parse_nccl_tests(h + "1024 256 float sum -1 5.0 0 0 0\n", "x.txt"); })
                .find("does not name its test"),
            std::string::npos);
  EXPECT_NE(cost_test::error_of([&] { parse_nccl_tests(h + "1024 256 float sum -1 5.0 0 0 0\n", "x.txt", "gemm"); })
                .find("unknown"),
            std::string::npos);
  EXPECT_NE(cost_test::error_of([&] { parse_nccl_tests("1024 256 float sum -1 5.0 0 0 0\n", "x.txt", "all_reduce"); })
                .find("column header"),
            std::string::npos);
}

TEST(NcclTests, WhitespaceOnlyRowIsNotARow) {
  // Found by fuzz_nccl_tests: a line of a vertical tab passed the blank-line check but had no tokens.
  EXPECT_THROW(strata::cost::parse_nccl_tests("# nThread 1 nGpus 1\n\v\n", "vt.txt", "all_reduce_perf"),
               strata::core::InputError);
}
