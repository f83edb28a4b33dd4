// Namespaces: the policies an app sets (access mode, JSON Schema, history,
// indexes, binary rule) and its rate limits; one namespace's policy edited
// and sent with the API's own answers shown: a change into or out of
// private announced (202, Retry-After) and completed by sending it again,
// refused while the namespace holds data (409), a schema the API does not
// compile (400). A change under way is the server's state, not the page's:
// the policy's GET answers it, so it is shown and completable after a
// reload, and a save that would cancel it asks first.

import { call, path, pages } from "./api.js";
import { h, replace, field, onSubmit, busy, bytes, count, table, heading, notice, pretty, confirm, when, showError } from "./ui.js";
import { appSub } from "./apps.js";

const base = (app) => path("admin", "apps", app, "namespaces");

function policyLink(app, ns, label) {
  return h("a", { href: `#/apps/${encodeURIComponent(app)}/namespaces/${encodeURIComponent(ns)}`, "aria-label": label ? `Policy of ${ns}` : null }, label ?? ns);
}

function historyText(p) {
  if (!p.history) return "none";
  return `${p.history.versions} versions${p.history.days ? `, ${p.history.days} days` : ""}`;
}

function binaryText(p) {
  if (!p.binary) return p.schema ? "none (the schema refuses bytes)" : "any";
  return p.binary.contentTypes.join(", ") + (p.binary.maxBytes ? ` up to ${bytes(p.binary.maxBytes)}` : "");
}

function indexesText(p) {
  return (p.indexes ?? []).map((i) => `${i.name} (${i.state})`).join(", ") || "none";
}

function pendingText(p) {
  return p.pending ? `to ${p.pending.access}, settles ${when(p.pending.settlesAt)}` : "";
}

// itemsHash is the location of a namespace's items on the Data page.
export function itemsHash(app, ns) {
  return `#/apps/${encodeURIComponent(app)}/data?${new URLSearchParams({ ns, browse: "1" })}`;
}

// namespacesTable lists the namespaces that have a policy or hold data
// (include=held), each with its access mode (the default's where it has
// no policy), a link to its items and one to its policy; into area. Each
// namespace's name links to its policy, or with toItems (the Data page)
// to its items.
export async function namespacesTable(app, area, toItems = false) {
  const rows = [];
  const itemsLink = (ns, label) => h("a", { href: itemsHash(app, ns), "aria-label": `Items of ${ns}`, "data-items": ns }, label);
  await busy(null, area, () => pages(base(app), "namespaces", (list) => {
    for (const p of list) {
      const ns = p.namespace;
      rows.push({ ns, cells: [toItems ? itemsLink(ns, ns) : policyLink(app, ns), p.policy === false ? "default" : "set", p.access, p.schema ? "yes" : "no", historyText(p),
        indexesText(p), binaryText(p), pendingText(p), when(p.heldSince), toItems ? policyLink(app, ns, "Policy") : itemsLink(ns, "Items")] });
    }
  }, { limit: 100, include: "held" }).then(() => {
    replace(area, rows.length
      ? table("Namespaces with a policy or data", ["Namespace", "Policy", "Access", "Schema", "History", "Indexes", "Binary values", "Change under way", "Holds data since", toItems ? "Policy" : "Items"],
        rows.map((r) => r.cells), { id: "namespaces-table" })
      : h("p", null, "No namespace has a policy or holds data: every namespace is shared, without schema, history or indexes."));
    area.querySelectorAll("#namespaces-table tbody tr").forEach((tr, i) => { tr.dataset.ns = rows[i].ns; });
  }));
}

export async function namespacesPage(view, app) {
  const listArea = h("div", { "aria-live": "polite" });
  await namespacesTable(app, listArea);

  const nsInput = h("input", { name: "namespace", required: true, autocomplete: "off", spellcheck: "false" });
  const open = onSubmit(h("form", { class: "inline", "aria-label": "Open a namespace's policy" },
    field("Namespace", nsInput, "Any namespace, with a policy or not"), h("button", null, "Open policy")), () => {
    location.hash = `#/apps/${encodeURIComponent(app)}/namespaces/${encodeURIComponent(nsInput.value.trim())}`;
  });

  replace(view, heading("Namespaces"), appSub(app),
    listArea, open, await rateLimits(app));
}

