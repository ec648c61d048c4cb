// cli/cmd_sbp: `strata sbp` (and `strata plan --space sbp`) — AutoDDL's search over per-layer SBP matmul layouts:
// a table of each layer's distribution and the boxing to the next layer, the Megatron TP+DP and DP baselines in
// the same model, predicted time, and the bridge to strata's own estimate when the best is Megatron TP+DP.
#include "cmd_sbp.hpp"

#include <fmt/format.h>

#include <cstdio>
#include <memory>
#include <sstream>

#include "commands.hpp"
#include "io.hpp"
#include "strata/core/error.hpp"
#include "strata/core/json.hpp"
#include "strata/core/text.hpp"
#include "strata/cost/estimate.hpp"
#include "strata/cost/memory.hpp"
#include "strata/plan/sbp_search.hpp"
#include "strata/plan/search.hpp"

namespace strata::cli {
namespace {

std::string abbr(cost::Collective k) {
  switch (k) {
    case cost::Collective::allreduce: return "AR";
    case cost::Collective::reduce_scatter: return "RS";
    case cost::Collective::allgather: return "AG";
    case cost::Collective::all_to_all: return "A2A";
    default: return std::string(cost::to_string(k));
  }
}

std::string step_text(const cost::BoxingStep& s) {
  return fmt::format("{} over {} ({})", abbr(s.kind), cost::to_string(s.group), core::format_bytes(s.buffer_bytes));
}

std::vector<double> parse_widths(const std::string& text, const std::string& where) {
  std::vector<double> out;
  std::stringstream ss(text);
  std::string item;
  while (std::getline(ss, item, ',')) {
    try {
      std::size_t used = 0;
      out.push_back(std::stod(item, &used));
      if (used != item.size()) throw std::invalid_argument(item);
    } catch (const std::exception&) {
      throw core::InputError(fmt::format("{}: --mlp: width '{}' is not a number (e.g. 32768,16384,4096,2048,512)",
                                         where, item));
    }
  }
  return out;
}

void print_layers(std::FILE* out, const plan::SbpProblem& p, const cost::SbpComm& comm,
                  const std::vector<cost::MatmulLayout>& choice) {
  const std::vector<std::string> header{"layer", "x", "in->out", "(p0,p1,p2)", "class", "I", "W", "O",
                                        "weight sync / iter", "-> next", "boxing to next (forward; backward mirrors)"};
  std::vector<std::vector<std::string>> rows;
  for (const auto& e : plan::explain_sbp(p, comm, choice)) {
    const auto& L = p.layers[static_cast<std::size_t>(e.layer)];
    std::vector<std::string> steps;
    for (const auto& s : e.boxing.steps) steps.push_back(step_text(s));
    rows.push_back({e.name, std::to_string(e.repeats), fmt::format("{:g}->{:g}", L.in, L.out),
                    cost::to_string(e.layout), std::string(cost::to_string(e.layout_class)),
                    cost::to_string(cost::input_sbp(e.layout)), cost::to_string(cost::weight_sbp(e.layout)),
                    cost::to_string(cost::output_sbp(e.layout)),
                    e.layout.p(0) > 1 ? step_text(e.weight) : "none (not replicated)",
                    e.next.empty() ? "(output)" : fmt::format("{} x{}", e.next, e.boxing_repeats),
                    steps.empty() ? "none (layouts line up)" : core::join(steps, " + ")});
  }
  fmt::print(out, "{}", core::render_table(header, rows));
  fmt::print(out, "  (p0,p1,p2): I (S0:p0, B:p1, S1:p2) x W (B:p0, S1:p1, S0:p2) -> O (S0:p0, S1:p1, P:p2) (AutoDDL "
                  "§4.2.2); an axis 'NxG' spans N nodes x G GPUs each, a plain number stays inside one node.\n");
}

// Compute per iteration per device: every layout in the space divides the compute evenly (AutoDDL §4), so it is
// strata's data-parallel estimate's compute on the same devices and batch (one sample per device and micro-batch).
// 0 (not shown) when the global batch does not split over the devices.
double compute_reference_s(const model::Model& m, const hw::Cluster& c, const plan::SbpProblem& p,
                           const cost::CostOptions& co) {
  if (p.global_batch % c.num_devices() != 0) return 0;
  cost::Strategy s;
  s.dp = c.num_devices();
  s.micro_batch = 1;
  s.global_batch = p.global_batch;
  s.dtype = p.dtype;
  s = cost::complete_strategy(s, m, c);
  const auto e = cost::estimate(m, c, s, co);
  return e.stages.front().compute_s * static_cast<double>(s.num_micro_batches());
}

std::vector<std::string> cost_row(const std::string& name, const std::string& layout, const plan::SbpCost& c,
                                  double best_time, double compute_s) {
  return {name,
          layout,
          core::format_bytes(c.activation_bytes),
          core::format_bytes(c.weight_bytes),
          core::format_bytes(c.comm_bytes()),
          core::format_seconds(c.comm_time_s()),
          best_time > 0 ? fmt::format("{:+.1f}%", 100.0 * (c.comm_time_s() / best_time - 1)) : "",
          compute_s > 0 ? core::format_seconds(compute_s + c.comm_time_s()) : "-",
          core::format_bytes(c.memory_bytes),
          c.fits ? "yes" : "no"};
}

void print_bridge(std::FILE* out, const plan::SbpProblem& p, const cost::SbpComm& comm, const model::Model& m,
                  const plan::SbpSearchResult& r, const plan::SbpBaseline& mega, const cost::CostOptions& co) {
  auto show = [&](const std::string& what, const std::vector<cost::MatmulLayout>& choice) {
    const auto s = plan::sbp_to_strategy(p, comm, m, choice);
    if (!s) return false;
    const auto e = cost::estimate(m, *comm.cluster, *s, co);
    fmt::print(out, "{}: strategy {} -> strata estimate {} / iteration, {:.1f}% MFU, peak memory {}{}\n", what,
               cost::to_cli_string(*s), core::format_seconds(e.iteration_time_s), 100.0 * e.mfu,
               core::format_bytes(e.peak_memory_bytes), e.fits ? "" : " (does not fit)");
    return true;
  };
  fmt::print(out, "\nBridge to strata's strategies:\n");
  if (show("best = Megatron TP+DP", r.choice)) {
    fmt::print(out, "  it can be simulated, exported and run: strata simulate / export / run --strategy as above\n");
  } else {
    fmt::print(out, "best layout has no Megatron TP+DP equivalent: costed above with AutoDDL's model (not executable "
                    "by strata's executor)\n");
  }
  if (mega.found) show("megatron baseline", mega.choice);
}

void print_summary(std::FILE* out, const plan::SbpProblem& p, const cost::SbpComm& comm,
                   const plan::SbpSearchResult& r, const std::vector<plan::SbpBaseline>& base, double compute_s) {
  const std::vector<std::string> header{"strategy", "layout", "activations", "weight sync", "comm bytes",
                                        "comm time", "vs best", "time/iter", "memory", "fits"};
  std::vector<std::vector<std::string>> rows;
  const double best = r.found ? r.cost.comm_time_s() : 0;
  if (r.found) {
    const auto deg = plan::megatron_degrees(p, comm, r.choice);
    rows.push_back(cost_row("autoddl (best)", deg ? fmt::format("= dp={},tp={}", deg->first, deg->second) : "per layer",
                            r.cost, best, compute_s));
  }
  for (const auto& b : base) {
    if (b.found) {
      rows.push_back(cost_row(b.name, fmt::format("dp={},tp={}", b.dp, b.tp), b.cost, best, compute_s));
    } else {
      rows.push_back({b.name, "-", "-", "-", "-", "-", "-", "-", core::format_bytes(b.cost.memory_bytes), "no"});
    }
  }
  fmt::print(out, "\nCommunication per iteration per device (forward + backward, all micro-batches) and memory:\n{}",
             core::render_table(header, rows));
  if (compute_s > 0)
    fmt::print(out, "time/iter = compute {} (strata's data-parallel estimate: every layout divides it evenly) + "
                    "communication, not overlapped (AutoDDL §3)\n",
               core::format_seconds(compute_s));
  for (const auto& b : base)
    if (b.found && r.found && b.cost.comm_time_s() > 0)
      fmt::print(out, "autoddl vs {}: communication time {:+.1f}%, bytes {:+.1f}%\n", b.name,
                 100.0 * (r.cost.comm_time_s() / b.cost.comm_time_s() - 1),
                 100.0 * (r.cost.comm_bytes() / b.cost.comm_bytes() - 1));
}

plan::SbpSearchOptions search_options(const SbpArgs& a) {
  plan::SbpSearchOptions o;
  o.algorithm = plan::parse_sbp_algorithm(a.search, a.flag + ": --search");
  o.objective = plan::parse_sbp_objective(a.objective, a.flag + ": --objective");
  if (a.seed < 0) throw core::InputError(a.flag + ": --seed: must be >= 0");
  if (a.restarts < 1 || a.mh_steps < 1) throw core::InputError(a.flag + ": --restarts/--mh-steps: must be >= 1");
  if (a.max_p0 < 0) throw core::InputError(a.flag + ": --max-p0: must be >= 0 (0 = no cap)");
  o.seed = static_cast<std::uint64_t>(a.seed);
  o.restarts = a.restarts;
  o.mh_steps = a.mh_steps;
  return o;
}

}  // namespace

void run_sbp(const SbpArgs& a) {
  if (!a.json_file.empty()) check_output_path(a.json_file, a.flag + ": --json");
  if (a.model.empty() == a.mlp.empty())
    throw core::InputError(a.flag + ": give exactly one of --model (a transformer) and --mlp (dense layer widths)");
  const auto catalog = hw::builtin_catalog();
  const auto c = hw::resolve_cluster(a.cluster, catalog);
  const auto comm = cost::make_sbp_comm(c, a.flag + ": --cluster");
  const auto opt = search_options(a);
  cost::CostOptions co;
  if (a.memory_headroom_given)
    co.memory_headroom = cost::parse_memory_headroom(a.memory_headroom, a.flag + ": --memory-headroom");
  std::optional<model::Model> m;
  plan::SbpProblem p;
  if (!a.model.empty()) {
    m = model::resolve_model(a.model);
    if (a.seq) m = model::with_seq(*m, *a.seq);
    const std::int64_t mbs = a.mbs > 0 ? a.mbs : c.num_devices();
    if (a.gbs < 1) throw core::InputError(a.flag + ": --gbs: must be >= 1 (global batch in samples) with --model");
    plan::check_global_batch(*m, a.gbs);
    p = plan::transformer_problem(*m, c, mbs, a.gbs, hw::parse_dtype(a.dtype, a.flag + ": --dtype"),
                                  co.memory_headroom, a.flag);
  } else {
    p = plan::mlp_problem(parse_widths(a.mlp, a.flag), a.rows, a.flag + ": --mlp");
    p.memory_limit_bytes = plan::sbp_memory_limit(c, co.memory_headroom);
  }
  p.max_p0 = a.max_p0;
  const auto r = plan::search_sbp(p, comm, opt);
  const std::vector<plan::SbpBaseline> base{plan::megatron_baseline(p, comm, opt.objective),
                                            plan::dp_baseline(p, comm)};
  std::FILE* out = a.json_file == "-" ? stderr : stdout;
  fmt::print(out, "strata sbp: {} on {} ({} devices = {} nodes x {} GPUs), {:g} rows per micro-batch x {:g} "
                  "micro-batches, memory limit {} per device\n",
             p.name, c.name, c.num_devices(), comm.nodes, comm.gpus_per_node, p.rows, p.micro_batches,
             core::format_bytes(p.memory_limit_bytes));
  fmt::print(out, "search: {} over {} layouts per layer, {} distinct layers ({} matmuls in the chain, repeats "
                  "tied): {:.3g} strategies, {} costed, {:.3f} s; objective: communication {}\n\n",
             plan::to_string(r.algorithm), plan::sbp_candidate_layouts(p, comm).size(), p.layers.size(),
             p.chain.size(), r.space_size, r.evaluated, r.search_time_s, plan::to_string(opt.objective));
  const double compute_s = m ? compute_reference_s(*m, c, p, co) : 0;
  if (r.found) {
    fmt::print(out, "Best SBP distribution per layer:\n");
    print_layers(out, p, comm, r.choice);
  } else {
    fmt::print(out, "no layout fits the memory limit of {} per device\n", core::format_bytes(p.memory_limit_bytes));
  }
  print_summary(out, p, comm, r, base, compute_s);
  if (m && r.found) print_bridge(out, p, comm, *m, r, base.front(), co);
  if (!a.json_file.empty()) {
    auto j = plan::sbp_to_json(p, comm, r, base);
    if (compute_s > 0) j["compute_time_s"] = compute_s;
    write_output(a.json_file, core::dump_json(j) + "\n", a.flag + ": --json");
  }
}

void register_sbp_command(CLI::App& app) {
  auto a = std::make_shared<SbpArgs>();
  auto* cmd = app.add_subcommand(
      "sbp",
      "AutoDDL's communication-optimal search (docs/sbp.md): every matmul gets an SBP layout (p0,p1,p2) on the\n"
      "nodes x GPUs mesh — DP, Megatron 1D/2D, 2.5D, 3D — and the boxing collectives between layers (reduce-scatter,\n"
      "all-to-all, all-gather) and the weight all-reduces are priced on the cluster's links; repeated transformer\n"
      "blocks share their layouts. Prints each layer's distribution, the boxing, the Megatron TP+DP and DP\n"
      "baselines, and strata's own estimate when the best is Megatron TP+DP. Same as `strata plan --space sbp`.\n"
      "Example: strata sbp --model examples/model_autoddl_5p8b.json --cluster examples/cluster_autoddl_gcp.json "
      "--gbs 2048\n"
      "         strata sbp --mlp 32768,16384,4096,2048,512 --cluster examples/cluster_piz_daint.json");
  cmd->add_option("--model", a->model, "Transformer: built-in name or model JSON file (blocks + LM head searched)");
  cmd->add_option("--mlp", a->mlp, "Instead of --model: dense layer widths, e.g. 32768,16384,4096,2048,512 (AutoDDL "
                                   "§4.6)");
  auto* rows = cmd->add_option("--rows", a->rows, "--mlp: rows (batch) of the micro-batch (default 32768)")
                   ->transform(integer_in({1, 1073741824}));
  cmd->add_option("--cluster", a->cluster, "Cluster preset, 'node-type:count' or JSON file (same GPUs on every node)")
      ->required();
  auto* gbs = cmd->add_option("--gbs", a->gbs, "--model: global batch in samples per iteration")
                  ->transform(integer_in(core::limits::kGbs));
  auto* mbs = cmd->add_option("--mbs", a->mbs,
                              "--model: samples per micro-batch over all devices (default: one per device)")
                  ->transform(integer_in(core::limits::kMbs));
  auto* seq = cmd->add_option("--seq", a->seq, "--model: sequence length (default: the model's)")
                  ->transform(integer_in(core::limits::kSeq));
  cmd->add_option("--dtype", a->dtype, "Precision recipe for bytes per element/parameter (default bf16)");
  cmd->add_option("--search", a->search, "auto (default: exhaustive up to 2e6 strategies, else cd), exhaustive, cd "
                                         "(coordinate descent, random restarts), mh (Metropolis-Hastings)");
  cmd->add_option("--objective", a->objective, "time (default: alpha-beta time on the links) or bytes per device");
  cmd->add_option("--seed", a->seed, "Seed of cd restarts and mh (default 1; same seed, same output)")
      ->transform(integer_in(core::limits::kSeed));
  cmd->add_option("--restarts", a->restarts, "cd: random restarts (default 256)")->transform(integer_in({1, 1000000}));
  cmd->add_option("--mh-steps", a->mh_steps, "mh: proposals (default 20000)")->transform(integer_in({1, 100000000}));
  cmd->add_option("--max-p0", a->max_p0, "Cap on the weight replication p0 (AutoDDL §4.5.2; default 0 = none)")
      ->transform(integer_in({0, 1048576}));
  add_memory_headroom_option(cmd, &a->memory_headroom, &a->memory_headroom_given,
                             "a layout fits when its memory <= capacity - headroom");
  cmd->add_option("--json", a->json_file, "Write the result as JSON here ('-' = stdout, the table goes to stderr)");
  cmd->callback([a, rows, gbs, mbs, seq] {
    // Each mode's own flags: one given to the other mode was silently unused.
    if (!a->model.empty() && rows->count() > 0) throw core::InputError("sbp: --rows applies to --mlp, not --model");
    if (a->model.empty() && !a->mlp.empty())
      for (const auto* o : {gbs, mbs, seq})
        if (o->count() > 0) throw core::InputError(fmt::format("sbp: {} applies to --model, not --mlp", o->get_name()));
    run_sbp(*a);
  });
}

}  // namespace strata::cli
