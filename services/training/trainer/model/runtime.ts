// jax-js start-up for Node: only the wasm backend exists here (init() with no argument probes
// WebGPU through `navigator` and throws under Node), so it is initialised explicitly, once.
import { defaultDevice, init } from "@jax-js/jax";

let ready: Promise<void> | undefined;

export function ensureJaxReady(): Promise<void> {
  ready ??= (async () => {
    const devices = await init("wasm");
    if (!devices.includes("wasm")) throw new Error("jax-js: the wasm backend is unavailable");
    defaultDevice("wasm");
  })();
  return ready;
}
