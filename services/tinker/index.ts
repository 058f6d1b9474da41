// The Tinker service's face: Thinking Machines' command-style training API (sessions, training
// clients and their commands, sampling, futures) over the same trainer, engines and checkpoints.
export { tinkerHandlers } from "./handlers.js";
export { Futures } from "./futures.js";
export { TinkerApi } from "./tinker-api.js";
export { TinkerCheckpoints } from "./tinker-checkpoints.js";
export { TinkerHousekeeping } from "./housekeeping.js";
export { TinkerSessions } from "./sessions.js";
export { TokenSampler } from "./sampling/token-sampler.js";
export { TrainingCommands } from "./training-commands.js";
export { TrainingRuns } from "./training-runs.js";
