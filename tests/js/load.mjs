// Loads the package's public API (js/index.js over the --target web simd build) in Node with
// initSync, for the JS tests. `memory` is that instance's WebAssembly.Memory.
import { readFileSync } from "node:fs";
import * as kw from "../../js/index.js";

export const { memory } = kw.initSync({ module: readFileSync(new URL("../../pkg/kopitiam_wasm_bg.wasm", import.meta.url)) });
export default kw;
