// reports/scenario.cpp — strict scenario parsing and --set overrides.
#include "reports/scenario.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>

#include "core/data_path.hpp"

namespace ptsim::reports {
namespace fs = std::filesystem;
using core::InputError;
using core::Json;
using core::JsonReader;

std::string scenarios_directory() {
  return core::data_path("reports/scenarios");
}

std::vector<std::string> builtin_scenario_names() {
  std::vector<std::string> names;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(scenarios_directory(), ec))
    if (e.path().extension() == ".json") names.push_back(e.path().stem().string());
  std::sort(names.begin(), names.end());
  return names;
}

void apply_override(Json& json, const std::string& assignment) {
  auto eq = assignment.find('=');
  if (eq == std::string::npos || eq == 0)
    throw InputError(fmt::format("--set '{}': expected key=value, e.g. cluster.network=ib-edr", assignment));
  std::string path = assignment.substr(0, eq);
  std::string text = assignment.substr(eq + 1);
  // Valid JSON is parsed (strictly: duplicate keys are refused); anything else, a bare word or a number
  // beyond a double such as 1e400, is a string, which the field's reader then accepts or names as wrong.
  const Json value = Json::accept(text) ? core::parse_json_text(text, fmt::format("--set '{}'", assignment)) : Json(text);
  Json* node = &json;
  size_t start = 0;
  while (true) {
    size_t dot = path.find('.', start);
    std::string key = path.substr(start, dot == std::string::npos ? std::string::npos : dot - start);
    bool last = dot == std::string::npos;
    if (node->is_array()) {
      char* end = nullptr;
      long index = std::strtol(key.c_str(), &end, 10);
      if (*end != '\0' || index < 0 || static_cast<size_t>(index) >= node->size())
        throw InputError(fmt::format("--set '{}': '{}' is not an index of a {}-element list", assignment, key, node->size()));
      node = &(*node)[static_cast<size_t>(index)];
    } else if (node->is_object() || node->is_null()) {
      if (!last && !node->contains(key)) (*node)[key] = Json::object();
      node = &(*node)[key];
    } else {
      throw InputError(fmt::format("--set '{}': '{}' is inside a value, not an object", assignment, key));
    }
    if (last) break;
    start = dot + 1;
  }
  *node = value;
}

