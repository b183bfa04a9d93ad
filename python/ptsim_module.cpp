// python/ptsim_module.cpp — `import ptsim`: predict, sweep, plan, validate and the profiles from Python, through
// the library calls the CLI makes; each answer is the CLI's documented JSON as Python objects (docs/python.md,
// docs/json-formats.md). Input errors raise ptsim.InputError (a ValueError) with the CLI's message; a
// configuration that does not fit raises ptsim.InfeasibleError (an InputError). The GIL is released while
// ptsim computes. Not here: training, the server, file outputs.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <chrono>
#include <string>
#include <vector>

#include "calibration/published_fit.hpp"
#include "core/error.hpp"
#include "core/json_reader.hpp"
#include "hwprofiles/profile_json.hpp"
#include "reports/auto_recipe.hpp"
#include "reports/plan_output.hpp"
#include "reports/plan_search.hpp"
#include "reports/prediction.hpp"
#include "reports/prediction_cache.hpp"
#include "reports/scenario.hpp"
#include "reports/sweep.hpp"
#include "reports/sweep_output.hpp"
#include "reports/validation.hpp"

namespace py = pybind11;
using ptsim::core::Json;

namespace {

// The shipped profiles, read once per process (as `ptsim serve` does).
const ptsim::hwprofiles::ProfileSet& profiles() {
  static const ptsim::hwprofiles::ProfileSet set = ptsim::hwprofiles::load_profiles();
  return set;
}

// Python objects cross as JSON text: json.dumps on the way in, json.loads on the way out.
Json to_json(const py::handle& object, const std::string& what) {
  const std::string text = py::module_::import("json").attr("dumps")(object).cast<std::string>();
  return ptsim::core::parse_json_text(text, what);
}
py::object to_python(const Json& json) { return py::module_::import("json").attr("loads")(json.dump()); }

// {"cluster.nodes": 64} → "cluster.nodes=64", as --set and the server's "set" read it (a string that is not
// itself JSON text stays a bare word).
std::vector<std::string> assignments(const py::object& set) {
  std::vector<std::string> out;
  if (set.is_none()) return out;
  if (!py::isinstance<py::dict>(set)) throw ptsim::core::InputError("set: expected a dict of scenario key → value");
  const Json edits = to_json(set, "set");  // a named local: items() of a temporary would dangle in the loop
  for (const auto& [key, value] : edits.items()) out.push_back(ptsim::reports::set_assignment(key, value));
  return out;
}

// A shipped scenario's name, a scenario file, or a scenario as a dict; `set` edits it as --set does.
ptsim::reports::Scenario scenario_of(const py::object& scenario, const py::object& set) {
  const std::vector<std::string> edits = assignments(set);
  if (py::isinstance<py::str>(scenario)) return ptsim::reports::load_scenario(scenario.cast<std::string>(), edits);
  if (py::isinstance<py::dict>(scenario))
    return ptsim::reports::parse_edited_scenario(to_json(scenario, "scenario"), edits, "scenario (a dict)");
  throw ptsim::core::InputError("scenario: expected a shipped scenario's name, a scenario file, or a dict");
}

py::object predict(const py::object& scenario, const py::object& set) {
  const ptsim::reports::Scenario s = scenario_of(scenario, set);
  Json answer;
  {
    py::gil_scoped_release unlocked;
    answer = ptsim::reports::prediction_to_json(ptsim::reports::predict_scenario(s, profiles()));
  }
  return to_python(answer);
}

// The sweep as a sweep file would give it (docs/sweep.md): base, set, one axis per `vary` key (a list of
// values, or a --vary range such as "8..64x2"), constraints and the objective.
ptsim::reports::SweepSpec sweep_spec(const py::object& scenario, const py::dict& vary, const py::object& set,
                                     bool auto_recipe, const py::object& deadline, const py::object& budget_usd,
                                     const py::object& max_gpus, const std::string& objective) {
  Json file = {{"base", to_json(scenario, "scenario")}, {"axes", Json::array()}, {"auto_recipe", auto_recipe},
               {"objective", objective}};
  if (!set.is_none()) file["set"] = to_json(set, "set");
  for (const auto& [key, values] : vary) {
    const std::string name = py::str(key);
    Json axis = {{"key", name}};
    if (py::isinstance<py::str>(values)) axis["values"] = ptsim::reports::parse_axis(name + "=" + py::str(values).cast<std::string>()).values;
    else axis["values"] = to_json(values, "vary['" + name + "']");
    file["axes"].push_back(axis);
  }
  if (!deadline.is_none()) file["deadline"] = to_json(deadline, "deadline");
  if (!budget_usd.is_none()) file["budget_usd"] = to_json(budget_usd, "budget_usd");
  if (!max_gpus.is_none()) file["max_gpus"] = to_json(max_gpus, "max_gpus");
  return ptsim::reports::parse_sweep_json(file, "ptsim.sweep");
}

py::object sweep(const py::object& scenario, const py::dict& vary, const py::object& set, bool auto_recipe,
                 const py::object& deadline, const py::object& budget_usd, const py::object& max_gpus,
                 const std::string& objective, int threads) {
  if (threads < 0 || threads > 1024) throw ptsim::core::InputError("threads: expected 0 (all cores) to 1024");
  const ptsim::reports::SweepSpec spec =
      sweep_spec(scenario, vary, set, auto_recipe, deadline, budget_usd, max_gpus, objective);
  Json answer;
  {
    py::gil_scoped_release unlocked;
    answer = ptsim::reports::run_sweep_to_json(spec, profiles(), threads);
  }
  return to_python(answer);
}

py::object plan(const py::object& scenario, const py::object& set) {
  const ptsim::reports::Scenario s = scenario_of(scenario, set);
  Json answer;
  {
    py::gil_scoped_release unlocked;
    const std::vector<int64_t> globals = ptsim::reports::phase_global_batches(s, profiles());
    const auto start = std::chrono::steady_clock::now();
    ptsim::reports::PredictionCache cache;
    const ptsim::reports::PlanSearch search = ptsim::reports::search_plans(s, globals, profiles(), cache);
    if (!search.best()) ptsim::reports::refuse_plan(s, search, profiles());
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    answer = ptsim::reports::plan_to_json(s, search, seconds);
  }
  return to_python(answer);
}

py::object validate(const std::vector<std::string>& scenarios) {
  Json answer;
  {
    py::gil_scoped_release unlocked;
    answer = ptsim::reports::validate_published(profiles(), ptsim::calibration::default_published_runs_path(), scenarios);
  }
  answer.erase("runs_file");  // as `ptsim validate --format json` prints it
  return to_python(answer);
}

}  // namespace

