// scripts/setup.sh where it cannot install: one clear message naming what is missing and how to
// provide it, and no need for root when everything is present. "Not root" is a stand-in `id`
// first on PATH; "missing" is a PATH without chromium.
import test from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { chmodSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

const repo = new URL("../..", import.meta.url).pathname;

const made = [];
test.after(() => made.forEach((d) => rmSync(d, { recursive: true, force: true })));

/** A folder with an `id` that answers like an unprivileged user's. */
function notRoot() {
  const bin = mkdtempSync(join(tmpdir(), "kopitiam-user-"));
  made.push(bin);
  writeFileSync(join(bin, "id"), "#!/bin/sh\necho 1000\n");
  chmodSync(join(bin, "id"), 0o755);
  return bin;
}

function setup(env) {
  return spawnSync("bash", [join(repo, "scripts/setup.sh")], { cwd: repo, env: { ...process.env, ...env }, encoding: "utf8" });
}

test("not root and no chromium: stops with what is missing and how to install or point at it", () => {
  const bin = notRoot();
  for (const tool of ["bash", "dirname"]) symlinkSync(`/usr/bin/${tool}`, join(bin, tool));
  const r = setup({ PATH: bin });
  assert.equal(r.status, 1);
  assert.match(r.stderr, /cannot continue: missing chromium chromedriver .*apt-get install chromium chromium-driver.*CHROMIUM=\/path\/to\/chrome CHROMEDRIVER=/);
});

test("CHROMIUM pointing at nothing is reported", () => {
  const r = setup({ CHROMIUM: "/nonexistent/chrome", CHROMEDRIVER: "/usr/bin/chromedriver" });
  assert.equal(r.status, 1);
  assert.match(r.stderr, /CHROMIUM=\/nonexistent\/chrome is not an executable file/);
});

test("with everything present, setup needs no root and installs nothing", () => {
  const r = setup({ PATH: `${notRoot()}:${process.env.PATH}` });
  assert.equal(r.status, 0, r.stderr);
  assert.doesNotMatch(r.stdout, /installing/);
});
