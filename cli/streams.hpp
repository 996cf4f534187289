// gpupool exec / port-forward / tensorboard (cli/streams.cpp).
#pragma once

#include <string>
#include <vector>

#include "commands.hpp"

namespace gpupool::cli {

int run_exec(const ParsedArgs& a, Io& io);
int run_port_forward(const ParsedArgs& a, Io& io);
int run_tensorboard(const ParsedArgs& a, Io& io);
/// kubectl's combined "-it" / "-ti" of `exec` (before "--") as --stdin --tty: -i alone names the
/// instance, as in `gpupool logs -i`.
std::vector<std::string> expand_exec_shorthand(std::vector<std::string> args);

}  // namespace gpupool::cli
