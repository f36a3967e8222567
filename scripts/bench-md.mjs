// BENCHMARKS.md holds one marked section per benchmark script, so each script rewrites only its
// own: `<!-- bench:NAME -->` … `<!-- /bench:NAME -->`. A new section goes at the top or bottom.
import { existsSync, readFileSync, writeFileSync } from "node:fs";

const TITLE = "# Benchmarks\n";

export function writeSection(file, name, body, { top = false } = {}) {
  const open = `<!-- bench:${name} -->`;
  const close = `<!-- /bench:${name} -->`;
  const block = `${open}\n${body.trimEnd()}\n${close}`;
  let text = existsSync(file) ? readFileSync(file, "utf8") : TITLE;
  const a = text.indexOf(open);
  const b = text.indexOf(close);
  if (a >= 0 && b > a) {
    text = text.slice(0, a) + block + text.slice(b + close.length);
  } else if (top) {
    const head = text.startsWith(TITLE) ? TITLE.length : 0;
    text = `${text.slice(0, head)}\n${block}\n${text.slice(head)}`;
  } else {
    text = `${text.trimEnd()}\n\n${block}\n`;
  }
  writeFileSync(file, text.replace(/\n{3,}/g, "\n\n"));
}
