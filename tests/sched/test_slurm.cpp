// tests/sched/test_slurm: the Slurm back-end's round translation — new and moved placements are submitted with the
// GPU type as a typed gres, lost or moved ones cancelled first, renewed ones left alone — and shell quoting.
#include <gtest/gtest.h>

#include "strata/sched/simulate.hpp"

namespace strata::sched {
namespace {

TEST(Slurm, RoundCommandsSubmitMoveAndCancel) {
  const std::vector<RoundPlacement> before{{"a", "v100", 1, false}, {"b", "k80", 2, false}, {"c", "p100", 1, false}};
  const std::vector<RoundPlacement> after{{"a", "v100", 1, true}, {"b", "v100", 2, false}, {"d", "k80", 1, false}};
  const auto cmds = slurm_round_commands(before, after, "python train.py");
  ASSERT_EQ(cmds.size(), 4u);
  EXPECT_EQ(shell_line(cmds[0]), "scancel --name=strata-b");  // moved k80 → v100
  EXPECT_EQ(shell_line(cmds[1]), "scancel --name=strata-c");  // not placed this round
  EXPECT_EQ(shell_line(cmds[2]),
            "sbatch --parsable --job-name=strata-b --nodes=1 --gres=gpu:v100:2 '--wrap=python train.py'");
  EXPECT_EQ(cmds[3][4], "--gres=gpu:k80:1");
  EXPECT_TRUE(slurm_round_commands(after, after, "x").empty());  // all renewed: nothing to do
}

TEST(Slurm, ShellQuoting) { EXPECT_EQ(shell_line({"a", "it's"}), "a 'it'\\''s'"); }

TEST(Slurm, SimulatorReportsEveryRoundsPlacements) {
  const auto trace = generate_trace(default_job_types(), parse_cluster_spec("v100:1,k80:1"),
                                    parse_generate_spec("jobs=3,seed=1"));
  SimOptions o;
  int rounds = 0;
  std::size_t max_placed = 0;
  o.on_round = [&](double, const std::vector<RoundPlacement>& placed) {
    ++rounds;
    max_placed = std::max(max_placed, placed.size());
  };
  const SimResult r = simulate(trace, o);
  EXPECT_EQ(rounds, r.metrics.rounds);
  EXPECT_EQ(max_placed, 2u);  // two GPUs, three single-GPU jobs
}

}  // namespace
}  // namespace strata::sched
