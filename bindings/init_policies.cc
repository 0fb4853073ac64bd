// Area: policies. A routing policy written in Python: subclass fleetsim.RoutingPolicy, register
// it by name, and scenarios use it like a built-in one. The simulation runs with the GIL
// released; the trampoline takes it only around the calls into Python.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <algorithm>
#include <cmath>
#include <optional>
#include <set>
#include <sstream>

#include "bindings/common.h"
#include "policies/policy.h"
#include "sim/errors.h"

namespace fleetsim::py_bindings {
namespace {

// Names registered from Python, and what they were registered with: {name: (cls, description,
// params)}. Both live as long as the process, so nothing is released after finalization.
std::set<std::string>& python_policy_names() {
  static auto* names = new std::set<std::string>();
  return *names;
}
py::dict& python_policy_table() {
  static auto* table = new py::dict();
  return *table;
}

// Which optional methods a Python subclass defines.
struct Hooks {
  bool on_dispatched = true;
  bool on_first_token = true;
  bool on_finished = true;
  bool pool_for = true;
  bool routing_delay_ns = true;
  bool on_kv_events = false;  // the pods publish KV events only for a policy that reads them
};

const char* kv_event_kind_name(KvEventKind kind) {
  switch (kind) {
    case KvEventKind::kStored:
      return "stored";
    case KvEventKind::kRemoved:
      return "removed";
    case KvEventKind::kCleared:
      return "cleared";
  }
  return "unknown";
}

// The value of an int-like Python result (anything with __index__ but a float or a bool), or
// nothing; one beyond 64 bits is a ValueError naming the policy and its `hook`.
std::optional<std::int64_t> index_of(const py::object& result, const std::string& policy,
                                     const char* hook) {
  if (result.is_none() || py::isinstance<py::float_>(result) || py::isinstance<py::bool_>(result) ||
      !py::hasattr(result, "__index__")) {
    return std::nullopt;
  }
  const py::object index = result.attr("__index__")();
  if (!py::isinstance<py::int_>(index)) return std::nullopt;
  int overflow = 0;
  const long long v = PyLong_AsLongLongAndOverflow(index.ptr(), &overflow);
  if (overflow != 0) {
    throw py::value_error("routing policy '" + policy + "': " + hook + " returned " +
                          py::repr(result).cast<std::string>() + ", beyond a 64-bit integer");
  }
  return static_cast<std::int64_t>(v);
}

// A routing delay longer than this is a bug in the policy, not a delay: refuse it by name.
constexpr std::int64_t kMaxRoutingDelayNs = 86'400'000'000'000;  // one day

// The trampoline: C++ calls of a Python subclass's methods, each under the GIL.
class PyRoutingPolicy : public RoutingPolicy {
 public:
  int pick(const Request& request, std::span<const PodState> candidates,
           const RouteContext& ctx) override {
    return call_python(calls_, [&] { return pick_in_python(request, candidates, ctx); });
  }

  void on_dispatched(const Request& request, int pod) override {
    if (!hooks_.on_dispatched) return;
    call_python(calls_, [&] { call_hook("on_dispatched", request, pod); });
  }

  void on_first_token(const Request& request, int pod) override {
    if (!hooks_.on_first_token) return;
    call_python(calls_, [&] { call_hook("on_first_token", request, pod); });
  }

  void on_finished(const Request& request, int pod) override {
    if (!hooks_.on_finished) return;
    call_python(calls_, [&] { call_hook("on_finished", request, pod); });
  }

  // The pool index from Python's pool_for(); None means any pool.
  int pool_for(const Request& request) const override {
    if (!hooks_.pool_for) return -1;
    return call_python(calls_, [&] { return pool_for_in_python(request); });
  }

  bool wants_kv_events() const override { return hooks_.on_kv_events; }

  void on_kv_events(int pod, std::span<const KvEvent> events) override {
    if (!hooks_.on_kv_events || events.empty()) return;
    call_python(calls_, [&] { kv_events_in_python(pod, events); });
  }

  // Nanoseconds from Python's routing_delay_ns(); the gateway waits them before pick().
  TimeNs routing_delay(const Request& request) const override {
    if (!hooks_.routing_delay_ns) return 0;
    return call_python(calls_, [&] { return routing_delay_in_python(request); });
  }

