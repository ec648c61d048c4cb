// exec/worker_program: the interpreter of the pipeline program (cost/program) — the one schedule the simulator
// replays is the one this rank executes, op by op: ZeRO-3 gathers, receives, forward, sends, backward (with the
// gradient buckets launched from hooks when the op closes its update window), the gradient-sync release, the
// optimizer step (flush: every chunk; PipeDream/2BW: a new weight version) and the ZeRO-1/2 parameter all-gather.
#include <fmt/format.h>

#include <cmath>
#include <unistd.h>

#include <csignal>
#include <thread>

#include "worker.hpp"

namespace strata::exec {

using K = cost::ProgramOpKind;

Tensor Worker::samples(std::int64_t step, std::int64_t mb) const {
  const std::int64_t gbs = S().global_batch, mbs = S().micro_batch;
  return make_samples(opt.model, opt.seed, step * gbs + (L.dp_rank * static_cast<std::int64_t>(m) + mb) * mbs, mbs);
}

double Worker::normalizer() const {
  const double seq = static_cast<double>(opt.model.seq);
  if (S().schedule == cost::Schedule::pipedream) return static_cast<double>(L.dp) * S().micro_batch * seq;
  return static_cast<double>(S().global_batch) * seq;
}

void Worker::maybe_fault(int step_in_run) {
  if (opt.fault.rank != L.rank || opt.fault.step != step_in_run) return;
  std::fflush(stdout);
  std::fflush(stderr);
  if (opt.fault.mode == "kill") std::raise(SIGKILL);
  if (opt.fault.mode == "exit") ::_exit(5);
  for (;;) std::this_thread::sleep_for(std::chrono::seconds(1));  // "hang"
}

void Worker::finish_step_loss(int step_in_run, Clock::time_point t0) {
  // Loss of the global batch: sum over the data-parallel replicas of the last stage.
  if (L.stage == L.pp - 1) {
    Tensor l = torch::tensor({step_loss}, torch::kFloat64);
    allreduce_sum(l, dp, "loss all-reduce");
    step_loss = l.item<double>();
    if (S().schedule == cost::Schedule::pipedream) step_loss /= m;
  }
  losses.push_back(step_loss);
  iter_times.push_back(seconds_since(t0));
  if (opt.progress && holds_loss)
    fmt::print(stderr, "strata run: step {}/{}  loss {}  {:.3f} s\n", step_in_run + 1, opt.steps,
               std::isfinite(step_loss) ? fmt::format("{:.5f}", step_loss) : std::string("not finite (diverged)"),
               iter_times.back());
  step_loss = 0;
}

void Worker::forward_op(const cost::ProgramOp& op) {
  const auto t0 = Clock::now();
  const double w0 = stats.wait_s;
  Chunk& c = *chunks[op.chunk];
  gather_params(c);  // per-layer SDP: the program has no zero3_gather ops for it (no-op when gathered)
  Flight& f = flights[{op.micro, op.chunk}];
  if (async) {
    auto it = c.versions.find(op.weight_version);
    if (it == c.versions.end())
      throw std::logic_error(fmt::format("weight version {} is not available on stage {}", op.weight_version, L.stage));
    f.buf = it->second;
  } else {
    f.buf = c.main;
  }
  const Tensor data = samples(op.iteration, op.micro - op.iteration * m);
  const Tensor tokens = data.narrow(1, 0, opt.model.seq), labels = data.narrow(1, 1, opt.model.seq);
  if (c.global > 0 && !f.input.defined()) throw std::logic_error("forward without its received activation");
  f.output = c.runner->run(c.global == 0 ? tokens : f.input, f.buf->by_entry, labels, normalizer());
  if (is_last_chunk(c)) step_loss += f.output.item<double>();
  free_params(c);
  compute_s += seconds_since(t0) - (stats.wait_s - w0);
}

void Worker::backward_op(const cost::ProgramOp& op) {
  const auto t0 = Clock::now();
  const double w0 = stats.wait_s;
  Chunk& c = *chunks[op.chunk];
  auto it = flights.find({op.micro, op.chunk});
  if (it == flights.end()) throw std::logic_error("backward without forward");
  Flight f = std::move(it->second);  // holds the stashed weight version until the end of this op
  flights.erase(it);
  gather_params(c);
  if (op.opens_window) f.buf->gflat.zero_();
  begin_backward(c, f.buf.get(), op.closes_window);
  if (op.closes_window) c.window_buf = f.buf;
  if (is_last_chunk(c))
    torch::autograd::backward({f.output});
  else
    torch::autograd::backward({f.output}, {f.grad_in});
  if (c.global > 0) grads_out[{op.micro, op.chunk}] = f.input.grad();
  free_params(c);
  compute_s += seconds_since(t0) - (stats.wait_s - w0);
}

// Flush schedules: every chunk's window is complete; wait for its buckets, sum SP/tied gradients, update.
// PipeDream/2BW: the single chunk's window (the buffer its backward used) gets a new weight version.
void Worker::optimizer_op() {
  if (!async) {
    drain_sends(true);
    std::vector<std::pair<Chunk*, ParamBuf*>> active;
    for (auto& c : chunks) {
      finish_dp_and_sp(*c, *c->main);
      active.emplace_back(c.get(), c->main.get());
    }
    sync_tied(active);
    for (auto& c : chunks) reduce_and_update_flush(*c);
    return;
  }
  Chunk& c = *chunks[0];
  if (!c.window_buf) throw std::logic_error("optimizer step without a closed update window");
  const std::shared_ptr<ParamBuf> buf = std::move(c.window_buf);
  finish_dp_and_sp(c, *buf);
  sync_tied({{&c, buf.get()}});
  update_async(c, *buf);
}

void Worker::run_op(const cost::ProgramOp& op) {
  const int g = op.chunk < 0 ? -1 : op.chunk * L.pp + L.stage;
  switch (op.kind) {
    case K::zero3_gather: gather_params(*chunks[op.chunk]); break;
    case K::recv_activation: {
      Flight& f = flights[{op.micro, op.chunk}];
      f.input = recv(p2p_source(op.peer_stage, op.micro), tag(p2p_micro(op.micro), g - 1, false),
                     "pipeline receive (activation)");
      f.input.requires_grad_(true);
      break;
    }
    case K::forward: forward_op(op); break;
    case K::send_activation:
      send(flights.at({op.micro, op.chunk}).output, p2p_targets(op.peer_stage, op.micro),
           tag(p2p_micro(op.micro), g, false));
      break;
    case K::recv_gradient:
      flights.at({op.micro, op.chunk}).grad_in =
          recv(p2p_source(op.peer_stage, op.micro), tag(p2p_micro(op.micro), g + 1, true), "pipeline receive (gradient)");
      break;
    case K::backward: backward_op(op); break;
    case K::send_gradient: {
      auto it = grads_out.find({op.micro, op.chunk});
      if (it == grads_out.end()) throw std::logic_error("gradient send before its backward");
      send(it->second, p2p_targets(op.peer_stage, op.micro), tag(p2p_micro(op.micro), g, true));
      grads_out.erase(it);
      break;
    }
    case K::grad_sync:
      // Release every bucket not yet launched by the hooks (non-blocking); the optimizer op waits for them.
      if (overlapped_dp()) launch_ready(*chunks[op.chunk], true);
      break;
    case K::optimizer: optimizer_op(); break;
    case K::param_gather:
      for (auto& c : chunks) gather_updated_params(*c);
      break;
  }
}

void Worker::run_program(const cost::PipelineProgram& prog) {
  const auto& ops = prog.stages.at(L.stage).ops;
  // The last op of each iteration ends its step (loss, time); its first op is where a test fault fires.
  std::map<std::int64_t, std::size_t> first_of, last_of;
  for (std::size_t i = 0; i < ops.size(); ++i) {
    first_of.try_emplace(ops[i].iteration, i);
    last_of[ops[i].iteration] = i;
  }
  auto t0 = Clock::now();
  for (std::size_t i = 0; i < ops.size(); ++i) {
    const auto& op = ops[i];
    const int step_in_run = static_cast<int>(op.iteration - first_step);
    if (first_of.at(op.iteration) == i) maybe_fault(step_in_run);
    run_op(op);
    if (opt.record_ops) executed.push_back(op);
    drain_sends(false);
    if (last_of.at(op.iteration) == i) {
      finish_step_loss(step_in_run, t0);
      t0 = Clock::now();
    }
  }
  drain_sends(true);
}

}  // namespace strata::exec
