// The console's entry: it learns from the server whether to offer the
// caller field, then shows the page the location's hash names. Routes:
//   #/apps                              apps registered or holding data, opening one by id
//   #/apps/{app}/users                  usage against limits, the quota mode
//   #/apps/{app}/namespaces[/{ns}]      policies, rate limits; one policy's editor
//   #/apps/{app}/data                   the namespaces that hold data
//   #/apps/{app}/data?ns=&browse=1      a namespace's items, page by page
//   #/apps/{app}/data?ns=&id=&sk=&list= an item or a list (&as= its owner)
//   #/apps/{app}/transfer               export and import
//   #/people[/{user}]                   a person's apps, and all their data exported

import { config, loadConfig, setCaller } from "./api.js";
import { h, replace, errorBox, report } from "./ui.js";
import { appsPage, remember, learnName } from "./apps.js";
import { usersPage } from "./users.js";
import { namespacesPage, policyPage } from "./namespaces.js";
import { dataPage } from "./data.js";
import { transferPage } from "./transfer.js";
import { peoplePage } from "./people.js";

const main = document.getElementById("main");

const sections = [
  ["users", "Users"],
  ["namespaces", "Namespaces"],
  ["data", "Data"],
  ["transfer", "Export & import"],
];

// route reads the hash: its path segments (unescaped) and query.
function route() {
  const hash = location.hash.replace(/^#/, "") || "/apps";
  const [p, q] = hash.split("?");
  const parts = p.split("/").filter(Boolean).map(decodeURIComponent);
  return { parts, query: new URLSearchParams(q ?? "") };
}

// nav shows the sections of the app in view, and marks the current one.
function nav(app, section) {
  const list = document.getElementById("nav");
  const link = (href, name, label) =>
    h("li", null, h("a", { href, "aria-current": section === name ? "page" : null }, label));
  replace(list, link("#/apps", "apps", "Apps"), link("#/people", "people", "People"),
    app ? sections.map(([name, label]) => link(`#/apps/${encodeURIComponent(app)}/${name}`, name, label)) : null);
}

async function show() {
  const { parts, query } = route();
  const [top, app, section, ...rest] = parts;
  const view = h("div", { class: "page" });
  replace(main, view);
  try {
    if (top === "people") {
      nav(null, "people");
      await peoplePage(view, app);
    } else if (top !== "apps") {
      location.hash = "#/apps";
      return;
    } else if (!app) {
      nav(app, "apps");
      await appsPage(view);
    } else {
      nav(app, section);
      remember(app);
      // The app's name is read before its page, which names it.
      await learnName(app);
      const pageOf = {
        users: () => usersPage(view, app),
        namespaces: () => (rest.length ? policyPage(view, app, rest[0]) : namespacesPage(view, app)),
        data: () => dataPage(view, app, query),
        transfer: () => transferPage(view, app),
      }[section];
      if (!pageOf) {
        location.hash = `#/apps/${encodeURIComponent(app)}/users`;
        return;
      }
      await pageOf();
    }
  } catch (e) {
    // A failure of the page's own code is shown and reported as an
    // error, not only shown: the page still marks itself ready below.
    report(e);
    view.prepend(errorBox(e));
  }
  if (!main.contains(view)) return; // another hash was shown meanwhile
  const title = view.querySelector("h1");
  if (title) {
    document.title = `${title.textContent} · UDS console`;
    title.focus({ preventScroll: true });
  }
  main.dataset.ready = location.hash;
}

// stack shows in the header what answers the page's calls and who its
// data calls act as: a console pointed at a deployed stack says which one
// before anything is changed there.
function stack(subject) {
  const el = document.getElementById("stack");
  if (!config.server) return;
  el.hidden = false;
  el.title = config.calls;
  replace(el, h("span", { class: "server", id: "stack-server" }, config.server),
    " · subject ", h("strong", { id: "stack-subject" }, subject || "anonymous"));
}

// A failure the page did not catch is shown at the top of the page as
// well as reported by the browser (the event is not cancelled): a person
// sees that the page is broken rather than a page that stopped halfway.
function failed(error) {
  main.prepend(errorBox({ message: "The page failed", details: String(error?.stack ?? error?.message ?? error) }));
}
window.addEventListener("error", (e) => failed(e.error ?? e.message));
window.addEventListener("unhandledrejection", (e) => failed(e.reason));

async function start() {
  try {
    await loadConfig();
  } catch (e) {
    replace(main, errorBox(e));
    return;
  }
  const form = document.getElementById("caller-form");
  const input = document.getElementById("caller");
  if (config.subjectHeader) {
    form.hidden = false;
    input.value = localStorage.getItem("uds.caller") ?? "";
    setCaller(input.value);
    const keep = () => {
      localStorage.setItem("uds.caller", input.value.trim());
      stack(input.value.trim() || "anonymous");
    };
    input.addEventListener("input", () => {
      setCaller(input.value);
      keep();
    });
    window.addEventListener("caller", (e) => {
      input.value = e.detail;
      keep();
    });
    form.addEventListener("submit", (e) => e.preventDefault());
  }
  stack(config.subjectHeader ? input.value.trim() || "anonymous" : config.subject);
  window.addEventListener("hashchange", show);
  // An empty address opens on the apps, and says so in the address.
  if (!location.hash) history.replaceState(history.state, "", "#/apps");
  await show();
}

start();
