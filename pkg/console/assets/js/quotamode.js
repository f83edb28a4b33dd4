// An app's quota mode: how its owners' usage is kept, shown and switched
// on the users page beside the limits it keeps. Each mode is explained in
// a line next to the choice: one trades a bounded overshoot of the limits
// for cheaper writes.

import { call, path } from "./api.js";
import { h, replace, field, onSubmit, busy, notice } from "./ui.js";

// modes are the API's modes, the default first, each with its line.
const modes = [
  ["strict", "The default: every write charges its owner's usage in its own transaction, so a limit is never passed."],
  ["streamed", "Writes are plain conditional writes, which cost less; usage is summed from the tables' streams, so an owner can pass a limit by what it writes within the stream's lag."],
];

// quotaModeSection is the section of app's quota mode, read from the API.
export async function quotaModeSection(app) {
  const route = path("admin", "apps", app, "quota-mode");
  const area = h("div", { "aria-live": "polite" });
  const current = h("p", { id: "quota-mode-current" });
  const select = h("select", { name: "quotaMode", "aria-describedby": "quota-modes" },
    modes.map(([mode]) => h("option", { value: mode }, mode)));
  const show = (body) => {
    select.value = body.mode;
    current.dataset.mode = body.mode;
    replace(current, "In effect: ", h("strong", null, body.mode), ".");
  };
  const form = onSubmit(h("form", { class: "inline", "aria-label": "The app's quota mode" },
    field("Mode", select), h("button", null, "Save mode")), (button) => busy(button, area, async () => {
    show((await call("PUT", route, { json: { mode: select.value } })).body);
    notice(area, `Quota mode set to ${current.dataset.mode}: functions apply it within their limits cache's lifetime (UDS_LIMITS_CACHE_TTL, 30 s by default).`);
  }));
  const section = h("section", { "aria-labelledby": "quota-mode" }, h("h2", { id: "quota-mode" }, "Quota mode"),
    current, form, h("dl", { class: "meta", id: "quota-modes" }, modes.map(([mode, line]) => [h("dt", null, mode), h("dd", null, line)])), area);
  await busy(null, area, async () => show((await call("GET", route)).body));
  return section;
}
