// A static server for the repo root with the headers a cross-origin-isolated page needs
// (COOP/COEP, so SharedArrayBuffer and the threaded build work). `/` redirects to the demo.
//   node scripts/serve.mjs [--port N]      (PORT env also works; 0 picks a free port)
import { createServer } from "node:http";
import { createReadStream, existsSync, statSync } from "node:fs";
import { extname, join, normalize, resolve, sep } from "node:path";
import { fileURLToPath } from "node:url";
import { homedir } from "node:os";

const root = resolve(fileURLToPath(new URL("..", import.meta.url)));
/** `/models/…` is served from the model cache that scripts/prepare-model.sh fills. */
const modelDir = resolve(process.env.KOPITIAM_CACHE ?? join(homedir(), ".cache", "kopitiam"));
/** `/tessdata/…` is Tesseract's model directory (Debian's tesseract-ocr-eng, which
 * scripts/setup.sh installs; TESSDATA_PREFIX overrides): the OCR demo, tests and benchmark
 * load eng.traineddata from it. */
const tessdataDir = resolve(
  process.env.TESSDATA_PREFIX ??
    ["/usr/share/tesseract-ocr/5/tessdata", "/usr/share/tesseract-ocr/4.00/tessdata"].find((d) => existsSync(d)) ??
    "/usr/share/tesseract-ocr/5/tessdata",
);
const types = {
  ".html": "text/html; charset=utf-8",
  ".js": "text/javascript; charset=utf-8",
  ".mjs": "text/javascript; charset=utf-8",
  ".css": "text/css; charset=utf-8",
  ".json": "application/json",
  ".wasm": "application/wasm",
  ".ts": "text/plain; charset=utf-8",
  ".svg": "image/svg+xml",
};

/** `onReport(name, body)`, when given, receives the body of each `POST /__report/NAME` (the bench
 * pages' results from a browser no DevTools client drives: www/bench/report.js). */
export function serve(port = 8080, host = "127.0.0.1", { onReport } = {}) {
  const server = createServer((req, res) => {
    res.setHeader("Cross-Origin-Opener-Policy", "same-origin");
    res.setHeader("Cross-Origin-Embedder-Policy", "require-corp");
    res.setHeader("Cross-Origin-Resource-Policy", "same-origin");
    res.setHeader("Cache-Control", "no-cache");
    const url = new URL(req.url, "http://localhost");
    if (onReport && req.method === "POST" && url.pathname.startsWith("/__report/")) {
      let body = "";
      req.setEncoding("utf8");
      req.on("data", (d) => (body += d));
      req.on("end", () => {
        res.writeHead(204).end();
        onReport(url.pathname.slice("/__report/".length), body);
      });
      return;
    }
    if (url.pathname === "/") {
      res.writeHead(302, { Location: "/www/" }).end();
      return;
    }
    const [base, rel] = url.pathname.startsWith("/models/")
      ? [modelDir, url.pathname.slice("/models".length)]
      : url.pathname.startsWith("/tessdata/")
        ? [tessdataDir, url.pathname.slice("/tessdata".length)]
        : [root, url.pathname];
    let path = normalize(join(base, decodeURIComponent(rel)));
    if (path !== base && !path.startsWith(base + sep)) {
      res.writeHead(403).end("forbidden");
      return;
    }
    try {
      if (statSync(path).isDirectory()) path = join(path, "index.html");
      const size = statSync(path).size;
      res.writeHead(200, {
        "Content-Type": types[extname(path)] ?? "application/octet-stream",
        "Content-Length": size,
      });
      // HEAD (wllama sizes the model with one) must not read the whole file.
      if (req.method === "HEAD") res.end();
      else createReadStream(path).pipe(res);
    } catch {
      res.writeHead(404).end("not found");
    }
  });
  return new Promise((ok) => server.listen(port, host, () => ok(server)));
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const i = process.argv.indexOf("--port");
  const port = Number(i > 0 ? process.argv[i + 1] : process.env.PORT ?? 8080);
  const server = await serve(port);
  const at = `http://127.0.0.1:${server.address().port}`;
  console.log(`kopitiam-wasm demo: ${at}/www/ (chat) · ${at}/www/ocr.html (OCR)`);
}
