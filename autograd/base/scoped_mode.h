#pragma once
// ScopedMode<Setting>: sets a mode for the lifetime of a scope and restores the value it found, so
// scopes nest and an exception unwinding through one leaves the mode as it was. Every guard of the
// library is one (NoGradGuard, DetectAnomalyGuard, MatmulPrecisionGuard, GemmBackendGuard).
//
// `Setting` names the mode: `using Value = ...;`, `static Value get();`, `static void set(Value);`.
// Whether the mode is per thread or per process is the setting's (its get and set say).
namespace tapegrad {

template <class Setting>
class ScopedMode {
 public:
  using Value = typename Setting::Value;

  explicit ScopedMode(Value value) : previous_(Setting::get()) { Setting::set(value); }
  ~ScopedMode() { Setting::set(previous_); }
  ScopedMode(const ScopedMode&) = delete;
  ScopedMode& operator=(const ScopedMode&) = delete;

 private:
  Value previous_;
};

}  // namespace tapegrad
