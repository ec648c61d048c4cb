// report/html: the page skeleton and its style sheet. The data is embedded as JSON in a
// <script type="application/json"> element ("</" escaped so it cannot close the element) and drawn by the
// inline script (html_script.cpp). Nothing refers to the network.
#include <string>

#include "report_internal.hpp"

namespace strata::report {
namespace {

constexpr std::string_view kStyle = R"CSS(
:root { --fg: #1d2330; --muted: #5b6475; --line: #d8dce4; --bg: #f6f7f9; }
* { box-sizing: border-box; }
body { margin: 0; font: 14px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, "DejaVu Sans", sans-serif;
  color: var(--fg); background: var(--bg); }
header { background: #1d2330; color: #fff; padding: 14px 24px; }
header h1 { margin: 0; font-size: 20px; font-weight: 600; }
header p { margin: 2px 0 0; color: #c9d1e0; }
main { max-width: 1260px; margin: 0 auto; padding: 8px 16px 40px; }
section { background: #fff; border: 1px solid var(--line); border-radius: 8px; padding: 12px 18px; margin: 14px 0; }
h2 { margin: 0 0 8px; font-size: 17px; }
h3 { margin: 14px 0 6px; font-size: 14px; }
.muted, .legend, .note { color: var(--muted); font-size: 12.5px; }
.words { font-size: 16px; margin: 4px 0; }
.cards { display: flex; flex-wrap: wrap; gap: 10px; margin: 10px 0; }
.card { border: 1px solid var(--line); border-radius: 6px; padding: 8px 12px; min-width: 150px; }
.card .label, .launch .label { color: var(--muted); font-size: 12px; }
.card .num { font-size: 19px; font-weight: 600; }
.gains { margin: 4px 0; padding-left: 18px; }
.launch > code { display: block; background: #f0f2f5; padding: 6px 8px; border-radius: 4px; font-size: 12.5px;
  overflow-wrap: anywhere; }
.launch details { margin-top: 6px; }
.launch summary { cursor: pointer; color: var(--muted); font-size: 12.5px; }
.launch pre { background: #f0f2f5; padding: 6px 8px; border-radius: 4px; font-size: 11.5px; max-height: 320px;
  overflow: auto; white-space: pre-wrap; overflow-wrap: anywhere; }
.key { margin-right: 12px; white-space: nowrap; }
.key i, .dot { display: inline-block; width: 11px; height: 11px; border-radius: 2px; margin-right: 4px;
  vertical-align: -1px; }
.scroll { overflow-x: auto; border: 1px solid var(--line); border-radius: 4px; }
svg text { font-size: 11px; fill: var(--fg); }
svg .axis { fill: var(--muted); font-size: 10px; }
svg .grid { stroke: #eceef2; }
.placement .nodebox { fill: #f3f4f7; stroke: #c5cad3; }
.placement .nodelabel { font-size: 10px; fill: var(--muted); }
.placement .gpu text { text-anchor: middle; fill: #fff; font-weight: 600; }
.gantt .rowlabel { font-size: 11px; }
.gantt .gantt-row:nth-child(even) .rowlabel { fill: #2f3a52; }
.t.fwd, .key i.fwd { fill: #4c78a8; background: #4c78a8; }
.t.bwd, .key i.bwd { fill: #f58518; background: #f58518; }
.t.rec, .key i.rec { fill: #b279a2; background: #b279a2; }
.t.comm, .key i.comm { fill: #54a24b; background: #54a24b; }
.t.opt, .key i.opt { fill: #e45756; background: #e45756; }
.t.lane2 { opacity: .7; }
.t:hover { stroke: #000; stroke-width: 1; }
.controls { margin: 6px 0; display: flex; gap: 8px; align-items: center; flex-wrap: wrap; }
button, select { font: inherit; padding: 2px 8px; }
.tip { position: absolute; background: #1d2330; color: #fff; padding: 6px 9px; border-radius: 5px;
  font-size: 12px; pointer-events: none; max-width: 360px; z-index: 10; }
.memline { fill: none; stroke-width: 1.6; }
.capacity { stroke: #c0392b; stroke-dasharray: 6 4; stroke-width: 1.2; }
.tbl { border-collapse: collapse; width: 100%; font-size: 12.5px; margin: 4px 0; }
.tbl th, .tbl td { border-bottom: 1px solid #eceef2; padding: 4px 6px; text-align: left; vertical-align: top; }
.tbl th { color: var(--muted); font-weight: 600; }
.tbl td.code { width: 48%; font-family: ui-monospace, "DejaVu Sans Mono", monospace; font-size: 11px; word-break: break-all; }
.membar { display: flex; height: 8px; width: 260px; background: #eef0f3; border-radius: 2px; margin: 2px 0; }
.seg { display: block; height: 100%; }
.m-weights { background: #4c78a8; } .m-gradients { background: #72b7b2; } .m-optimizer { background: #b279a2; }
.m-activations { background: #f58518; } .m-buffers { background: #bab0ac; }
.bottleneck { font-weight: 600; }
.bars { margin-top: 6px; }
.barrow { display: flex; align-items: center; height: 20px; font-size: 12px; }
.barrow.hot .barlabel { color: #c0392b; font-weight: 600; }
.barlabel { width: 250px; flex: none; white-space: nowrap; overflow: hidden; text-overflow: ellipsis; }
.bar { position: relative; display: flex; flex: 1; height: 13px; background: #f3f4f7; }
.bar i { display: block; height: 100%; }
.bar .mark { position: absolute; top: -3px; bottom: -3px; width: 2px; background: #1d2330; }
.b-compute_s { background: #4c78a8; } .b-tp_s { background: #72b7b2; } .b-p2p_s { background: #54a24b; }
.b-dp_s { background: #b279a2; } .b-optimizer_s { background: #e45756; } .b-bubble_s { background: #d5d9e0; }
)CSS";

constexpr std::string_view kBody = R"HTML(<main>
<section id="summary"><h2>Summary</h2><div id="summary-body"></div></section>
<section id="cluster"><h2>Cluster and placement</h2>
<div class="controls">colour by <select id="place-colour"><option value="type">GPU type</option>
<option value="stage">pipeline stage</option><option value="dp">data-parallel replica</option></select></div>
<div class="scroll" id="placement"></div></section>
<section id="timeline"><h2>Timeline (simulated)</h2>
<div class="controls"><select id="replica"></select><button id="zoom-out">−</button><button id="zoom-in">+</button>
<button id="zoom-fit">fit</button><span class="legend"><span class="key"><i class="fwd"></i>forward</span>
<span class="key"><i class="bwd"></i>backward</span><span class="key"><i class="rec"></i>recompute</span>
<span class="key"><i class="comm"></i>communication</span><span class="key"><i class="opt"></i>optimizer</span>
<span class="key">white = bubble (idle)</span></span></div>
<p class="note"><span id="gantt-note"></span><span id="gantt-mode"></span></p>
<div class="scroll" id="gantt"></div></section>
<section id="memory"><h2>Memory over time per stage</h2><div class="scroll" id="memory-chart"></div>
<div id="memory-table"></div></section>
<section id="stages"><h2>Per-stage time breakdown</h2><div id="stage-bars"></div></section>
<section id="why"><h2>Why this plan</h2><div id="why-body"></div></section>
</main>
<div id="tip" class="tip" hidden></div>
)HTML";

std::string escape_html(const std::string& s) {
  std::string out;
  for (char ch : s) {
    switch (ch) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      default: out += ch;
    }
  }
  return out;
}

// JSON text safe inside <script>: "</" cannot end the element ("<\/" is the same JSON string).
std::string script_safe_json(const nlohmann::ordered_json& data) {
  const std::string text = data.dump(-1, ' ', true, nlohmann::json::error_handler_t::replace);
  std::string out;
  out.reserve(text.size() + 16);
  for (std::size_t i = 0; i < text.size(); ++i) {
    out += text[i];
    if (text[i] == '<' && i + 1 < text.size() && text[i + 1] == '/') out += '\\';
  }
  return out;
}

}  // namespace

namespace detail {
std::string_view report_style() { return kStyle; }
}  // namespace detail

std::string render_html(const nlohmann::ordered_json& data) {
  const std::string title = data.at("summary").at("title").get<std::string>();
  std::string page;
  page += "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n";
  page += "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n";
  page += "<title>strata report: " + escape_html(title) + "</title>\n<style>";
  page += detail::report_style();
  page += "</style>\n</head>\n<body>\n<header><h1>strata report</h1><p>" + escape_html(title) + "</p></header>\n";
  page += kBody;
  page += "<script type=\"application/json\" id=\"report-data\">";
  page += script_safe_json(data);
  page += "</script>\n<script>";
  page += detail::report_script();
  page += "</script>\n</body>\n</html>\n";
  return page;
}

}  // namespace strata::report
