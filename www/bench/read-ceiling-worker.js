// One reader of readCeilingGBs (read-ceiling.js).
import { serveReads } from "./read-ceiling.js";

serveReads();
