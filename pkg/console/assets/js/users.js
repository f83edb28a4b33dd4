// Users of an app: each user's usage against the limits in effect, as bars
// for items and bytes, sorted closest to a limit first; a user's limits set
// or cleared, their usage recomputed and the drift shown; and the app's
// default limits and quota mode.

import { call, path } from "./api.js";
import { h, replace, field, onSubmit, busy, bytes, count, heading, notice, pretty } from "./ui.js";
import { limitText, appSub } from "./apps.js";
import { quotaModeSection } from "./quotamode.js";

// share is how close a use is to its limit, 0 to 1 (or past 1); an
// unlimited one is 0.
function share(used, limit) {
  return limit === null || limit === undefined || limit <= 0 ? 0 : used / limit;
}

function closeness(q) {
  return Math.max(share(q.usedItems, q.limitItems), share(q.usedBytes, q.limitBytes));
}

// bar is a use against its limit: a meter (which screen readers read as a
// value of a range) and the numbers as text.
function bar(label, used, limit, format) {
  const text = limit === null ? `${format(used)} (no limit)` : `${format(used)} of ${format(limit)}`;
  if (limit === null) return h("span", { class: "usage" }, text);
  return h("span", { class: "usage" },
    h("meter", { min: 0, max: limit, value: Math.min(used, limit), low: limit * 0.7, high: limit * 0.9, optimum: 0,
      "aria-label": `${label}: ${text}`, "data-used": used, "data-limit": limit }),
    h("span", null, text));
}

// columns are the table's sortable columns. Items and bytes sort by the
// share of the limit used; users without a limit there sort by their use,
// below every user with one.
const columns = [
  { key: "user", label: "User", value: (r) => r.user, text: true },
  { key: "items", label: "Items", value: (r) => share(r.usedItems, r.limitItems) || r.usedItems / 1e12 },
  { key: "bytes", label: "Bytes", value: (r) => share(r.usedBytes, r.limitBytes) || r.usedBytes / 1e18 },
  { key: "close", label: "Closest to a limit", value: closeness },
];

