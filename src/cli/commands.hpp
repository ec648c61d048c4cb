// cli/commands: each file cmd_*.cpp registers its sub-commands on the root CLI11 app. The CLI stays thin:
// parse flags, call the library, print a table or JSON. run/profile/exec-worker: exec_commands.hpp.
#pragma once
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>
#include <string>

#include "strata/cost/estimate.hpp"
#include "strata/hw/cluster.hpp"
#include "strata/model/model.hpp"

namespace strata::cli {

void register_catalog_commands(CLI::App& app);   // models, hardware, clusters        (cmd_catalog.cpp)
void register_describe_command(CLI::App& app);   // describe                          (cmd_describe.cpp)
void register_estimate_commands(CLI::App& app);  // estimate, validate                (cmd_estimate.cpp)
void register_plan_command(CLI::App& app);       // plan                              (cmd_plan.cpp)
void register_simulate_command(CLI::App& app);   // simulate                          (cmd_simulate.cpp)
void register_sched_commands(CLI::App& app);     // allocate, schedule                (cmd_sched.cpp)
void register_export_command(CLI::App& app);     // export                            (cmd_export.cpp)
void register_report_command(CLI::App& app);     // report                            (cmd_report.cpp)
void register_sbp_command(CLI::App& app);        // sbp (also plan --space sbp)       (cmd_sbp.cpp)

// Where `strata report` / `strata plan --report` write (cmd_report.cpp).
struct ReportFiles {
  std::string html = "report.html";
  std::string screenshot;            // PNG; empty = none
  std::string size_text;             // --screenshot-size WIDTHxHEIGHT
  int width = 1300, height = 2400;
  bool quiet = false;
  std::string flag = "--report";     // names the flag in error messages
  void parse_size();                 // size_text → width/height (InputError when malformed)
};
void add_screenshot_options(CLI::App* cmd, ReportFiles& files);
// Renders the report of a plan file's JSON and writes it (and the screenshot when asked).
void write_plan_report(const nlohmann::json& plan, const std::string& origin, const model::Model& m,
                       const hw::Cluster& c, const ReportFiles& files, const cost::CostOptions& cost);

}  // namespace strata::cli
