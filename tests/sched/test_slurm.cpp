// tests/sched/test_slurm: the Slurm back-end's round translation — new placements submitted with the GPU type as a
// typed gres, lost ones requeued and held, held ones released on their type, moved ones cancelled and resubmitted,
// renewed ones left alone — the command runner, and shell quoting. The live cluster: tests/sched/slurm_live.sh.
#include <gtest/gtest.h>

#include "strata/sched/simulate.hpp"

namespace strata::sched {
namespace {

TEST(Slurm, RoundActionsSubmitRequeueReleaseAndCancel) {
  SlurmState st;
  const SlurmOptions opt{"python train.py", {"--partition=gpu"}};
  auto lines = [&](const std::vector<SlurmAction>& acts) {
    std::vector<std::string> out;
    for (const auto& a : acts) out.push_back(dry_run_line(a, st));
    return out;
  };
  // Round 1: three new jobs, each submitted with its GPU type as a typed gres.
  auto r1 = lines(slurm_round_actions(st, {{"a", "v100", 1}, {"b", "k80", 2}, {"c", "p100", 1}}, opt));
  ASSERT_EQ(r1.size(), 3u);
  EXPECT_EQ(r1[0], "J1=$(sbatch --parsable --job-name=strata-a --nodes=1 --requeue --gres=gpu:v100:1 "
                   "--partition=gpu '--wrap=python train.py')");
  EXPECT_NE(r1[1].find("--gres=gpu:k80:2"), std::string::npos);
  // Round 2: a renewed (nothing), b moved k80 → v100 (cancel, resubmit), c lost its GPU (requeue, held).
  auto r2 = lines(slurm_round_actions(st, {{"a", "v100", 1, true}, {"b", "v100", 2}}, opt));
  ASSERT_EQ(r2.size(), 3u);
  EXPECT_EQ(r2[0], "scancel \"${J2%%;*}\"");
  EXPECT_EQ(r2[1], "scontrol requeuehold \"${J3%%;*}\"");
  EXPECT_EQ(r2[2].rfind("J2=$(sbatch ", 0), 0u);
  EXPECT_NE(r2[2].find("--gres=gpu:v100:2"), std::string::npos);
  EXPECT_EQ(st.jobs["c"].phase, SlurmJob::Phase::kHeld);
  // Round 3: c comes back on another type: a fresh job with the new typed gres; a goes to the queue.
  auto r3 = lines(slurm_round_actions(st, {{"b", "v100", 2, true}, {"c", "k80", 1}}, opt));
  ASSERT_EQ(r3.size(), 3u);
  EXPECT_EQ(r3[0], "scontrol requeuehold \"${J1%%;*}\"");
  EXPECT_EQ(r3[1], "scancel \"${J3%%;*}\"");
  EXPECT_EQ(r3[2].rfind("J3=$(sbatch ", 0), 0u);
  EXPECT_NE(r3[2].find("--gres=gpu:k80:1"), std::string::npos);
  // Round 4: a back on its type: released from the queue.
  EXPECT_EQ(lines(slurm_round_actions(st, {{"a", "v100", 1}, {"b", "v100", 2, true}, {"c", "k80", 1, true}}, opt)),
            std::vector<std::string>{"scontrol release \"${J1%%;*}\""});
  // Same placements again: nothing to do. Then the model finishes b; the rest is cancelled at the end.
  EXPECT_TRUE(slurm_round_actions(st, {{"a", "v100", 1}, {"b", "v100", 2, true}, {"c", "k80", 1, true}}, opt).empty());
  EXPECT_EQ(lines(slurm_cancel(st, "b")), std::vector<std::string>{"scancel \"${J2%%;*}\""});
  EXPECT_EQ(lines(slurm_cancel(st)).size(), 2u);  // a and c
  EXPECT_TRUE(slurm_cancel(st).empty());
}

TEST(Slurm, RunCommandCapturesOutputAndTimesOut) {
  const CommandResult ok = run_command({"sh", "-c", "echo out; echo err >&2; exit 3"}, 10);
  EXPECT_EQ(ok.exit_code, 3);
  EXPECT_EQ(ok.out, "out\n");
  EXPECT_EQ(ok.err, "err\n");
  const CommandResult slow = run_command({"sleep", "5"}, 0.2);
  EXPECT_TRUE(slow.timed_out);
  EXPECT_EQ(slow.exit_code, -1);
  EXPECT_EQ(run_command({"/nonexistent/strata-no-such-binary"}, 1).exit_code, -1);
}

TEST(Slurm, ShellQuoting) { EXPECT_EQ(shell_line({"a", "it's"}), "a 'it'\\''s'"); }

TEST(Slurm, SimulatorReportsEveryRoundsPlacements) {
  const auto trace = generate_trace(default_job_types(), parse_cluster_spec("v100:1,k80:1"),
                                    parse_generate_spec("jobs=3,seed=1"));
  SimOptions o;
  int rounds = 0;
  std::size_t max_placed = 0;
  int ends = 0;
  o.on_round = [&](double now, const std::vector<RoundPlacement>& placed) {
    ++rounds;
    max_placed = std::max(max_placed, placed.size());
    for (const auto& p : placed) {
      if (p.end_s < 0) continue;
      ++ends;
      EXPECT_LE(p.end_s, o.round_s);
      EXPECT_GT(now + p.end_s, 0.0);
    }
  };
  const SimResult r = simulate(trace, o);
  EXPECT_EQ(rounds, r.metrics.rounds);
  EXPECT_EQ(max_placed, 2u);  // two GPUs, three single-GPU jobs
  EXPECT_EQ(ends, 3);         // each job's completion is reported once, inside the round it happens
}

}  // namespace
}  // namespace strata::sched
