// tutti/tutti.hpp: the C++17 wrapper over tutti.h, header-only, for programs that want
// no C boilerplate: RAII handles, containers as buffers, statuses as exceptions.
//
//   #include "tutti/tutti.hpp"
//   int main() {
//     tutti::Comm world = tutti::Comm::init();          // from tutti launch's environment
//     std::vector<float> grads(1024, float(world.rank()));
//     world.all_reduce(grads, TUTTI_OP_SUM);             // in place; throws tutti::Error
//   }
//
// It adds no behaviour of its own beyond checking that buffers fit: the C API's
// contracts (tutti.h) hold for every call, with the same names and argument order.
// It includes only tutti.h and the standard library; link with libtutti (CMake:
// target_link_libraries(app PRIVATE tutti::cpp)).
#ifndef TUTTI_CPP_TUTTI_HPP
#define TUTTI_CPP_TUTTI_HPP

#include "tutti/buffer.hpp"
#include "tutti/comm.hpp"
#include "tutti/config.hpp"
#include "tutti/error.hpp"
#include "tutti/float16.hpp"
#include "tutti/work.hpp"

#endif  // TUTTI_CPP_TUTTI_HPP
