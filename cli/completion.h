// `fleetsim completion bash`: a bash completion script written from the command definitions
// themselves (commands, options, the values an option accepts), so it never falls behind them.
// It uses the bash-completion package's helpers (_init_completion, _filedir), as every
// completion Debian ships does; `cmake --install` puts it where bash-completion finds it.
#pragma once

#include <string>

namespace CLI {
class App;
}

namespace fleetsim::cli {

std::string bash_completion(const CLI::App& app);

}  // namespace fleetsim::cli