PYBIND11_MODULE(ptsim, m) {
  m.doc() = "ptsim: how long and how many dollars pretraining takes on a GPU cluster (docs/python.md)";
  static py::exception<ptsim::core::InputError> input_error(m, "InputError", PyExc_ValueError);
  static py::exception<ptsim::core::InfeasibleError> infeasible_error(m, "InfeasibleError", input_error.ptr());
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const ptsim::core::InfeasibleError& e) {
      infeasible_error(e.what());
    } catch (const ptsim::core::InputError& e) {
      input_error(e.what());
    }
  });
  m.def("predict", &predict, py::arg("scenario") = "t4-academic-cluster", py::arg("set") = py::none(),
        "Time to train and cost of a scenario (a shipped name, a file or a dict), edited by `set` "
        "({key: value}, as --set): the JSON of `ptsim predict --format json`.");
  m.def("sweep", &sweep, py::arg("scenario") = "t4-academic-cluster", py::arg("vary") = py::dict(),
        py::arg("set") = py::none(), py::arg("auto_recipe") = false, py::arg("deadline") = py::none(),
        py::arg("budget_usd") = py::none(), py::arg("max_gpus") = py::none(), py::arg("objective") = "rental",
        py::arg("threads") = 0,
        "Every configuration of the axes in `vary` ({key: [values] or 'A..BxF'}): the JSON of "
        "`ptsim sweep --format json`; result['configurations'] is one row per configuration.");
  m.def("plan", &plan, py::arg("scenario"), py::arg("set") = py::none(),
        "The fastest TP x PP x DP x ZeRO layout that fits: the JSON of `ptsim plan --format json`.");
  m.def("validate", &validate, py::arg("scenarios") = std::vector<std::string>{},
        "Published results against predictions: the JSON of `ptsim validate --format json`.");
  m.def("profiles", [] { return to_python(ptsim::hwprofiles::profiles_json(profiles(), ptsim::hwprofiles::hwprofiles_directory())); },
        "Every GPU, stack, node, network and price profile: the JSON of `ptsim profiles list --format json`.");
  m.def("scenarios", [] { return ptsim::reports::builtin_scenario_names(); }, "The shipped scenarios' names.");
}