namespace {

sim::CollectiveAlgorithm parse_algorithm(JsonReader& r, const std::string& key) {
  std::string a = r.get_enum(key, {"auto", "ring", "tree", "hierarchical"}, "auto");
  if (a == "ring") return sim::CollectiveAlgorithm::ring;
  if (a == "tree") return sim::CollectiveAlgorithm::tree;
  if (a == "hierarchical") return sim::CollectiveAlgorithm::hierarchical;
  return sim::CollectiveAlgorithm::automatic;
}

// Megatron-LM's --overlap-grad-reduce and --overlap-param-gather (docs/parallelism.md): only a pipeline step
// runs its reductions after the backward, so only there do they change anything; a flag that does not apply
// is refused. Call after zero_stage and distributed_optimizer are read.
void parse_pipeline_overlap(JsonReader& t, models::Recipe& r) {
  r.overlap_grad_reduce = t.get_bool("overlap_grad_reduce", false);
  r.overlap_param_gather = t.get_bool("overlap_param_gather", false);
  const bool any = r.overlap_grad_reduce || r.overlap_param_gather;
  if (any && r.pipeline_parallel == 1)
    t.fail(r.overlap_grad_reduce ? "overlap_grad_reduce" : "overlap_param_gather",
           "pipeline_parallel > 1: without a pipeline the gradient buckets already overlap the backward (DDP) and "
           "the ZeRO-1 gathers the updates; remove it or add pipeline stages");
  if (r.overlap_param_gather && r.zero_stage != 1)
    t.fail("overlap_param_gather", fmt::format("zero_stage 1 or distributed_optimizer (it overlaps the distributed "
                                               "optimizer's parameter all-gathers; zero_stage is {})", r.zero_stage));
}

// Pipeline parallelism and ZeRO (docs/parallelism.md): 1 and 0 leave data + tensor parallelism as it was.
void parse_parallelism(JsonReader& t, models::Recipe& r) {
  r.pipeline_parallel = t.get_int("pipeline_parallel", core::ranges::parallel, 1);
  r.pipeline_schedule = models::parse_pipeline_schedule(t.get_enum("pipeline_schedule", {"gpipe", "1f1b", "interleaved"}, "1f1b"),
                                                        t.where("pipeline_schedule"));
  r.virtual_stages = t.get_int("virtual_stages", core::ranges::virtual_stages, 1);
  r.rank_order = models::parse_rank_order(t.get_enum("rank_order", {"tp-dp-pp", "tp-pp-dp"}, "tp-dp-pp"),
                                          t.where("rank_order"));
  r.zero_stage = static_cast<int>(t.get_int("zero_stage", core::ranges::zero_stage, 0));
  r.shard_group = t.get_int("shard_group", core::ranges::parallel, 0);
  r.sequence_parallel = t.get_bool("sequence_parallel", false);  // Megatron sequence parallelism (needs TP > 1)
  // Megatron-LM's --use-distributed-optimizer: optimizer state (fp32 masters and moments) sharded over the
  // data-parallel ranks, gradients reduce-scattered, parameters all-gathered — ZeRO stage 1 (docs/parallelism.md).
  if (t.get_bool("distributed_optimizer", false)) {
    if (t.has("zero_stage") && r.zero_stage != 1)
      t.fail("distributed_optimizer", fmt::format("no zero_stage, or zero_stage 1 (the distributed optimizer is "
                                                  "ZeRO stage 1; zero_stage is {})", r.zero_stage));
    r.zero_stage = 1;
  }
  parse_pipeline_overlap(t, r);
  if (t.has("stage_layers")) {
    const Json& list = t.raw("stage_layers");
    if (!list.is_array() || list.empty()) t.fail("stage_layers", "a list of transformer layers per model chunk");
    for (size_t i = 0; i < list.size(); ++i) {
      if (!list[i].is_number_integer() || list[i].get<long long>() < 1 ||
          list[i].get<long long>() > core::ranges::layers.max)
        t.fail("stage_layers", fmt::format("a list of layers per model chunk, each {} (entry {} is {})",
                                           core::describe(core::ranges::layers), i, list[i].dump()));
      r.stage_layers.push_back(list[i].get<int64_t>());
    }
  }
}

PhaseSpec parse_phase(JsonReader r, size_t index) {
  PhaseSpec p;
  p.name = r.get_string("name", fmt::format("phase{}", index + 1));
  p.seq_len = r.get_int("seq_len", core::ranges::seq_len, 128);
  p.micro_batch = r.get_int("micro_batch", core::ranges::micro_batch, 32);
  p.grad_accum = r.get_int("grad_accum", core::ranges::grad_accum, 0);
  p.global_batch = r.get_int("global_batch", core::ranges::global_batch, 0);
  p.steps = r.get_int("steps", core::ranges::steps, 0);
  p.epochs = r.get_number("epochs", core::ranges::epochs, 0);
  p.dataset_sequences = r.get_number("dataset_sequences", core::ranges::dataset_sequences, 0);
  p.max_predictions = r.get_int("max_predictions", core::ranges::max_predictions, 0);
  r.ignore("comment");
  r.finish();
  // The length of a phase is given one way: two ways could disagree, and picking one silently is a guess.
  if (p.steps > 0 && (p.epochs > 0 || p.dataset_sequences > 0))
    r.fail(p.epochs > 0 ? "epochs" : "dataset_sequences",
           fmt::format("either 'steps' ({}) or 'epochs' with 'dataset_sequences', not both", p.steps));
  if (p.steps == 0 && (p.epochs == 0 || p.dataset_sequences == 0))
    r.fail("steps", "either 'steps' or both 'epochs' and 'dataset_sequences'");
  return p;
}

}  // namespace