// rateLimits is the app's rate limits: per caller and for the app as a
// whole, each a requests-per-second rate and a burst, or -1 for none.
async function rateLimits(app) {
  const route = path("admin", "apps", app, "rate-limits");
  const area = h("div", { "aria-live": "polite" });
  const inputs = {};
  const fieldsOf = (level, label) => {
    const rate = h("input", { type: "number", name: `${level}-rate`, min: -1, step: 1, inputmode: "numeric" });
    const burst = h("input", { type: "number", name: `${level}-burst`, min: 1, step: 1, inputmode: "numeric" });
    inputs[level] = { rate, burst };
    return h("fieldset", null, h("legend", null, label),
      field("Requests a second", rate, "Empty: none set; -1: no limit at this level"), field("Burst", burst));
  };
  const show = (limits) => {
    for (const level of ["perCaller", "perApp"]) {
      const l = limits[level];
      inputs[level].rate.value = l ? l.requestsPerSecond : "";
      inputs[level].burst.value = l?.burst ?? "";
    }
  };
  const form = onSubmit(h("form", { "aria-label": "Rate limits" },
    fieldsOf("perCaller", "Each caller"), fieldsOf("perApp", "The app as a whole"),
    h("div", { class: "actions" }, h("button", null, "Set rate limits"),
      h("button", { type: "button", onclick: (e) => busy(e.currentTarget, area, async () => {
        await call("DELETE", route);
        show({});
        notice(area, "Rate limits cleared: the deployment's defaults apply.");
      }) }, "Clear rate limits"))), (button) => busy(button, area, async () => {
    const body = {};
    for (const level of ["perCaller", "perApp"]) {
      const { rate, burst } = inputs[level];
      if (rate.value === "") continue;
      body[level] = { requestsPerSecond: Number(rate.value) };
      if (burst.value !== "") body[level].burst = Number(burst.value);
    }
    show((await call("PUT", route, { json: body })).body);
    notice(area, "Rate limits set.");
  }));
  const section = h("section", { "aria-labelledby": "rate-limits" }, h("h2", { id: "rate-limits" }, "Rate limits"), form, area);
  await busy(null, area, async () => show((await call("GET", route)).body));
  return section;
}

// indexLines and parseIndexes read and write declarations as the command
// line takes them: name:/path:type, one a line (the path between the first
// and the last colon, so it may hold colons itself).
function indexLines(p) {
  return (p.indexes ?? []).map((i) => `${i.name}:${i.path}:${i.type}`).join("\n");
}

function parseIndexes(text) {
  const out = [];
  for (const line of text.split("\n").map((l) => l.trim()).filter(Boolean)) {
    const first = line.indexOf(":");
    const last = line.lastIndexOf(":");
    if (first < 0 || first === last) throw new Error(`“${line}” is not name:/path:type`);
    out.push({ name: line.slice(0, first), path: line.slice(first + 1, last), type: line.slice(last + 1) });
  }
  return out;
}

// request is the PUT body that sets the policy p as the API answers it:
// its access, schema, history, index declarations and binary rule, and
// nothing else of what the API shows (version, index states, times).
function request(p) {
  const b = { access: p.access };
  if (p.schema) b.schema = p.schema;
  if (p.history) b.history = p.history;
  if (p.indexes?.length) b.indexes = p.indexes.map(({ name, path: at, type }) => ({ name, path: at, type }));
  if (p.binary) b.binary = p.binary;
  return b;
}

// schemaCheck says what is wrong with the schema's text as JSON, or "" when
// it parses (an empty text is no schema).
function schemaCheck(text) {
  if (text.trim() === "") return "";
  try {
    const v = JSON.parse(text);
    return v !== null && typeof v === "object" && !Array.isArray(v) ? "" : "A schema is a JSON object.";
  } catch (e) {
    return e.message;
  }
}

