// Loads the --target web package in Node (initSync with the wasm bytes), for the JS tests.
import { readFileSync } from "node:fs";
import * as kw from "../../pkg/kopitiam_wasm.js";

kw.initSync({ module: readFileSync(new URL("../../pkg/kopitiam_wasm_bg.wasm", import.meta.url)) });
export default kw;
