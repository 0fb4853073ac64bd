// One exception hierarchy for every error a user can cause. The Python bindings map each class
// one to one onto a Python exception, so nothing here may abort the process.
#pragma once

#include <stdexcept>
#include <string>
#include <vector>

namespace fleetsim {

class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// A scenario (YAML or --set override) that cannot be accepted. The message names the file, the
// line, the field and what was expected.
class ScenarioError : public Error {
 public:
  using Error::Error;
};

// A deployment the scenario describes that would not start: the model does not fit the GPU, or
// vLLM would refuse its settings for the memory left (max_model_len). Valid input with an answer
// of its own, so a sweep reports such a point instead of stopping.
class DeploymentError : public ScenarioError {
 public:
  explicit DeploymentError(const std::string& reason) : ScenarioError(reason), reason_(reason) {}
  // `where`: the scenario section describing the deployment ("file:line: fleet.pools.0").
  DeploymentError(const std::string& where, const std::string& reason)
      : ScenarioError(where + ": " + reason), reason_(reason) {}
  // Why the deployment would not start, without the place: what a sweep's cell says.
  const std::string& reason() const { return reason_; }

 private:
  std::string reason_;
};

// Simulated time would pass its limit (~31 years): some figure of the scenario is far too large,
// found only when the simulation reaches it. The runner adds the scenario's file and the arm.
class TimeLimitError : public ScenarioError {
 public:
  using ScenarioError::ScenarioError;
};

// A trace file that cannot be read.
class TraceError : public Error {
 public:
  using Error::Error;
};

// A name (policy, GPU, model, distribution, ...) that is not registered; lists the valid ones.
class UnknownNameError : public Error {
 public:
  UnknownNameError(const std::string& kind, const std::string& name,
                   const std::vector<std::string>& valid);
};

// A broken invariant inside the simulator: a bug, never a user's fault.
class InternalError : public Error {
 public:
  using Error::Error;
};

std::string join(const std::vector<std::string>& items, const std::string& sep);
// The items of a `sep`-separated list, each trimmed of blanks; empty items are kept (a caller
// that refuses them can name them).
std::vector<std::string> split_trimmed(const std::string& text, char sep);
// Whether `text` is one finite number and nothing else (the items of split_trimmed lists).
bool parse_finite(const std::string& text, double& out);

}  // namespace fleetsim