  std::vector<PolicyCounter> counters() const override {
    return call_python(calls_, [&] { return counters_in_python(); });
  }

  // Called by the factory, under the GIL, before setup(); `calls` runs its Python calls.
  void bind(std::string name, const PolicyContext& ctx, py::dict params, const Hooks& hooks,
            PythonCallQueue* calls) {
    name_ = std::move(name);
    context_ = ctx;
    params_ = std::move(params);
    bound_ = true;
    hooks_ = hooks;
    calls_ = calls;
  }

  const std::string& name() const { return name_; }
  py::object context() const { return bound_ ? py::cast(context_) : py::none(); }
  py::dict params() const { return params_; }

 private:
  // The calls themselves, under the GIL on the thread that serves the run's Python calls.
  int pick_in_python(const Request& request, std::span<const PodState> candidates,
                     const RouteContext& ctx) {
    py::function override = py::get_override(static_cast<const RoutingPolicy*>(this), "pick");
    if (!override) {
      throw py::type_error("routing policy '" + name_ + "' does not define pick()");
    }
    py::list pods;
    for (const PodState& p : candidates) pods.append(py::cast(p));
    const py::object result = override(py::cast(request), pods, py::cast(ctx));
    const auto index = index_of(result, name_, "pick()");
    if (!index) {
      throw py::type_error("routing policy '" + name_ +
                           "': pick() must return a pod index (int), got " +
                           py::repr(result).cast<std::string>());
    }
    const std::int64_t pod = *index;
    if (pod == -1) return -1;  // refuses: the client gets a 503
    for (const PodState& p : candidates) {
      if (p.index == pod) return p.index;
    }
    std::ostringstream valid;
    for (const PodState& p : candidates) valid << p.index << ", ";
    throw py::value_error(
        "routing policy '" + name_ + "': pick() returned pod " + std::to_string(pod) +
        ", which is not a candidate (candidates: " + valid.str() + "or -1 to refuse the request)");
  }

  void call_hook(const char* hook, const Request& request, int pod) {
    if (py::function f = py::get_override(static_cast<const RoutingPolicy*>(this), hook)) {
      f(py::cast(request), pod);
    }
  }

  int pool_for_in_python(const Request& request) const {
    py::function f = py::get_override(static_cast<const RoutingPolicy*>(this), "pool_for");
    if (!f) return -1;
    const py::object result = f(py::cast(request));
    if (result.is_none()) return -1;
    const int pools = std::max<int>(1, static_cast<int>(context_.pools.size()));
    const auto pool = index_of(result, name_, "pool_for()");
    if (!pool) {
      throw py::type_error("routing policy '" + name_ +
                           "': pool_for() must return a pool index (int) or None, got " +
                           py::repr(result).cast<std::string>());
    }
    if (*pool < -1 || *pool >= pools) {
      throw py::value_error("routing policy '" + name_ + "': pool_for() returned " +
                            std::to_string(*pool) + "; a pool index is 0.." +
                            std::to_string(pools - 1) +
                            " (context.pools), or None (or -1) for any pool");
    }
    return static_cast<int>(*pool);
  }

  // One call per delivery: runs of events of one kind become (kind, uint64 array of hashes),
  // as vLLM batches a step's hashes in one BlockStored / BlockRemoved.
  void kv_events_in_python(int pod, std::span<const KvEvent> events) {
    py::function f = py::get_override(static_cast<const RoutingPolicy*>(this), "on_kv_events");
    if (!f) return;
    py::list batches;
    for (std::size_t i = 0; i < events.size();) {
      std::size_t end = i;
      while (end < events.size() && events[end].kind == events[i].kind) ++end;
      py::array_t<std::uint64_t> hashes(
          static_cast<py::ssize_t>(events[i].kind == KvEventKind::kCleared ? 0 : end - i));
      auto out = hashes.mutable_unchecked<1>();
      for (py::ssize_t k = 0; k < hashes.shape(0); ++k) {
        out(k) = events[i + static_cast<std::size_t>(k)].hash;
      }
      batches.append(py::make_tuple(kv_event_kind_name(events[i].kind), std::move(hashes)));
      i = end;
    }
    f(pod, batches);
  }

