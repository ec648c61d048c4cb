// model/zoo_json: the built-in model listing as JSON (`strata models --json`, the Python API's strata.models()).
#include "strata/model/model.hpp"

namespace strata::model {

nlohmann::ordered_json model_summary_json(const Model& m) {
  nlohmann::ordered_json j;
  j["name"] = m.name;
  j["family"] = m.family;
  j["num_layers"] = m.layers.size();
  j["num_blocks"] = m.num_blocks();
  j["hidden"] = m.hidden;
  j["heads"] = m.heads;
  j["seq"] = m.seq;
  j["vocab"] = m.vocab;
  j["params"] = total_params(m);
  return j;
}

nlohmann::ordered_json zoo_listing_json() {
  nlohmann::ordered_json arr = nlohmann::ordered_json::array();
  for (const auto& name : zoo_names()) arr.push_back(model_summary_json(zoo_model(name)));
  return arr;
}

}  // namespace strata::model
