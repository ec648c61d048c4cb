// tests/exec/test_checkpoint_fault: sharded checkpoint + resume continues bit-identically; a rank that is killed
// or hangs is detected, every other rank exits on its own with an error, and the run reports which rank failed.
#include <filesystem>

#include "exec_test_util.hpp"

namespace strata::exec {
namespace {
using testing::tiny;

std::string temp_dir(const std::string& name) {
  const auto p = std::filesystem::temp_directory_path() / ("strata-exec-test-" + name + "-" + std::to_string(::getpid()));
  std::filesystem::remove_all(p);
  return p.string();
}

void expect_resume_bit_identical(const std::string& strategy, const std::string& name) {
  const auto dir = temp_dir(name);
  auto full = tiny(strategy, Optimizer::adam, 6);
  const auto all = run_local(full).losses;
  auto first = tiny(strategy, Optimizer::adam, 3);
  first.checkpoint_dir = dir;
  const auto a = run_local(first).losses;
  auto second = tiny(strategy, Optimizer::adam, 3);
  second.resume_dir = dir;
  const auto rec = run_local(second);
  EXPECT_EQ(rec.first_step, 3);
  ASSERT_EQ(all.size(), 6u);
  EXPECT_EQ(a, std::vector<double>(all.begin(), all.begin() + 3)) << strategy;
  EXPECT_EQ(rec.losses, std::vector<double>(all.begin() + 3, all.end())) << strategy;  // bit-identical
  EXPECT_TRUE(std::filesystem::exists(dir + "/rank0.pt"));
  EXPECT_TRUE(std::filesystem::exists(dir + "/rank3.pt"));
  std::filesystem::remove_all(dir);
}

TEST(Checkpoint, ResumeIsBitIdenticalWithZeroAndPipeline) {
  expect_resume_bit_identical("dp=2,tp=1,pp=2,mbs=1,gbs=8,zero=1,schedule=1f1b", "zero1");
}

TEST(Checkpoint, ResumeIsBitIdenticalWithTwoBw) {
  expect_resume_bit_identical("dp=2,tp=1,pp=2,mbs=1,gbs=8,schedule=2bw", "2bw");
}

TEST(Checkpoint, ResumeWithAnotherStrategyIsRejected) {
  const auto dir = temp_dir("mismatch");
  auto a = tiny("dp=2,tp=1,pp=1,mbs=2,gbs=8", Optimizer::adam, 1);
  a.checkpoint_dir = dir;
  run_local(a);
  auto b = tiny("dp=2,tp=1,pp=1,mbs=1,gbs=8", Optimizer::adam, 1);
  b.resume_dir = dir;
  try {
    run_local(b);
    ADD_FAILURE() << "resume with another strategy succeeded";
  } catch (const ExecError& e) {
    EXPECT_NE(std::string(e.what()).find("exited with status 3"), std::string::npos) << e.what();
  }
  std::filesystem::remove_all(dir);
}

std::string failure_of(RunOptions o) {
  try {
    run_local(o);
  } catch (const ExecError& e) {
    return e.what();
  }
  return "";
}

TEST(Failure, KilledRankIsDetectedAndReported) {
  auto o = tiny("dp=2,tp=1,pp=2,mbs=1,gbs=8,schedule=1f1b", Optimizer::adam, 4);
  o.timeout_s = 5;
  o.fault = FaultSpec{1, 2, "kill"};
  const std::string msg = failure_of(o);
  EXPECT_NE(msg.find("rank 1 was killed by signal 9"), std::string::npos) << msg;
  // The survivors noticed on their own (error exit 3), nobody had to be killed by the launcher.
  for (int r : {0, 2, 3}) EXPECT_NE(msg.find("rank " + std::to_string(r) + " exited with status 3"), std::string::npos) << msg;
  EXPECT_EQ(msg.find("grace period"), std::string::npos) << msg;
}

TEST(Failure, HungRankTimesOutTheOthers) {
  auto o = tiny("dp=2,tp=1,pp=1,mbs=2,gbs=8", Optimizer::adam, 4);
  o.timeout_s = 2;
  o.fault = FaultSpec{1, 1, "hang"};
  const std::string msg = failure_of(o);
  // Rank 0 times out in its all-reduce and exits; the hung rank is killed after the grace period.
  EXPECT_NE(msg.find("rank 0 exited with status 3"), std::string::npos) << msg;
  EXPECT_NE(msg.find("rank 1 did not exit within the grace period"), std::string::npos) << msg;
}

}  // namespace
}  // namespace strata::exec