Scenario parse_scenario(const Json& json, const std::string& source) {
  JsonReader r(json, source);
  Scenario s;
  s.file = source;
  s.name = r.get_string("name", fs::path(source).stem().string());
  s.description = r.get_string("description", "");
  s.source = r.get_string("source", "");
  r.ignore("comment");
  r.ignore("assumptions");
  s.model = r.require_string("model");

  if (r.has("cluster")) {
    JsonReader c = r.child("cluster");
    s.node = c.get_string("node", s.node);
    s.nodes = static_cast<int>(c.get_int("nodes", core::ranges::nodes, 1));
    s.gpus_per_node = static_cast<int>(c.get_int("gpus_per_node", core::ranges::gpus_per_node, 0));
    s.network = c.get_string("network", "");
    if (c.has("fabric")) {
      JsonReader f = c.child("fabric");
      s.fabric.nodes_per_leaf = static_cast<int>(f.get_int("nodes_per_leaf", core::ranges::nodes_per_leaf, 0));
      s.fabric.oversubscription = f.get_positive("oversubscription", 1.0);
      if (s.fabric.oversubscription < 1) f.fail("oversubscription", "a ratio >= 1 (1 = non-blocking)");
      f.finish();
    }
    c.finish();
  }
  if (r.has("recipe")) {
    JsonReader t = r.child("recipe");
    s.stack = t.get_string("stack", "");
    s.recipe.precision = models::parse_precision(t.get_string("precision", "fp16"), t.where("precision"));
    s.recipe.optimizer = models::parse_optimizer(t.get_string("optimizer", "lamb"), t.where("optimizer"));
    s.recipe.tensor_parallel = t.get_int("tensor_parallel", core::ranges::parallel, 1);
    parse_parallelism(t, s.recipe);
    s.recipe.recompute_activations = t.get_bool("recompute", false);
    s.recipe.selective_recompute = t.get_bool("selective_recompute", false);
    s.recipe.bucket_bytes = t.get_number("bucket_mib", core::ranges::bucket_mib, 25) * 1024 * 1024;
    s.recipe.gradient_clipping = t.get_bool("gradient_clipping", true);
    s.algorithm = parse_algorithm(t, "collective_algorithm");
    s.channels = static_cast<int>(t.get_int("channels", core::ranges::channels, 0));
    s.exact = t.get_bool("exact_network", false);
    t.finish();
  }
  const Json& phases = r.raw("phases");
  if (!phases.is_array() || phases.empty()) r.fail("phases", "a non-empty list of phases");
  for (size_t i = 0; i < phases.size(); ++i)
    s.phases.push_back(parse_phase(JsonReader(phases[i], source, fmt::format("phases[{}]", i)), i));

  if (r.has("overheads")) {
    JsonReader o = r.child("overheads");
    s.overheads.startup_seconds = o.get_number("startup_seconds", core::ranges::seconds, 0);
    s.overheads.checkpoint_seconds = o.get_number("checkpoint_seconds", core::ranges::seconds, 0);
    s.overheads.checkpoint_every_steps = o.get_int("checkpoint_every_steps", core::ranges::every_steps, 0);
    s.overheads.evaluation_seconds = o.get_number("evaluation_seconds", core::ranges::seconds, 0);
    s.overheads.evaluation_every_steps = o.get_int("evaluation_every_steps", core::ranges::every_steps, 0);
    o.finish();
  }
  if (r.has("prices")) {
    JsonReader p = r.child("prices");
    s.prices.set = p.get_string("set", "");
    s.prices.rental = p.get_string("rental", "");
    s.prices.spot = p.get_string("spot", "");
    s.prices.purchase = p.get_string("purchase", "");
    s.prices.network_purchase_usd_per_node = p.get_non_negative("network_purchase_usd_per_node", 0);
    s.prices.amortisation_years = p.get_positive("amortisation_years", 3);
    s.prices.electricity = p.get_string("electricity", s.prices.electricity);
    s.prices.pue = p.get_string("pue", s.prices.pue);
    s.prices.spot_preemption_overhead = p.get_non_negative("spot_preemption_overhead", 0.1);
    p.finish();
  }
  if (r.has("published")) {
    const Json& list = r.raw("published");
    if (!list.is_array()) r.fail("published", "a list of {metric, value, tolerance, source}");
    for (size_t i = 0; i < list.size(); ++i) {
      JsonReader t(list[i], source, fmt::format("published[{}]", i));
      PublishedTarget target;
      target.metric = t.require_enum("metric", {"time_to_train_seconds", "scaling_efficiency", "rental_usd",
                                                "rental_usd_at_published_time", "purchase_usd", "tflops_per_gpu", "cluster_pflops",
                                                "tokens_per_second_per_gpu"});
      target.value = t.require_positive("value");
      target.tolerance = t.require_positive("tolerance");
      target.source = t.require_string("source");
      if (target.metric == "rental_usd_at_published_time") target.published_hours = t.require_positive("published_hours");
      target.known_gap = t.get_string("known_gap", "");
      t.ignore("comment");
      t.finish();
      s.published.push_back(target);
    }
  }
  if (r.has("scaling_baseline")) {
    JsonReader b = r.child("scaling_baseline");
    ScalingBaseline base;
    base.model = b.require_string("model");
    base.micro_batch = b.require_int("micro_batch", core::ranges::micro_batch);
    base.seq_len = b.require_int("seq_len", core::ranges::seq_len);
    b.finish();
    s.scaling_baseline = base;
  }
  r.finish();
  return s;
}

