// Ctrl-C and SIGTERM stop the command's simulations at their next poll instead of killing the
// process mid-write: the command then ends with nothing written (result files are written whole
// after the simulations, sim/output_files.h) and exits 128 + the signal, as a shell expects. A
// second signal of the same kind ends the process at once.
#pragma once

namespace fleetsim::cli {

// Installs the handlers for SIGINT and SIGTERM.
void stop_on_interrupt();
// The signal that stopped the command, or 0.
int interrupting_signal();

}  // namespace fleetsim::cli
