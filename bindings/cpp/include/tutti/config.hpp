// tutti/config.hpp: tutti_config, filled by tutti_config_init, with setters that chain:
//
//   tutti::Comm world = tutti::Comm::init(tutti::Config().init_method("tcp://10.0.0.1:29500")
//                                                        .op_timeout(std::chrono::seconds(30)));
//
// A field left alone keeps tutti_config_init's default, which mostly means "from the
// environment" (tutti launch, Slurm, Open MPI): tutti::Config() is what most programs need.
#ifndef TUTTI_CPP_CONFIG_HPP
#define TUTTI_CPP_CONFIG_HPP

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>

#include "tutti.h"
#include "tutti/error.hpp"

namespace tutti {

class Config {
 public:
  Config() { check(tutti_config_init(&config_, sizeof config_)); }

  Config& rank(int32_t rank) {
    config_.rank = rank;
    return *this;
  }
  Config& world_size(int32_t world_size) {
    config_.world_size = world_size;
    return *this;
  }
  Config& init_method(std::string init_method) {
    init_method_ = std::move(init_method);
    return *this;
  }
  Config& init_timeout(std::chrono::milliseconds timeout) {
    config_.init_timeout_ms = timeout.count();
    return *this;
  }
  Config& op_timeout(std::chrono::milliseconds timeout) {
    config_.op_timeout_ms = timeout.count();
    return *this;
  }
  Config& name(std::string name) {
    name_ = std::move(name);
    return *this;
  }
  // A folder for this process's trace (TUTTI_TRACE, which wins; docs/trace.md).
  Config& trace(std::string folder) {
    trace_ = std::move(folder);
    return *this;
  }

  // The C struct, its strings pointing into this Config: valid while it lives unchanged.
  // The strings are kept apart and joined only here, so that copies of a Config stay
  // independent of each other.
  tutti_config c_config() const {
    tutti_config config = config_;
    config.init_method = init_method_ ? init_method_->c_str() : nullptr;
    config.name = name_ ? name_->c_str() : nullptr;
    config.trace = trace_ ? trace_->c_str() : nullptr;
    return config;
  }

 private:
  tutti_config config_{};
  std::optional<std::string> init_method_;
  std::optional<std::string> name_;
  std::optional<std::string> trace_;
};

}  // namespace tutti

#endif  // TUTTI_CPP_CONFIG_HPP