export async function policyPage(view, app, ns) {
  const route = path("admin", "apps", app, "namespaces", ns);
  const area = h("div", { "aria-live": "polite", id: "policy-result" });
  const stateArea = h("div");
  const access = h("select", { name: "access" }, ["shared", "private", "owner-write"].map((a) => h("option", { value: a }, a)));
  const schema = h("textarea", { name: "schema", rows: 10, spellcheck: "false", class: "code" });
  const schemaError = h("p", { id: "schema-error", class: "field-error", "aria-live": "polite" });
  const versions = h("input", { type: "number", name: "versions", min: 0, max: 100, step: 1, inputmode: "numeric" });
  const days = h("input", { type: "number", name: "days", min: 0, max: 3650, step: 1, inputmode: "numeric" });
  const indexes = h("textarea", { name: "indexes", rows: 3, spellcheck: "false", class: "code" });
  const types = h("input", { name: "contentTypes", autocomplete: "off", spellcheck: "false" });
  const maxBytes = h("input", { type: "number", name: "maxBytes", min: 1, step: 1, inputmode: "numeric" });
  const pendingArea = h("div", { id: "pending-change" });
  let shown = null; // the policy as the API last answered it

  const checkSchema = () => {
    const problem = schemaCheck(schema.value);
    schemaError.textContent = problem ? `Not valid JSON: ${problem}` : "";
    schema.setAttribute("aria-invalid", problem ? "true" : "false");
    return problem;
  };
  schema.addEventListener("input", checkSchema);
  schema.setAttribute("aria-describedby", "schema-error");

  // fill shows the policy the API answered. While a change is under way
  // the form shows the change's target (what completing it sets), so that
  // saving the form as shown completes or amends the change rather than
  // cancelling it.
  const fill = (p) => {
    shown = p;
    const target = p.pending ?? p;
    access.value = target.access;
    schema.value = target.schema ? pretty(target.schema) : "";
    versions.value = p.history?.versions ?? "";
    days.value = p.history?.days ?? "";
    indexes.value = indexLines(p);
    types.value = p.binary ? p.binary.contentTypes.join(", ") : "";
    maxBytes.value = p.binary?.maxBytes ?? "";
    checkSchema();
    replace(stateArea, table(null, ["Access", "Version", "Updated", "History", "Binary values", "Change under way"],
      [[p.access, count(p.version), when(p.updatedDate), historyText(p), binaryText(p), pendingText(p) || "none"]], { id: "policy-state" }),
    p.indexes?.length ? table("Indexes", ["Name", "Path", "Type", "State", "Items indexed"],
      p.indexes.map((i) => [i.name, h("code", null, i.path || "(whole value)"), i.type, i.state, count(i.itemsIndexed)])) : null,
    p.indexBuild ? h("p", null, `An index build is under way (settles ${when(p.indexBuild.settlesAt)}).`, " ",
      h("button", { type: "button", onclick: (e) => busy(e.currentTarget, area, async () => {
        const res = await call("POST", path("admin", "apps", app, "namespaces", ns, "indexes", "build"));
        fill(res.body);
        notice(area, res.status === 200 ? "Every index is ready." : `The build goes on: send it again in ${res.headers.get("Retry-After") ?? 0} s.`);
      }) }, "Advance the build")) : null);
    replace(pendingArea, p.pending ? h("div", { role: "status", class: "warn" },
      h("p", null, h("strong", null, `Change under way: ${p.access} to ${p.pending.access}.`),
        ` Writes to ${ns} wait (503) until it completes; reads go on under ${p.access}.`),
      h("p", null, `It settles at ${when(p.pending.settlesAt)}; complete it from then until ${when(p.pending.lapsesAt)}, when it lapses and ${p.access} stays.`),
      h("button", { type: "button", id: "complete-change", onclick: (e) => busy(e.currentTarget, area, complete) }, "Complete the change")) : null);
  };

  // complete sends the change under way again, as the API stored it: its
  // target with the history, indexes and binary rule set with it. A change
  // back to the default policy is a DELETE, as it was announced.
  const complete = async () => {
    const b = request({ ...shown, ...shown.pending });
    const json = Object.keys(b).length === 1 && b.access === "shared" ? undefined : b;
    await send(json ? "PUT" : "DELETE", json);
  };

  // body is the whole policy the form describes, or throws saying what is
  // wrong with it before anything is sent.
  const body = () => {
    const problem = checkSchema();
    if (problem) throw Object.assign(new Error("The schema is not valid JSON"), { details: problem });
    const b = { access: access.value };
    if (schema.value.trim()) b.schema = JSON.parse(schema.value);
    if (versions.value !== "" && Number(versions.value) > 0) {
      b.history = { versions: Number(versions.value) };
      if (days.value !== "" && Number(days.value) > 0) b.history.days = Number(days.value);
    }
    try {
      const list = parseIndexes(indexes.value);
      if (list.length) b.indexes = list;
    } catch (e) {
      throw Object.assign(new Error("The indexes are not name:/path:type lines"), { details: e.message });
    }
    const typeList = types.value.split(/[\s,]+/).filter(Boolean);
    if (typeList.length) {
      b.binary = { contentTypes: typeList };
      if (maxBytes.value !== "") b.binary.maxBytes = Number(maxBytes.value);
    }
    return b;
  };

  // send sends a PUT or DELETE and shows what the API said: done, or a
  // change announced that the same request completes once it settles
  // (the change itself is shown by fill, from the policy answered).
  const send = async (method, json) => {
    const res = await call(method, route, { json });
    if (res.status === 204) {
      fill((await call("GET", route)).body);
      notice(area, "204 The namespace is back to the default policy.");
      return;
    }
    fill(res.body);
    if (res.status === 202) {
      replace(area, h("p", { role: "status" }, h("strong", null, "202 Change announced"),
        `: to ${res.body.pending?.access}. Retry-After: ${res.headers.get("Retry-After")} s.`));
      return;
    }
    notice(area, `${res.status} Policy saved (version ${res.body.version}).`);
  };

  // keepsChange says whether sending the policy b leaves the change under
  // way, if any: the API cancels it for a policy on the same side of
  // private as the one in effect. Otherwise the person is asked first.
  const keepsChange = async (b) => {
    const p = shown?.pending ? shown : null;
    if (!p || (b.access === "private") !== (p.access === "private")) return true;
    return confirm(`${ns} is changing from ${p.access} to ${p.pending.access}. Sending ${b.access} cancels that change: ${p.access} stays and writes resume.`,
      "Cancel the change");
  };

  const form = onSubmit(h("form", { "aria-label": `Policy of ${ns}` },
    field("Access", access, "shared: anyone reads and writes; private: a key space per caller; owner-write: only an item's creator changes it"),
    h("div", { class: "field" }, h("label", { for: "schema" }, "JSON Schema"), Object.assign(schema, { id: "schema" }),
      h("span", { class: "hint" }, "Every write's data must match it (422 otherwise). Empty: no schema."), schemaError),
    h("fieldset", null, h("legend", null, "History"),
      field("Versions kept", versions, "0 or empty: none"), field("Days kept", days, "0 or empty: no age limit")),
    field("Indexes", indexes, "One a line, name:/path:type (string or number), as uds set-policy --index takes them"),
    h("fieldset", null, h("legend", null, "Binary values"),
      field("Content types", types, "Such as image/png, image/*; empty: no rule"), field("Largest value (bytes)", maxBytes)),
    h("div", { class: "actions" }, h("button", null, "Save policy"),
      h("button", { type: "button", class: "danger", onclick: (e) => busy(e.currentTarget, area, async () => {
        if (!(await confirm(`Remove the policy of ${ns}? It goes back to shared, without schema, history, indexes or binary rule.`, "Remove policy"))) return;
        if (!(await keepsChange({ access: "shared" }))) return;
        await send("DELETE");
      }) }, "Remove policy"))), (button) => busy(button, area, async () => {
    const b = body();
    if (!(await keepsChange(b))) {
      notice(area, "Nothing sent: the change under way stands.");
      return;
    }
    await send("PUT", b);
  }));

  replace(view, heading(`Namespace ${ns}`),
    appSub(app, h("a", { href: `#/apps/${encodeURIComponent(app)}/namespaces` }, "All namespaces"),
      " · ", h("a", { href: itemsHash(app, ns) }, "Items")),
    stateArea, pendingArea, form, area);
  try {
    fill((await call("GET", route)).body);
  } catch (e) {
    showError(area, e);
  }
}