std::string unknown_scenario_message(const std::string& name_or_path) {
  return fmt::format("unknown scenario '{}': not a file and not a shipped scenario (expected one of: {})", name_or_path,
                     fmt::join(builtin_scenario_names(), ", "));
}

std::string scenario_path(const std::string& name_or_path) {
  std::string path = name_or_path;
  if (!fs::exists(path)) {
    path = scenarios_directory() + "/" + name_or_path + ".json";
    if (!fs::exists(path)) throw InputError(unknown_scenario_message(name_or_path));
  }
  return path;
}

bool ScenarioEdits::names(const std::string& key) const {
  return std::any_of(keys.begin(), keys.end(), [&](const std::string& edited) {
    return edited == key || (key.starts_with(edited) && key[edited.size()] == '.');
  });
}

ScenarioEdits scenario_edits(const Json& file_json, const std::vector<std::string>& assignments) {
  ScenarioEdits edits;
  edits.file_node = Scenario{}.node;
  if (file_json.is_object() && file_json.contains("cluster") && file_json["cluster"].is_object() &&
      file_json["cluster"].contains("node") && file_json["cluster"]["node"].is_string())
    edits.file_node = file_json["cluster"]["node"].get<std::string>();
  for (const auto& a : assignments) edits.keys.push_back(a.substr(0, a.find('=')));
  return edits;
}

Json load_base_scenario(const std::string& name_or_path, const std::vector<std::string>& overrides,
                        std::string* path, ScenarioEdits* edits) {
  const std::string file = scenario_path(name_or_path);
  Json json = core::load_json_file(file);
  if (edits) *edits = scenario_edits(json, overrides);
  for (const auto& o : overrides) apply_override(json, o);
  if (path) *path = file;
  return json;
}

std::string set_assignment(const std::string& key, const Json& value) {
  const bool bare = value.is_string() && !Json::accept(value.get<std::string>());
  return key + "=" + (bare ? value.get<std::string>() : value.dump());
}

Scenario parse_edited_scenario(Json json, const std::vector<std::string>& overrides, const std::string& source) {
  ScenarioEdits edits = scenario_edits(json, overrides);
  for (const auto& o : overrides) apply_override(json, o);
  if (overrides.empty()) return parse_scenario(json, source);
  try {
    Scenario edited = parse_scenario(json, source);
    edited.edits = std::move(edits);
    // The file's description names its own recipe and cluster; say that this run changed them.
    if (!edited.description.empty())
      edited.description += fmt::format(" [edited: --set {}]", fmt::join(overrides, ", --set "));
    return edited;
  } catch (const InputError& e) {
    // The bad value may be the user's --set, not the file: say the file was edited.
    throw InputError(fmt::format("{} [the scenario as edited by --set {}]", e.what(), fmt::join(overrides, ", --set ")));
  }
}

Scenario load_scenario(const std::string& name_or_path, const std::vector<std::string>& overrides) {
  std::string path;
  Json json = load_base_scenario(name_or_path, {}, &path);
  return parse_edited_scenario(std::move(json), overrides, path);
}

}  // namespace ptsim::reports