  TimeNs routing_delay_in_python(const Request& request) const {
    py::function f = py::get_override(static_cast<const RoutingPolicy*>(this), "routing_delay_ns");
    if (!f) return 0;
    const py::object result = f(py::cast(request));
    const auto delay = index_of(result, name_, "routing_delay_ns()");
    if (!delay) {
      throw py::type_error("routing policy '" + name_ +
                           "': routing_delay_ns() must return a number of nanoseconds (int), "
                           "got " +
                           py::repr(result).cast<std::string>());
    }
    if (*delay < 0 || *delay > kMaxRoutingDelayNs) {
      throw py::value_error("routing policy '" + name_ + "': routing_delay_ns() returned " +
                            std::to_string(*delay) + "; expected 0 to " +
                            std::to_string(kMaxRoutingDelayNs) + " nanoseconds (one day)");
    }
    return *delay;
  }

  // {name: number} from Python's counters(), in name order.
  std::vector<PolicyCounter> counters_in_python() const {
    py::function f = py::get_override(static_cast<const RoutingPolicy*>(this), "counters");
    if (!f) return {};
    const py::object result = f();
    if (!py::isinstance<py::dict>(result)) {
      throw py::type_error("routing policy '" + name_ +
                           "': counters() must return a dict {name: number}, got " +
                           py::repr(result).cast<std::string>());
    }
    std::vector<PolicyCounter> out;
    for (const auto& [k, v] : result.cast<py::dict>()) {
      const std::string key = py::str(k).cast<std::string>();
      if (py::isinstance<py::bool_>(v) ||
          !(py::isinstance<py::int_>(v) || py::isinstance<py::float_>(v) ||
            py::hasattr(v, "__float__"))) {
        throw py::type_error("routing policy '" + name_ + "': counters()['" + key +
                             "'] must be a number, got " + py::repr(v).cast<std::string>());
      }
      const double x = py::float_(py::reinterpret_borrow<py::object>(v)).cast<double>();
      if (!std::isfinite(x)) {
        throw py::value_error("routing policy '" + name_ + "': counters()['" + key +
                              "'] must be finite, got " + py::repr(v).cast<std::string>());
      }
      out.push_back({key, x});
    }
    std::sort(out.begin(), out.end(),
              [](const PolicyCounter& a, const PolicyCounter& b) { return a.name < b.name; });
    return out;
  }

  std::string name_ = "<unregistered>";
  PolicyContext context_;
  py::dict params_;
  bool bound_ = false;
  // Hooks a subclass leaves alone are not called, so they cost no GIL round trip.
  Hooks hooks_;
  PythonCallQueue* calls_ = nullptr;
};

PyRoutingPolicy& as_py(RoutingPolicy& p) {
  auto* py_policy = dynamic_cast<PyRoutingPolicy*>(&p);
  if (py_policy == nullptr) throw InternalError("a RoutingPolicy without its Python trampoline");
  return *py_policy;
}

// What the gateway owns: a Python policy object kept alive until the arm ends. The last
// reference is dropped under the GIL, on the thread that runs the run's Python calls.
class PythonPolicyHandle final : public RoutingPolicy {
 public:
  PythonPolicyHandle(py::object obj, PyRoutingPolicy* impl, PythonCallQueue* calls)
      : obj_(std::move(obj)), impl_(impl), calls_(calls) {}
  ~PythonPolicyHandle() override {
    call_python(calls_, [this] { py::object last = std::move(obj_); });
  }
  PythonPolicyHandle(const PythonPolicyHandle&) = delete;
  PythonPolicyHandle& operator=(const PythonPolicyHandle&) = delete;

  int pick(const Request& request, std::span<const PodState> candidates,
           const RouteContext& ctx) override {
    return impl_->pick(request, candidates, ctx);
  }
  void on_dispatched(const Request& request, int pod) override {
    impl_->on_dispatched(request, pod);
  }
  void on_first_token(const Request& request, int pod) override {
    impl_->on_first_token(request, pod);
  }
  void on_finished(const Request& request, int pod) override { impl_->on_finished(request, pod); }
  int pool_for(const Request& request) const override { return impl_->pool_for(request); }
  TimeNs routing_delay(const Request& request) const override {
    return impl_->routing_delay(request);
  }
  bool wants_kv_events() const override { return impl_->wants_kv_events(); }
  void on_kv_events(int pod, std::span<const KvEvent> events) override {
    impl_->on_kv_events(pod, events);
  }
  std::vector<PolicyCounter> counters() const override { return impl_->counters(); }

