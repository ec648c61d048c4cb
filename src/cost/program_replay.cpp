// cost/program_replay: the dependency-only backend of the pipeline program — replays every stage's ops in order
// with blocking receives and non-blocking sends. Without durations it checks the program (deadlock, ops run twice
// or never, weight versions); with durations it gives the critical path the closed forms of cost/pipeline predict.
#include <fmt/format.h>

#include <algorithm>

#include "strata/cost/program.hpp"

namespace strata::cost {
namespace {

using K = ProgramOpKind;

class Replay {
 public:
  Replay(const PipelineProgram& prog, const ProgramDurations* d) : prog_(prog), d_(d) {
    const auto& sh = prog.shape;
    chunks_ = sh.p * sh.v;
    k0_ = sh.first_iteration * sh.m;
    const std::size_t n = static_cast<std::size_t>(sh.m * sh.iterations * chunks_);
    fwd_done_.assign(n, -1);
    bwd_done_.assign(n, -1);
    act_sent_.assign(n, -1);
    grad_sent_.assign(n, -1);
    clock_.assign(sh.p, 0.0);
    busy_.assign(sh.p, 0.0);
    pos_.assign(sh.p, 0);
    latest_.assign(sh.p, sh.schedule == Schedule::pipedream ? k0_ : sh.first_iteration);
    iteration_end_.assign(sh.iterations, 0.0);
  }

  std::string run() {
    std::size_t remaining = 0;
    for (const auto& st : prog_.stages) remaining += st.ops.size();
    while (remaining > 0) {
      bool progressed = false;
      for (int s = 0; s < prog_.shape.p; ++s) {
        const auto& ops = prog_.stages[s].ops;
        while (pos_[s] < ops.size()) {
          double ready_s = 0;
          const int state = readiness(s, ops[pos_[s]], ready_s);
          if (state < 0) return error_;
          if (state == 0) break;
          if (!execute(s, ops[pos_[s]], ready_s)) return error_;
          ++pos_[s];
          --remaining;
          progressed = true;
        }
      }
      if (!progressed) return deadlock();
    }
    return completeness();
  }

  ProgramTiming timing() const {
    ProgramTiming t;
    t.makespan_s = clock_.empty() ? 0 : *std::max_element(clock_.begin(), clock_.end());
    t.iteration_end_s = iteration_end_;
    t.stage_busy_s = busy_;
    return t;
  }

 private:
  std::size_t key(std::int64_t micro, int g) const {
    return static_cast<std::size_t>((micro - k0_) * chunks_ + g);
  }
  int stage_of(int g) const { return g % prog_.shape.p; }
  int local_of(int g) const { return g / prog_.shape.p; }
  double p2p(int g) const { return d_ ? d_->p2p_s[stage_of(g)][local_of(g)] : 0.0; }

  int fail(const std::string& why) {
    error_ = why;
    return -1;
  }
  std::string describe(int s, const ProgramOp& op) const {
    return fmt::format("stage {} {}(micro {}, chunk {})", s, to_string(op.kind), op.micro,
                       op.chunk < 0 ? -1 : op.chunk * prog_.shape.p + s);
  }

  // 1 = ready at ready_s, 0 = waits for another stage, −1 = the program is wrong (error_).
  int readiness(int s, const ProgramOp& op, double& ready_s) {
    ready_s = clock_[s];
    if (op.micro >= 0 && (op.micro < k0_ || op.micro >= k0_ + prog_.shape.m * prog_.shape.iterations))
      return fail(describe(s, op) + ": micro-batch out of range");
    const int g = op.chunk < 0 ? -1 : op.chunk * prog_.shape.p + s;
    auto need = [&](double t, double extra) {
      if (t < 0) return 0;
      ready_s = std::max(ready_s, t + extra);
      return 1;
    };
    switch (op.kind) {
      case K::recv_activation: return need(act_sent_[key(op.micro, g - 1)], p2p(g - 1));
      case K::recv_gradient: return need(grad_sent_[key(op.micro, g + 1)], p2p(g));
      case K::forward:
        if (g > 0 && stage_of(g - 1) == s) return need(fwd_done_[key(op.micro, g - 1)], 0.0);
        return 1;
      case K::backward:
        if (fwd_done_[key(op.micro, g)] < 0) return fail(describe(s, op) + " runs before its forward");
        if (g < chunks_ - 1 && stage_of(g + 1) == s) return need(bwd_done_[key(op.micro, g + 1)], 0.0);
        return 1;
      case K::send_activation:
        if (fwd_done_[key(op.micro, g)] < 0) return fail(describe(s, op) + " sends before its forward");
        return 1;
      case K::send_gradient:
        if (bwd_done_[key(op.micro, g)] < 0) return fail(describe(s, op) + " sends before its backward");
        return 1;
      default: return 1;
    }
  }

