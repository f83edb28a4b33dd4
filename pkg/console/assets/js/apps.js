// Apps: the registered apps with their descriptions and default limits, and
// per app its users, items and bytes summed from the users listing. An app
// that is not registered has no entry in the registry, so the page also
// opens an app by its id, and keeps the apps opened recently.

import { call, path, pages } from "./api.js";
import { h, replace, field, onSubmit, busy, bytes, count, table, heading, showError } from "./ui.js";

const recentKey = "uds.recentApps";

const uuid = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

function recent() {
  try {
    const list = JSON.parse(localStorage.getItem(recentKey) ?? "[]");
    return Array.isArray(list) ? list.filter((x) => typeof x === "string") : [];
  } catch {
    return [];
  }
}

// remember keeps app first among the recently opened, at most ten; what
// is not an application id (the API refuses it) is not kept.
export function remember(app) {
  if (!uuid.test(app)) return;
  localStorage.setItem(recentKey, JSON.stringify([app, ...recent().filter((a) => a !== app)].slice(0, 10)));
}

function appLink(app, label) {
  return h("a", { href: `#/apps/${encodeURIComponent(app)}/users` }, label ?? app);
}

// limitText is a configured limit: 0 or absent is not set, -1 unlimited.
export function limitText(n, format = count) {
  if (n === undefined || n === null || n === 0) return "not set";
  return n < 0 ? "unlimited" : format(n);
}

// totals sums an app's users, items and bytes over every page of its
// users, into the cells given, which show the sums as they grow.
async function totals(app, cells) {
  const sum = { users: 0, items: 0, bytes: 0 };
  const fill = (done) => {
    replace(cells.users, count(sum.users) + (done ? "" : "…"));
    replace(cells.items, count(sum.items));
    replace(cells.bytes, bytes(sum.bytes));
  };
  try {
    await pages(path("admin", "apps", app, "users"), "users", (users) => {
      for (const u of users) {
        sum.users += 1;
        sum.items += u.items;
        sum.bytes += u.bytes;
      }
      fill(false);
    }, { limit: 1000 });
    fill(true);
  } catch (e) {
    showError(cells.users, e);
  }
}

// summaryRows are the rows of apps with their sums, computed a few apps at
// a time.
function summaryRows(apps) {
  const rows = [];
  const work = [];
  for (const a of apps) {
    const cells = { users: h("span", null, "…"), items: h("span"), bytes: h("span") };
    rows.push([a.name ? appLink(a.applicationUuid, a.name) : appLink(a.applicationUuid), h("code", null, a.applicationUuid),
      a.description ?? "", limitText(a.limits?.limitItems), limitText(a.limits?.limitBytes, bytes),
      cells.users, cells.items, cells.bytes]);
    work.push(() => totals(a.applicationUuid, cells));
  }
  const next = async () => {
    while (work.length) await work.shift()();
  };
  for (let i = 0; i < 4; i++) next();
  return rows;
}

const headers = ["App", "Id", "Description", "Default item limit", "Default byte limit", "Users", "Items", "Bytes"];

export async function appsPage(view) {
  const openArea = h("div");
  const input = h("input", { name: "app", required: true, autocomplete: "off", spellcheck: "false", placeholder: "d53065bd-f932-4841-83fb-849717d8df0f" });
  const open = onSubmit(h("form", { class: "inline", "aria-label": "Open an app by id" },
    field("Application id", input, "Any app, registered or not"), h("button", null, "Open")), () => {
    const app = input.value.trim().toLowerCase();
    if (!uuid.test(app)) {
      showError(openArea, { message: "Not an application id", details: "An application id is a UUID, such as d53065bd-f932-4841-83fb-849717d8df0f." });
      return;
    }
    location.hash = `#/apps/${app}/users`;
  });

  const nameInput = h("input", { name: "name", required: true, autocomplete: "off" });
  const found = h("div", { "aria-live": "polite", id: "found" });
  const find = onSubmit(h("form", { class: "inline", "aria-label": "Find a registered app by name" },
    field("App name", nameInput), h("button", null, "Find")), (button) => busy(button, found, async () => {
    const { body } = await call("GET", "/admin/apps", { query: { name: nameInput.value.trim() } });
    replace(found, body.apps.length
      ? table("Found", headers, summaryRows(body.apps))
      : h("p", { role: "status" }, `No app is registered as “${nameInput.value.trim()}”.`));
  }));

  const registered = h("section", { "aria-labelledby": "registered" }, h("h2", { id: "registered" }, "Registered apps"));
  const listArea = h("div", { "aria-live": "polite" });
  const more = h("button", { type: "button", hidden: true }, "More apps");
  registered.append(listArea, more);
  let cursor;
  const rows = [];
  const loadPage = () => busy(more, listArea, async () => {
    const { body } = await call("GET", "/admin/apps", { query: { limit: 100, cursor } });
    rows.push(...summaryRows(body.apps));
    cursor = body.cursor;
    more.hidden = !cursor;
    replace(listArea, rows.length
      ? table(null, headers, rows, { id: "apps-table" })
      : h("p", null, "No app is registered yet: open one by its id above."));
  });
  more.addEventListener("click", loadPage);

  const recentApps = recent();
  replace(view,
    heading("Apps"),
    h("section", { "aria-labelledby": "open-app" }, h("h2", { id: "open-app" }, "Open an app"), open, openArea, find, found),
    registered,
    recentApps.length ? h("section", { "aria-labelledby": "recent" }, h("h2", { id: "recent" }, "Opened recently"),
      h("ul", { class: "recent" }, recentApps.map((a) => h("li", null, appLink(a))))) : null);
  await loadPage();
}
