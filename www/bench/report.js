// Hands a bench page's result to the runner when the page was opened with `?report=PATH`: a
// POST to the bench server, for runs in a browser with no DevTools client (`launchBare` in
// scripts/bench-proc.mjs) that cannot read `window`.
export function report(result) {
  const to = new URLSearchParams(location.search).get("report");
  if (to) fetch(to, { method: "POST", body: JSON.stringify(result) }).catch(() => {});
}
