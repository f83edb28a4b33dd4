// A person's data: the apps a user stores data in, with what they store in
// each, and everything they store, in every app, exported as one JSON file
// to download (the pages of GET /admin/users/{user}/export gathered), or
// erased (POST /admin/users/{user}/erase, sent again as its Retry-After
// says until its receipt comes).

import { call, path, pages } from "./api.js";
import { h, replace, field, onSubmit, busy, bytes, count, table, heading, download, confirm } from "./ui.js";
import { appLabel, learnName } from "./apps.js";

// peoplePage finds a person by their subject, and shows theirs when one
// is named.
export async function peoplePage(view, user) {
  const input = h("input", { name: "user", required: true, autocomplete: "off", value: user ?? "" });
  const find = onSubmit(h("form", { "aria-label": "Find a person" },
    field("Subject", input, "The caller an identity provider names (sub), the same in every app"),
    h("button", null, "Show")), () => {
    location.hash = `#/people/${encodeURIComponent(input.value.trim())}`;
  });
  replace(view, heading(user ? `Person ${user}` : "People"),
    h("p", { class: "sub" }, "What one person stores in every app, and all of it exported."), find);
  if (user) await personSection(view, user);
}

// personSection shows a person's apps and offers their export.
async function personSection(view, user) {
  const apps = [];
  await pages(path("admin", "users", user, "apps"), "apps", (list) => {
    apps.push(...list);
  }, { limit: 100 });
  await Promise.all(apps.map((a) => learnName(a.applicationUuid)));
  const status = h("div", { "aria-live": "polite", id: "person-export-status" });
  const exportForm = onSubmit(h("form", { "aria-label": "Export everything" },
    h("button", null, "Export everything")), (button) => busy(button, status, async () => {
    const all = { apps: [], records: [] };
    let pageCount = 0;
    await pages(path("admin", "users", user, "export"), "records", (records, body) => {
      all.apps.push(...body.apps);
      all.records.push(...records);
      pageCount += 1;
      replace(status, h("p", { role: "status" }, `Exporting: ${count(all.records.length)} records in ${pageCount} pages…`));
    }, { limit: 1000 });
    const large = all.records.filter((r) => r.large).length;
    const file = new Blob([JSON.stringify({ user, exportedAt: new Date().toISOString(), ...all }, null, 1)], { type: "application/json" });
    const name = `uds-person-${user.replace(/[^A-Za-z0-9._-]/g, "_")}.json`;
    replace(status, h("p", { role: "status", "data-records": all.records.length, "data-apps": all.apps.length },
      `Exported ${count(all.records.length)} records of ${count(all.apps.length)} apps in ${pageCount} pages. `,
      large ? `${count(large)} large values are in it as links valid one hour (downloadUrl). ` : null,
      download(file, name)));
  }));
  view.append(
    h("h2", null, "Apps"),
    apps.length ? table(`${user} stores data in ${apps.length} app${apps.length === 1 ? "" : "s"}`,
      ["App", "Items", "Bytes", "In kept versions"], apps.map((a) => [
        h("a", { href: `#/apps/${encodeURIComponent(a.applicationUuid)}/users` }, appLabel(a.applicationUuid)),
        count(a.items), bytes(a.bytes), bytes(a.historyBytes ?? 0),
      ]), { id: "person-apps" })
      : h("p", { id: "person-apps-none" }, `${user} stores nothing in any app.`),
    h("h2", null, "Export"),
    h("p", null, "Every record the person owns in every app (items, list items, kept versions and delete markers), ",
      "each with its app, and their usage and the overrides set for them in each: the format an app's import reads."),
    exportForm, status,
    h("h2", null, "Erase"),
    h("p", null, "Removes everything the person owns in every app, and puts a pseudonym in place of their name in what others own. ",
      "Their writes are refused from the start, and for the days held after the end. Nothing brings the data back: export it first."),
    eraseForm(user));
}

// eraseForm erases the person's data, after a confirmation, step after
// step, and shows the receipt.
function eraseForm(user) {
  const hold = h("input", { name: "holdDays", type: "number", min: 0, max: 3650, value: 0 });
  const status = h("div", { "aria-live": "polite", id: "person-erase-status" });
  const form = onSubmit(h("form", { "aria-label": "Erase everything" },
    field("Hold days", hold, "How long after the erase their writes stay refused (devices that sync back)"),
    h("button", null, "Erase everything")), async (button) => {
    if (!(await confirm(`Erase everything ${user} stores in every app? Nothing brings it back.`, "Erase"))) return;
    await busy(button, status, async () => {
      for (;;) {
        const res = await call("POST", path("admin", "users", user, "erase"), { json: { holdDays: Number(hold.value) } });
        const e = res.body;
        const erased = Object.values(e.erased ?? {}).reduce((n, kinds) => n + Object.values(kinds).reduce((a, b) => a + b, 0), 0);
        if (res.status === 200) {
          replace(status, h("p", { role: "status", "data-state": e.state, "data-erased": erased },
            `Erased ${count(erased)} records of ${count(Object.keys(e.erased ?? {}).length)} apps, ended ${e.endedAt}. `,
            `Their writes are refused until ${e.holdUntil}; backups hold the data until ${e.backupsUntil}.`));
          return;
        }
        replace(status, h("p", { role: "status" }, e.state === "settling"
          ? `Settling: ${user}'s writes are refused; removals begin at ${e.deletesFrom}.`
          : `Erasing: ${count(erased)} records removed so far…`));
        const wait = Number(res.headers.get("Retry-After") ?? "1");
        await new Promise((resolve) => setTimeout(resolve, Math.max(1, wait) * 1000));
      }
    });
  });
  return h("div", null, form, status);
}