export async function usersPage(view, app) {
  const status = h("div", { "aria-live": "polite" });
  const tableArea = h("div");
  const more = h("button", { type: "button", hidden: true }, "More users");
  const panel = h("section", { "aria-labelledby": "user-panel", class: "panel", hidden: true });
  const defaults = h("section", { "aria-labelledby": "defaults" });
  const rows = [];
  let sort = { key: "close", desc: true };
  let cursor;

  const render = () => {
    const col = columns.find((c) => c.key === sort.key);
    const sorted = [...rows].sort((a, b) => {
      const x = col.value(a);
      const y = col.value(b);
      const c = col.text ? String(x).localeCompare(String(y)) : x - y;
      return (sort.desc ? -c : c) || a.user.localeCompare(b.user);
    });
    const th = (c) => h("th", { scope: "col", "aria-sort": sort.key === c.key ? (sort.desc ? "descending" : "ascending") : "none" },
      h("button", { type: "button", class: "sort", "data-sort": c.key, onclick: () => {
        sort = { key: c.key, desc: sort.key === c.key ? !sort.desc : !c.text };
        render();
        tableArea.querySelector(`[data-sort="${c.key}"]`).focus();
      } }, c.label));
    replace(tableArea, rows.length ? h("div", { class: "scroll" }, h("table", { id: "users-table" },
      h("caption", null, `${rows.length} user${rows.length === 1 ? "" : "s"}${cursor ? " loaded (more remain)" : ""}; sorted by ${col.label.toLowerCase()}`),
      h("thead", null, h("tr", null, columns.map(th), h("th", { scope: "col" }, "Actions"))),
      h("tbody", null, sorted.map((r) => h("tr", { "data-user": r.user },
        h("th", { scope: "row" }, r.user),
        h("td", null, bar("Items", r.usedItems, r.limitItems, count)),
        h("td", null, bar("Bytes", r.usedBytes, r.limitBytes, bytes),
          r.historyBytes ? h("span", { class: "hint" }, `${bytes(r.historyBytes)} in kept versions`) : null),
        h("td", { class: "num" }, `${Math.round(closeness(r) * 100)}%`),
        h("td", null, h("button", { type: "button", onclick: () => edit(r) }, "Limits & recompute", h("span", { class: "visually-hidden" }, ` of ${r.user}`)))))))) : h("p", null, "No user stores data in this app."));
  };

  // quota reads the user's usage and the limits in effect.
  const quota = async (user) => (await call("GET", path("admin", "apps", app, "users", user, "quota"))).body;

  const load = () => busy(more, status, async () => {
    const { body } = await call("GET", path("admin", "apps", app, "users"), { query: { limit: 100, cursor } });
    cursor = body.cursor;
    more.hidden = !cursor;
    // The limits in effect come from each user's quota view, a few at a time.
    const queue = [...body.users];
    const worker = async () => {
      while (queue.length) {
        const u = queue.shift();
        rows.push(await quota(u.user));
        notice(status, `Read ${rows.length} users' limits…`);
      }
    };
    await Promise.all([worker(), worker(), worker(), worker()]);
    replace(status);
    render();
  });
  more.addEventListener("click", load);

  // edit opens the panel of one user: their limit override and a recompute.
  const edit = (row) => {
    const area = h("div", { "aria-live": "polite" });
    const items = h("input", { type: "number", min: -1, step: 1, name: "limitItems", inputmode: "numeric" });
    const bytesIn = h("input", { type: "number", min: -1, step: 1, name: "limitBytes", inputmode: "numeric" });
    const refresh = async () => {
      const q = await quota(row.user);
      Object.assign(row, q);
      render();
    };
    const limits = onSubmit(h("form", { "aria-label": `Limits of ${row.user}` },
      field("Item limit", items, `In effect: ${limitText(row.limitItems ?? -1)}. Empty: not set (the app's default decides); -1: unlimited`),
      field("Byte limit", bytesIn, `In effect: ${limitText(row.limitBytes ?? -1, bytes)}. Empty: not set; -1: unlimited`),
      h("div", { class: "actions" },
        h("button", { name: "save" }, "Set limits"),
        h("button", { type: "button", name: "clear", onclick: (e) => busy(e.currentTarget, area, async () => {
          await call("DELETE", path("admin", "apps", app, "users", row.user, "quota"));
          await refresh();
          notice(area, `Cleared ${row.user}'s override: the app's defaults apply.`);
        }) }, "Clear override"))), (button) => busy(button, area, async () => {
      const body = {};
      if (items.value !== "") body.limitItems = Number(items.value);
      if (bytesIn.value !== "") body.limitBytes = Number(bytesIn.value);
      await call("PUT", path("admin", "apps", app, "users", row.user, "quota"), { json: body });
      await refresh();
      notice(area, `Set ${row.user}'s limits.`);
    }));
    const recompute = h("button", { type: "button", onclick: (e) => busy(e.currentTarget, area, async () => {
      const { body, headers } = await call("POST", path("admin", "apps", app, "users", row.user, "quota", "recompute"));
      const d = body.drift;
      const exact = d.items === 0 && d.bytes === 0 && d.historyBytes === 0;
      replace(area, h("div", { role: "status", class: exact ? "ok" : "warn" },
        h("p", null, exact ? "No drift: the usage record equals the data." :
          `Drift (recorded minus actual): ${count(d.items)} items, ${count(d.bytes)} bytes, ${count(d.historyBytes)} bytes of kept versions.`),
        h("p", null, body.applied ? "The usage record now equals the data." :
          `Not applied yet: the user wrote recently. Try again in ${headers.get("Retry-After") ?? "a few"} s.`),
        h("pre", { class: "json", "data-drift": "" }, pretty(d))));
      Object.assign(row, body);
      render();
    }) }, "Recompute usage");
    replace(panel, h("h2", { id: "user-panel" }, `User ${row.user}`),
      h("p", null, h("a", { href: `#/people/${encodeURIComponent(row.user)}` }, `${row.user} in every app, and all their data exported`)), limits,
      h("div", { class: "actions" }, recompute), area);
    panel.hidden = false;
    items.focus();
  };

  // The app's default limits per user.
  const dItems = h("input", { type: "number", min: -1, step: 1, name: "defaultItems", inputmode: "numeric" });
  const dBytes = h("input", { type: "number", min: -1, step: 1, name: "defaultBytes", inputmode: "numeric" });
  const dArea = h("div", { "aria-live": "polite" });
  const showDefaults = (d) => {
    dItems.value = d.limitItems || "";
    dBytes.value = d.limitBytes || "";
    replace(dArea, h("p", null, `Items: ${limitText(d.limitItems)}; bytes: ${limitText(d.limitBytes, bytes)}.`));
  };
  replace(defaults, h("h2", { id: "defaults" }, "Default limits per user"),
    onSubmit(h("form", { class: "inline", "aria-label": "The app's default limits" },
      field("Items", dItems, "Empty: not set; -1: unlimited"), field("Bytes", dBytes, "Empty: not set; -1: unlimited"),
      h("button", null, "Set defaults")), (button) => busy(button, dArea, async () => {
      const { body } = await call("PUT", path("admin", "apps", app, "quota"),
        { json: { limitItems: Number(dItems.value || 0), limitBytes: Number(dBytes.value || 0) } });
      showDefaults(body);
      rows.splice(0);
      cursor = undefined;
      await load();
    })), dArea);

  replace(view, heading("Users"), appSub(app),
    status, tableArea, more, panel, defaults, await quotaModeSection(app));
  await busy(null, dArea, async () => showDefaults((await call("GET", path("admin", "apps", app, "quota"))).body));
  await load();
}