 private:
  py::object obj_;
  PyRoutingPolicy* impl_;
  PythonCallQueue* calls_;
};

// {name: default} or {name: (default, help)} -> a ParamSpec; the type follows the default.
ParamSpec spec_from(const py::object& params) {
  ParamSpec spec;
  if (params.is_none()) return spec;
  if (!py::isinstance<py::dict>(params)) {
    throw py::type_error("params must be a dict {name: default} or {name: (default, help)}");
  }
  for (const auto& [k, v] : params.cast<py::dict>()) {
    const std::string name = py::str(k);
    py::object def = py::reinterpret_borrow<py::object>(v);
    std::string help = "(no help given)";
    if (py::isinstance<py::tuple>(v)) {
      const auto t = v.cast<py::tuple>();
      if (t.size() != 2) {
        throw py::value_error("params['" + name + "']: expected default or (default, help)");
      }
      def = t[0];
      help = py::str(t[1]);
    }
    if (py::isinstance<py::bool_>(def)) {
      spec.boolean(name, def.cast<bool>(), help);
    } else if (py::isinstance<py::int_>(def)) {
      spec.integer(name, def.cast<std::int64_t>(), help);
    } else if (py::isinstance<py::float_>(def)) {
      spec.real(name, def.cast<double>(), help);
    } else if (py::isinstance<py::str>(def)) {
      spec.text(name, def.cast<std::string>(), help);
    } else {
      throw py::type_error("params['" + name +
                           "']: the default must be a bool, int, float or str, "
                           "got " +
                           py::repr(def).cast<std::string>());
    }
  }
  return spec;
}

bool overrides_hook(const py::object& cls, const char* hook) {
  const py::object base = py::module_::import("fleetsim._core").attr("RoutingPolicy");
  return !cls.attr(hook).is(base.attr(hook));
}

void register_policy(const std::string& name, const py::object& cls, const std::string& description,
                     const py::object& params) {
  const py::object base = py::module_::import("fleetsim._core").attr("RoutingPolicy");
  if (!py::isinstance<py::type>(cls) ||
      !py::module_::import("builtins").attr("issubclass")(cls, base).cast<bool>()) {
    throw py::type_error("register_policy: cls must be a subclass of fleetsim.RoutingPolicy");
  }
  if (!overrides_hook(cls, "pick")) {
    throw py::type_error("register_policy: " + py::str(cls).cast<std::string>() +
                         " does not define pick(request, candidates, ctx)");
  }
  if (name.empty()) throw py::value_error("register_policy: the name must not be empty");
  auto& reg = PolicyRegistry::instance();
  if (reg.contains(name) && !python_policy_names().count(name)) {
    throw py::value_error("register_policy: '" + name +
                          "' is a built-in policy; choose another name");
  }
  ParamSpec spec = spec_from(params);
  // The class lives as long as the process (the registry is a process-wide static).
  auto* cls_ref = new py::object(cls);
  const Hooks hooks{overrides_hook(cls, "on_dispatched"),    overrides_hook(cls, "on_first_token"),
                    overrides_hook(cls, "on_finished"),      overrides_hook(cls, "pool_for"),
                    overrides_hook(cls, "routing_delay_ns"), overrides_hook(cls, "on_kv_events")};
  PolicyRegistry::Factory factory =
      [cls_ref, name, hooks](const Params& p,
                             const PolicyContext& ctx) -> std::unique_ptr<RoutingPolicy> {
    PythonCallQueue* calls = PythonCallQueue::of_this_thread();
    return call_python(calls, [&]() -> std::unique_ptr<RoutingPolicy> {
      py::dict kwargs = params_to_py(p);
      py::object obj = (*cls_ref)(**kwargs);
      PyRoutingPolicy& impl = as_py(obj.cast<RoutingPolicy&>());
      impl.bind(name, ctx, kwargs, hooks, calls);
      obj.attr("setup")(py::cast(ctx));
      return std::make_unique<PythonPolicyHandle>(std::move(obj), &impl, calls);
    });
  };
  reg.add({name, description, std::move(spec), std::move(factory)});
  python_policy_names().insert(name);
  python_policy_table()[py::str(name)] = py::make_tuple(cls, description, params);
}

}  // namespace

bool is_python_policy(const std::string& name) { return python_policy_names().count(name) > 0; }

void init_policies(py::module_& m) {
  py::class_<Request>(m, "Request",
                      "A request as a router sees it (a read-only copy). Passed to "
                      "RoutingPolicy.pick, on_dispatched and on_finished.")
      .def_readonly("id", &Request::id, "Request id, dense from 0 within an arm.")
      .def_readonly("conversation", &Request::conversation,
                    "Conversation index (-1: not part of a conversation).")
      .def_readonly("turn", &Request::turn, "1-based turn within its conversation.")
      .def_readonly("connection", &Request::connection,
                    "The client's keep-alive connection it came on (a closed-loop worker, a "
                    "stream, an agent session); -1: a connection of its own.")
      .def_readonly("session", &Request::session, "Session id as a client would send it.")
      .def_readonly("model", &Request::model, "Model name the request asks for.")
      .def_readonly("prompt_tokens", &Request::prompt_tokens, "Prompt length in tokens.")
      .def_readonly("output_tokens", &Request::output_tokens, "Tokens the request will generate.")
      .def_readonly("arrival_ns", &Request::arrival,
                    "When the client sent it, its first attempt (simulated ns).")
      .def_readonly("attempt", &Request::attempt, "1 for the first try; a retry is attempt + 1.")
      .def_readonly("measured", &Request::measured,
                    "False for warm-up requests (they load the fleet; summaries leave them out).")
      .def_readonly("tier", &Request::tier, "Tier hint for tier routing ('' = none).")
      .def_readonly("slo_class", &Request::slo_class, "SLO class ('' = default).")
      .def_property_readonly(
          "prefix_key", [](const Request& r) { return r.prefix_key(); },
          "Key of the prompt's leading content (its system prompt) as a gateway hashing the "
          "leading bytes would see it; equal keys mean equal prefixes.")
      .def_property_readonly(
          "num_block_hashes",
          [](const Request& r) { return r.block_hashes ? r.block_hashes->size() : size_t{0}; },
          "Number of chained block hashes (full blocks of prompt + output).")
      .def_readonly("hash_block_size", &Request::hash_block_size,
                    "Tokens per hashed block (the engine's block size).")
      .def_property_readonly(
          "block_hashes",
          [](const Request& r) {
            if (!r.block_hashes) return py::array_t<std::uint64_t>(0);
            return py::array_t<std::uint64_t>(static_cast<py::ssize_t>(r.block_hashes->size()),
                                              r.block_hashes->data());
          },
          "Chained hashes of every full block of prompt + output, as a numpy uint64 array (a "
          "copy). Two requests share a prefix of n blocks iff their first n hashes are equal.")
      .def_property_readonly(
          "segments",
          [](const Request& r) {
            py::list out;
            for (const Segment& s : r.prompt) out.append(py::make_tuple(s.content_id, s.tokens));
            return out;
          },
          "The prompt as (content_id, tokens) segments: system prompt, then each question and "
          "answer. Equal ids mean equal text.")
      .def("__repr__", [](const Request& r) {
        std::ostringstream os;
        os << "<fleetsim.Request id=" << r.id << " conversation=" << r.conversation
           << " turn=" << r.turn << " prompt_tokens=" << r.prompt_tokens
           << " output_tokens=" << r.output_tokens << ">";
        return os.str();
      });
  refuse_bare_new(m.attr("Request"), "the simulator passes them to a RoutingPolicy's hooks.");

  py::class_<PodState>(m, "PodState",
                       "What a router can see of one pod (a read-only snapshot taken when the "
                       "request is routed).")
      .def(py::init([](int index, std::string name, bool healthy, std::int32_t inflight_requests,
                       std::int64_t inflight_tokens, std::int32_t waiting, std::int32_t running,
                       double kv_usage, std::int32_t pool) {
             return PodState{
                 index,   std::move(name), healthy, inflight_requests, inflight_tokens, waiting,
                 running, kv_usage,        pool};
           }),
           py::arg("index") = 0, py::arg("name") = "", py::arg("healthy") = true,
           py::arg("inflight_requests") = 0, py::arg("inflight_tokens") = 0, py::arg("waiting") = 0,
           py::arg("running") = 0, py::arg("kv_usage") = 0.0, py::arg("pool") = 0,
           "Builds a PodState, e.g. to unit-test a policy's pick() without a simulation.")
      .def_readonly("index", &PodState::index, "The pod's index in the fleet: what pick() returns.")
      .def_readonly("name", &PodState::name, "The pod's name ('pod-0', ...).")
      .def_readonly("healthy", &PodState::healthy, "Whether the gateway believes the pod is up.")
      .def_readonly("inflight_requests", &PodState::inflight_requests,
                    "Requests this gateway dispatched to the pod that have not finished.")
      .def_readonly("inflight_tokens", &PodState::inflight_tokens,
                    "Prompt + expected output tokens of those requests.")
      .def_readonly("waiting", &PodState::waiting, "The engine's waiting-queue length.")
      .def_readonly("running", &PodState::running, "The engine's running batch size.")
      .def_readonly("kv_usage", &PodState::kv_usage, "Fraction of KV blocks in use, 0..1.")
      .def_readonly("pool", &PodState::pool,
                    "Index of the pod's pool in PolicyContext.pools (0 in a fleet without "
                    "fleet.pools).")
      .def("__repr__", [](const PodState& p) {
        std::ostringstream os;
        os << "<fleetsim.PodState " << p.index << " '" << p.name << "' inflight "
           << p.inflight_requests << " (" << p.inflight_tokens << " tokens), waiting " << p.waiting
           << ", running " << p.running << ", kv " << p.kv_usage << ">";
        return os.str();
      });

  py::class_<PolicyContext>(m, "PolicyContext",
                            "Fixed facts a policy may need, given once per arm to setup().")
      .def(py::init<>(), "An empty context (for tests).")
      .def_readonly("pod_names", &PolicyContext::pod_names, "Names of the fleet's pods, by index.")
      .def_readonly("engine_block_size", &PolicyContext::engine_block_size,
                    "The engines' KV block size in tokens.")
      .def_readonly("seed", &PolicyContext::seed,
                    "The scenario's seed: derive random streams from it (with stream_name) so "
                    "runs stay reproducible.")
      .def_readonly("stream_name", &PolicyContext::stream_name,
                    "A name unique to this arm's policy (and gateway replica), e.g. "
                    "'arm/epp/policy' or 'arm/epp/replica-1/policy'.")
      .def_readonly("pools", &PolicyContext::pools,
                    "Names of the fleet's pools (fleet.pools), in order; empty for a fleet "
                    "without pools (one pool, 'default').")
      .def_readonly("pod_pools", &PolicyContext::pod_pools,
                    "The pool index of each pod, by pod index; empty for a fleet without pools.");

  py::class_<RouteContext>(m, "RouteContext", "The moment a request is routed.")
      .def(py::init([](TimeNs now) { return RouteContext{now}; }), py::arg("now_ns") = 0,
           "Builds a RouteContext (for tests).")
      .def_readonly("now_ns", &RouteContext::now, "Simulated time, in ns.")
      .def_property_readonly(
          "now_s", [](const RouteContext& c) { return ns_to_sec(c.now); },
          "Simulated time, in seconds.");

  py::class_<RoutingPolicy, PyRoutingPolicy>(
      m, "RoutingPolicy",
      "Base class of a routing policy written in Python. Subclass it, call "
      "super().__init__() in your __init__ (which receives the registered params as keyword "
      "arguments), define pick(), and register the class with fleetsim.register_policy(). "
      "One instance is made per arm and gateway replica. The simulation calls the methods with the "
      "GIL held; "
      "they must not call fleetsim.run().")
      .def(py::init<>(), "Initialises the C++ side; subclasses must call it.")
      .def(
          "pick",
          [](RoutingPolicy&, const Request&, const py::list&, const RouteContext&) -> int {
            throw py::type_error("RoutingPolicy.pick() is abstract: define it in your subclass");
          },
          py::arg("request"), py::arg("candidates"), py::arg("ctx"),
          "Chooses the pod for `request`: returns the .index of one of `candidates` (a list of "
          "PodState, the pods believed healthy, never empty) or -1 to refuse (the client gets a "
          "503). `ctx.now_ns` is the simulated time.")
      .def(
          "on_dispatched", [](RoutingPolicy&, const Request&, int) {}, py::arg("request"),
          py::arg("pod"), "The gateway forwarded `request` to pod index `pod` (default: nothing).")
      .def(
          "on_first_token", [](RoutingPolicy&, const Request&, int) {}, py::arg("request"),
          py::arg("pod"),
          "`request`'s first token reached the gateway from pod index `pod`: its prefill is done "
          "(default: nothing).")
      .def(
          "on_finished", [](RoutingPolicy&, const Request&, int) {}, py::arg("request"),
          py::arg("pod"),
          "`request` finished (completed or failed) on pod index `pod` (default: nothing).")
      .def(
          "pool_for", [](const RoutingPolicy&, const Request&) { return py::none(); },
          py::arg("request"),
          "The pool (an index into context.pools) that must serve `request` whatever the pods' "
          "state, or None when a pod of any pool may (default: None). When pick() returns -1 "
          "and the gateway holds requests for endpoints (gateway.hold_for_endpoints_s), a held "
          "request wakes only that pool's autoscaler (KEDA-style scale from zero).")
      .def(
          "routing_delay_ns", [](const RoutingPolicy&, const Request&) { return 0; },
          py::arg("request"),
          "Simulated time the policy itself takes to decide for `request` (a classifier's "
          "inference, say), in ns: the gateway waits this long before pick() (default: 0).")
      .def(
          "on_kv_events", [](RoutingPolicy&, int, const py::list&) {}, py::arg("pod"),
          py::arg("events"),
          "Pod index `pod`'s KV events reached the router (gateway.kv_event_delay_ms after the "
          "engine step that made them), in order, as a list of (kind, hashes): kind 'stored' "
          "(those blocks entered the pod's prefix cache), 'removed' (they were evicted) or "
          "'cleared' (the pod's cache emptied: it restarted; hashes empty); hashes a numpy "
          "uint64 array of block hashes, the same as Request.block_hashes. Defining it makes "
          "the pods publish their events, as vLLM's --kv-events-config does for a precise "
          "prefix router (default: nothing, and no events).")
      .def(
          "counters", [](const RoutingPolicy&) { return py::dict(); },
          "Counters about the policy's own decisions, read once after the arm: a dict "
          "{name: number}, reported in the arm's summary under policy_counters (default: none).")
      .def(
          "setup", [](RoutingPolicy&, const PolicyContext&) {}, py::arg("context"),
          "Called once per arm after __init__ with the arm's PolicyContext, before the first "
          "request (default: nothing). self.context holds the same object.")
      .def_property_readonly(
          "context", [](RoutingPolicy& self) { return as_py(self).context(); },
          "The arm's PolicyContext (None until the policy is set up for an arm).")
      .def_property_readonly(
          "params", [](RoutingPolicy& self) { return as_py(self).params(); },
          "The arm's validated params (the registered defaults with the scenario's values), as a "
          "dict.")
      .def_property_readonly(
          "policy_name", [](RoutingPolicy& self) { return as_py(self).name(); },
          "The name the class was registered under.");

  m.def("register_policy", &register_policy, py::arg("name"), py::arg("cls"),
        py::arg("description"), py::arg("params") = py::none(),
        "Registers a RoutingPolicy subclass under `name`, so scenarios use it like a built-in "
        "policy (`arms: [{name: mine, policy: NAME, params: {...}}]`).\n\n"
        "params: {name: default} or {name: (default, help)}; the type follows the default "
        "(bool, int, float, str). The scenario's values are validated like a built-in policy's "
        "and passed to cls(**params), one instance per arm (and per gateway replica). Registering "
        "a name again replaces "
        "the earlier Python class; built-in names cannot be replaced.");
  m.def(
      "_python_policies", [] { return python_policy_table(); },
      "The policies registered from Python: {name: (cls, description, params)}. fleetsim.sweep "
      "ships them to its worker processes.");
}

}  // namespace fleetsim::py_bindings
