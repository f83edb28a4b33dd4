// Apps: the registered apps with their descriptions and default limits,
// then the apps that hold data without a registration (each with a form
// that registers it), and per app its users, items and bytes summed from
// the users listing. The page also opens an app by its id, and keeps the
// apps opened recently. Every page names an app by its registered name
// where it has one, its id beside it.

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

// names are the apps' registered names the page has read, by id: null
// for an app that is not registered.
const names = new Map();

// learnName reads the name app is registered under, once per page load
// (a registration or a listing tells it too).
export async function learnName(app) {
  if (names.has(app)) return names.get(app);
  const { status, body } = await call("GET", path("admin", "apps", app), { accept: [404] });
  names.set(app, status === 404 ? null : body.name);
  return names.get(app);
}

// appLabel names an app: its registered name, the id as its tooltip and
// secondary text; the id alone where it has no name (or none is known).
export function appLabel(app) {
  const name = names.get(app);
  return name
    ? h("span", { class: "app-name", title: app }, name, " ", h("code", { class: "id" }, app))
    : h("code", null, app);
}

// appSub is a page's line under its heading: the app it shows.
export function appSub(app, ...more) {
  return h("p", { class: "sub" }, "App ", appLabel(app), more.length ? [" · ", more] : null);
}

function appLink(app, label) {
  return h("a", { href: `#/apps/${encodeURIComponent(app)}/users` }, label ?? names.get(app) ?? app);
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
    // A listing without include=held lists registered apps only.
    const registered = a.registered ?? true;
    names.set(a.applicationUuid, registered ? a.name : null);
    rows.push([registered ? appLink(a.applicationUuid, a.name) : h("span", null, appLink(a.applicationUuid, "not registered"), " ", registerButton(a.applicationUuid)),
      h("code", { class: "id" }, a.applicationUuid),
      a.description ?? "", limitText(a.limits?.limitItems), limitText(a.limits?.limitBytes, bytes),
      cells.users, cells.items, cells.bytes,
      h("a", { href: `#/apps/${encodeURIComponent(a.applicationUuid)}/data`, "aria-label": `Browse the data of ${a.name ?? a.applicationUuid}` }, "Browse data")]);
    work.push(() => totals(a.applicationUuid, cells));
  }
  const next = async () => {
    while (work.length) await work.shift()();
  };
  for (let i = 0; i < 4; i++) next();
  return rows;
}

const headers = ["App", "Id", "Description", "Default item limit", "Default byte limit", "Users", "Items", "Bytes", "Data"];

// registerButton opens, in place of itself, the form that registers an
// app that holds data under a name.
function registerButton(app) {
  const button = h("button", { type: "button", "data-register": app, onclick: () => {
    const name = h("input", { name: "registerName", required: true, autocomplete: "off" });
    const description = h("input", { name: "registerDescription", autocomplete: "off" });
    const area = h("div", { "aria-live": "polite" });
    const form = onSubmit(h("form", { class: "inline", "aria-label": `Register ${app}` },
      field("Name", name), field("Description", description, "Optional"), h("button", null, "Register")), (submit) => busy(submit, area, async () => {
      await call("PUT", path("admin", "apps", app), { json: { name: name.value.trim(), description: description.value.trim() } });
      names.delete(app);
      // The listing is read again: the app moves among the registered.
      window.dispatchEvent(new HashChangeEvent("hashchange"));
    }));
    button.replaceWith(h("div", null, form, area));
    name.focus();
  } }, "Register");
  return button;
}

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

  const registered = h("section", { "aria-labelledby": "registered" }, h("h2", { id: "registered" }, "Registered or holding data"),
    h("p", { class: "hint" }, "The registered apps by name, then the apps that hold data without a registration."));
  const listArea = h("div", { "aria-live": "polite" });
  const more = h("button", { type: "button", hidden: true }, "More apps");
  registered.append(listArea, more);
  let cursor;
  const rows = [];
  const loadPage = () => busy(more, listArea, async () => {
    const { body } = await call("GET", "/admin/apps", { query: { limit: 100, cursor, include: "held" } });
    rows.push(...summaryRows(body.apps));
    cursor = body.cursor;
    more.hidden = !cursor;
    replace(listArea, rows.length
      ? table(null, headers, rows, { id: "apps-table" })
      : h("p", null, "No app is registered or holds data yet: open one by its id above."));
  });
  more.addEventListener("click", loadPage);

  const recentApps = recent();
  // A recent app whose name cannot be read (an id the API now refuses,
  // say) is listed by its id: its own page shows why when opened.
  await Promise.all(recentApps.map((a) => learnName(a).catch(() => null)));
  replace(view,
    heading("Apps"),
    h("section", { "aria-labelledby": "open-app" }, h("h2", { id: "open-app" }, "Open an app"), open, openArea, find, found),
    registered,
    recentApps.length ? h("section", { "aria-labelledby": "recent" }, h("h2", { id: "recent" }, "Opened recently"),
      h("ul", { class: "recent" }, recentApps.map((a) => h("li", null, appLink(a), names.get(a) ? [" ", h("code", { class: "id" }, a)] : null)))) : null);
  await loadPage();
}