  bool check_version(int s, const ProgramOp& op) {
    const std::int64_t latest = latest_[s];
    const std::int64_t oldest = prog_.shape.schedule == Schedule::two_bw ? latest - 1 : latest;
    if (op.weight_version > latest) {
      error_ = fmt::format("{} uses weight version {}, but only {} exist", describe(s, op), op.weight_version, latest);
      return false;
    }
    if (op.weight_version < oldest) {
      error_ = fmt::format("{} uses weight version {}, already dropped (latest {})", describe(s, op), op.weight_version,
                           latest);
      return false;
    }
    return true;
  }

  double duration(int s, const ProgramOp& op) const {
    if (!d_) return 0;
    if (op.kind == K::forward) return d_->fwd_s[s][op.chunk];
    if (op.kind == K::backward) return d_->bwd_s[s][op.chunk];
    if (op.kind == K::optimizer) return d_->optimizer_s[s];
    return 0;
  }

  bool execute(int s, const ProgramOp& op, double ready_s) {
    const int g = op.chunk < 0 ? -1 : op.chunk * prog_.shape.p + s;
    const double dur = duration(s, op);
    const double end = ready_s + dur;
    auto mark = [&](std::vector<double>& v) {
      auto& slot = v[key(op.micro, g)];
      if (slot >= 0) {
        error_ = describe(s, op) + " runs twice";
        return false;
      }
      slot = end;
      return true;
    };
    if (op.kind == K::forward) {
      if (!check_version(s, op) || !mark(fwd_done_)) return false;
    } else if (op.kind == K::backward) {
      if (!mark(bwd_done_)) return false;
    } else if (op.kind == K::send_activation) {
      if (!mark(act_sent_)) return false;
    } else if (op.kind == K::send_gradient) {
      if (!mark(grad_sent_)) return false;
    } else if (op.kind == K::optimizer) {
      if (op.weight_version != latest_[s] + 1) {
        error_ = fmt::format("stage {} optimizer produces version {} after {}", s, op.weight_version, latest_[s]);
        return false;
      }
      latest_[s] = op.weight_version;
    }
    clock_[s] = end;
    busy_[s] += dur;
    const std::int64_t it = op.iteration - prog_.shape.first_iteration;
    if (it >= 0 && it < prog_.shape.iterations)
      iteration_end_[it] = std::max(iteration_end_[it], end);
    return true;
  }

  std::string deadlock() const {
    std::string stuck;
    for (int s = 0; s < prog_.shape.p; ++s) {
      const auto& ops = prog_.stages[s].ops;
      if (pos_[s] < ops.size()) stuck += (stuck.empty() ? "" : "; ") + describe(s, ops[pos_[s]]) + " waits";
    }
    return "deadlock: " + stuck;
  }

  std::string completeness() const {
    for (std::size_t i = 0; i < fwd_done_.size(); ++i) {
      const auto micro = static_cast<std::int64_t>(i) / chunks_ + k0_;
      const int g = static_cast<int>(i % chunks_);
      if (fwd_done_[i] < 0 || bwd_done_[i] < 0)
        return fmt::format("micro-batch {} chunk {} never runs its {}", micro, g, fwd_done_[i] < 0 ? "forward" : "backward");
    }
    return "";
  }

  const PipelineProgram& prog_;
  const ProgramDurations* d_;
  int chunks_ = 1;
  std::int64_t k0_ = 0;
  std::vector<double> fwd_done_, bwd_done_, act_sent_, grad_sent_;  // end time, −1 = not yet
  std::vector<double> clock_, busy_, iteration_end_;
  std::vector<std::size_t> pos_;
  std::vector<std::int64_t> latest_;
  std::string error_;
};

}  // namespace

std::string check_program(const PipelineProgram& prog) {
  if (static_cast<int>(prog.stages.size()) != prog.shape.p)
    return fmt::format("the program has {} stages, its shape {}", prog.stages.size(), prog.shape.p);
  Replay r(prog, nullptr);
  return r.run();
}

ProgramTiming time_program(const PipelineProgram& prog, const ProgramDurations& d) {
  Replay r(prog, &d);
  if (const auto why = r.run(); !why.empty()) throw std::invalid_argument("time_program: " + why);
  return r.timing();
}

}  // namespace strata::cost
