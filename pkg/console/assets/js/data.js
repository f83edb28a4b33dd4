// Data: an item by namespace, id and sort key, pretty-printed with its
// metadata and ETag, edited with If-Match (a 412 shows the newer version),
// created, deleted after a confirmation, with its history and restores
// where the namespace keeps versions; a binary value as its type and size
// with a download link; a list browsed page by page with its cursor,
// order and key range; and a namespace's items and list items browsed page
// by page through the admin export of that namespace. The data calls act as
// the caller in the page's header.

import { call, path, ApiError } from "./api.js";
import { h, replace, field, onSubmit, busy, bytes, count, table, heading, notice, pretty, confirm, when, showError, download, errorBox, isImage, thumbnail } from "./ui.js";

function itemRoute(app, key) {
  return key.sk ? path("data", app, key.ns, key.id, key.sk) : path("data", app, key.ns, key.id);
}

function keyText(key) {
  return `${key.ns}/${key.id}${key.sk ? `/${key.sk}` : ""}`;
}

// dataHash is the page's location for a key (and list query).
function dataHash(app, params) {
  const q = new URLSearchParams(Object.entries(params).filter(([, v]) => v !== undefined && v !== ""));
  return `#/apps/${encodeURIComponent(app)}/data?${q}`;
}

// read answers the item as it stands: for JSON its body, for bytes the
// Uds-* headers' fields and the bytes (?inline reads a large value's bytes
// through the API too, up to its limit, rather than redirecting to S3).
async function read(app, key, version) {
  const res = await call("GET", itemRoute(app, key), { data: true, query: { inline: version === undefined, version } });
  const etag = res.headers.get("ETag");
  // A JSON item is known by its own marker, its data; a binary value is
  // answered as its bytes, never parsed whatever its type says.
  if (res.body && "data" in res.body) return { item: res.body, etag };
  const hd = (n) => res.headers.get(n);
  return {
    etag,
    blob: res.blob,
    item: {
      namespace: key.ns, id: key.id, sortKey: key.sk || undefined,
      contentType: res.type, size: Number(hd("Content-Length") ?? res.blob.size),
      className: hd("Uds-Class-Name") ?? undefined, version: Number(hd("Uds-Version")),
      createdDate: hd("Uds-Created-Date") ?? undefined, createdBySubject: hd("Uds-Created-By-Subject") ?? undefined,
      updatedDate: hd("Uds-Updated-Date") ?? undefined, updatedBySubject: hd("Uds-Updated-By-Subject") ?? undefined,
      expiresAt: hd("Uds-Expires-At") ?? undefined,
    },
  };
}

// metadata is an item's fields beside its value, and its ETag; an export
// record has no ETag (undefined), but an owner.
function metadata(item, etag) {
  const rows = [
    ["Version", count(item.version)],
    etag === undefined ? ["Owner", item.owner] : ["ETag", h("code", { "data-etag": etag ?? "" }, etag ?? "")],
    ["Class", item.className ?? ""], ["Created", `${when(item.createdDate)} by ${item.createdBySubject ?? "?"}`],
    ["Updated", `${when(item.updatedDate)} by ${item.updatedBySubject ?? "?"}`], ["Expires", when(item.expiresAt) || "never"],
  ];
  if (item.contentType) rows.push(["Type", item.contentType], ["Size", `${bytes(item.size)} (${count(item.size)} bytes)`]);
  return h("dl", { class: "meta" }, rows.flatMap(([k, v]) => [h("dt", null, k), h("dd", null, v)]));
}

// preview is a value in a table's cell: the start of its JSON, or a binary
// value's type and size.
function preview(it) {
  return it.data !== undefined ? h("code", { class: "preview" }, JSON.stringify(it.data).slice(0, 200)) : `${it.contentType}, ${bytes(it.size)}`;
}

// value shows a JSON value pretty-printed, or a binary one as its type and
// size with a link that saves its bytes.
function value(got, key) {
  if (got.item.data !== undefined) return h("pre", { class: "json", id: "item-data" }, pretty(got.item.data));
  const name = (key.sk || key.id).replace(/[^\w.-]+/g, "_");
  return h("div", null, got.blob && isImage(got.item.contentType) ? h("p", { id: "item-image" }, thumbnail(got.blob, `The image ${keyText(key)}`)) : null,
    h("p", { id: "item-binary" }, `A binary value: ${got.item.contentType}, ${bytes(got.item.size)}. `,
      got.blob ? download(got.blob, name) : null));
}

export async function dataPage(view, app, query) {
  const key = { ns: query.get("ns") ?? "", id: query.get("id") ?? "", sk: query.get("sk") ?? "" };
  const ns = h("input", { name: "namespace", required: true, value: key.ns, autocomplete: "off", spellcheck: "false" });
  const id = h("input", { name: "id", required: true, value: key.id, autocomplete: "off", spellcheck: "false" });
  const sk = h("input", { name: "sortKey", value: key.sk, autocomplete: "off", spellcheck: "false" });
  const pick = onSubmit(h("form", { class: "inline", "aria-label": "Pick an item or a list" },
    field("Namespace", ns), field("Id", id), field("Sort key", sk, "A list item's; empty for a key-value item"),
    h("div", { class: "actions" }, h("button", { name: "item" }, "Open item"), h("button", { name: "list" }, "Browse list"),
      // Browsing a namespace needs no id: the id's required is not checked.
      h("button", { name: "browse", formnovalidate: true }, "Browse items"))),
  (button) => {
    if (button?.name === "browse") {
      if (ns.reportValidity()) location.hash = dataHash(app, { ns: ns.value.trim(), browse: "1" });
      return;
    }
    const list = button?.name === "list";
    location.hash = dataHash(app, { ns: ns.value.trim(), id: id.value, sk: list ? "" : sk.value, list: list ? "1" : "" });
  });
  const body = h("div");
  replace(view, heading("Data"), h("p", { class: "sub" }, "App ", h("code", null, app)), pick, body);
  if (key.ns && query.get("browse")) {
    await browseView(body, app, key.ns, query);
    return;
  }
  if (!key.ns || !key.id) return;
  if (query.get("list")) {
    await listView(body, app, key, query);
  } else {
    await itemView(body, app, key);
  }
}

// keepsHistory reads whether the namespace's policy keeps versions (an
// admin call: where it fails, the history section says why).
async function keepsHistory(app, ns) {
  const { body } = await call("GET", path("admin", "apps", app, "namespaces", ns));
  return Boolean(body.history);
}

async function itemView(body, app, key) {
  const area = h("div", { "aria-live": "polite", id: "item-result" });
  const shown = h("section", { "aria-labelledby": "item-title" });
  const history = h("section", { "aria-labelledby": "history-title" });
  replace(body, shown, area, history);
  let current = null;

  const editor = (got) => {
    const text = h("textarea", { name: "data", rows: 12, spellcheck: "false", class: "code", id: "item-editor" });
    text.value = got?.item.data !== undefined ? pretty(got.item.data) : "{}";
    const className = h("input", { name: "className", value: got?.item.className ?? "", autocomplete: "off" });
    const problem = h("p", { id: "editor-error", class: "field-error", "aria-live": "polite" });
    text.setAttribute("aria-describedby", "editor-error");
    const check = () => {
      try {
        JSON.parse(text.value);
        problem.textContent = "";
        text.setAttribute("aria-invalid", "false");
        return true;
      } catch (e) {
        problem.textContent = `Not valid JSON: ${e.message}`;
        text.setAttribute("aria-invalid", "true");
        return false;
      }
    };
    text.addEventListener("input", check);
    const creating = !got;
    return onSubmit(h("form", { "aria-label": creating ? "Create the item" : "Edit the item" },
      h("div", { class: "field" }, h("label", { for: "item-editor" }, creating ? "New value (JSON)" : "Value (JSON)"), text, problem),
      field("Class name", className, "Optional"),
      h("div", { class: "actions" }, h("button", null, creating ? "Create item" : "Save (If-Match)"))), (button) => busy(button, area, async () => {
      if (!check()) return;
      const json = { data: JSON.parse(text.value) };
      if (className.value.trim()) json.className = className.value.trim();
      if (creating) {
        await call("POST", itemRoute(app, key), { data: true, json });
        await load();
        notice(area, `201 Created ${keyText(key)}.`);
        return;
      }
      // The item's expiry stays: a PUT without one would remove it.
      if (got.item.expiresAt && new Date(got.item.expiresAt) > new Date()) json.expiresAt = got.item.expiresAt;
      const res = await call("PUT", itemRoute(app, key), { data: true, json, headers: { "If-Match": got.etag }, accept: [412] });
      if (res.status === 412) {
        await newer(res);
        return;
      }
      await load();
      notice(area, `200 Saved: version ${current.item.version}, ETag ${current.etag}.`);
    }));
  };

  // newer shows the version that made an edit fail (412) beside the
  // editor, which keeps the person's text.
  const newer = async (res) => {
    const fresh = await read(app, key);
    replace(area, errorBox(new ApiError(412, res.body, res.headers)),
      h("section", { "aria-labelledby": "newer-title", class: "panel", id: "newer" },
        h("h3", { id: "newer-title" }, `The item changed: version ${fresh.item.version} (ETag ${fresh.etag})`),
        metadata(fresh.item, fresh.etag), value(fresh, key),
        h("button", { type: "button", onclick: () => {
          current = fresh;
          render();
          notice(area, `Editing version ${fresh.item.version}.`);
        } }, "Edit the newer version")));
  };

  const remove = h("button", { type: "button", class: "danger", onclick: (e) => busy(e.currentTarget, area, async () => {
    if (!(await confirm(`Delete ${keyText(key)} (version ${current.item.version})?`, "Delete item"))) return;
    await call("DELETE", itemRoute(app, key), { data: true, headers: { "If-Match": current.etag } });
    current = null;
    render();
    notice(area, `204 Deleted ${keyText(key)}.`);
    await showHistory();
  }) }, "Delete item");

  const render = () => {
    if (!current) {
      replace(shown, h("h2", { id: "item-title" }, `${keyText(key)}: no item`), editor(null));
      return;
    }
    replace(shown, h("h2", { id: "item-title" }, keyText(key)), metadata(current.item, current.etag), value(current, key),
      current.item.data !== undefined ? editor(current) : null, h("div", { class: "actions" }, remove));
  };

  const load = async () => {
    try {
      current = await read(app, key);
    } catch (e) {
      if (e.status !== 404) throw e;
      current = null;
      showError(area, e);
    }
    render();
    await showHistory();
  };

  // showHistory lists the item's versions, where the namespace keeps them,
  // page by page, each one readable and restorable. The policy is asked
  // once for the view: a create, save or restore shows the history again
  // without reading it again.
  let keepsAsked;
  const showHistory = async () => {
    let keeps;
    try {
      keepsAsked ??= keepsHistory(app, key.ns);
      keeps = await keepsAsked;
    } catch (e) {
      replace(history, h("h2", { id: "history-title" }, "History"), errorBox(e));
      return;
    }
    if (!keeps) {
      replace(history);
      return;
    }
    const rows = h("tbody");
    const more = h("button", { type: "button", hidden: true }, "More versions");
    const versionArea = h("div", { "aria-live": "polite" });
    let cursor;
    const page = () => busy(more, versionArea, async () => {
      const res = await call("GET", itemRoute(app, key), { data: true, query: { history: true, limit: 20, cursor }, accept: [404] });
      if (res.status === 404) {
        replace(rows, h("tr", null, h("td", { colspan: 6 }, "No versions: the item was never written, or nothing is kept.")));
        return;
      }
      cursor = res.body.cursor;
      more.hidden = !cursor;
      for (const v of res.body.versions) {
        const label = `version ${v.version}`;
        rows.append(h("tr", { "data-version": v.version },
          h("td", null, count(v.version)), h("td", null, v.current ? "current" : v.deleted ? "delete marker" : "kept"),
          h("td", null, when(v.updatedDate)), h("td", null, v.updatedBySubject ?? ""), h("td", null, bytes(v.size)),
          h("td", null, v.deleted ? "" : h("span", { class: "actions" },
            h("button", { type: "button", "aria-label": `View ${label}`, onclick: (e) => busy(e.currentTarget, versionArea, async () => {
              const got = await read(app, key, v.version);
              replace(versionArea, h("h3", null, `Version ${v.version}`), metadata(got.item, got.etag), value(got, key));
            }) }, "View"),
            v.current ? null : h("button", { type: "button", "aria-label": `Restore ${label}`, onclick: (e) => busy(e.currentTarget, versionArea, async () => {
              if (!(await confirm(`Restore version ${v.version} of ${keyText(key)} as its current version?`, "Restore"))) return;
              const res = await call("POST", itemRoute(app, key), { data: true, query: { restore: v.version } });
              await load();
              notice(area, `${res.status} Restored version ${v.version} as version ${res.body.version}.`);
            }) }, "Restore")))));
      }
    });
    more.addEventListener("click", page);
    replace(history, h("h2", { id: "history-title" }, "History"),
      h("div", { class: "scroll" }, h("table", { id: "history-table" },
        h("thead", null, h("tr", null, ["Version", "State", "Written", "By", "Size", "Actions"].map((x) => h("th", { scope: "col" }, x)))), rows)),
      more, versionArea);
    await page();
  };

  await load();
}

async function listView(body, app, key, query) {
  const start = h("input", { name: "startKey", value: query.get("startKey") ?? "", autocomplete: "off" });
  const end = h("input", { name: "endKey", value: query.get("endKey") ?? "", autocomplete: "off" });
  const order = h("select", { name: "sortOrder" }, h("option", { value: "ASC" }, "Ascending"), h("option", { value: "DESC" }, "Descending"));
  order.value = query.get("sortOrder") === "DESC" ? "DESC" : "ASC";
  const limit = h("input", { type: "number", name: "limit", min: 1, max: 1000, value: query.get("limit") ?? "20", inputmode: "numeric" });
  const area = h("div", { "aria-live": "polite", id: "list-status" });
  const results = h("div");
  const next = h("button", { type: "button", hidden: true, id: "next-page" }, "Next page");
  const first = h("button", { type: "button", hidden: true }, "First page");
  const cursors = [undefined];

  const show = (button) => busy(button, area, async () => {
    const pageNo = cursors.length;
    const res = await call("GET", path("data", app, key.ns, key.id, "list"), { data: true,
      query: { startKey: start.value, endKey: end.value, sortOrder: order.value, limit: limit.value, cursor: cursors[cursors.length - 1] } });
    const items = res.body.list;
    replace(results, table(`Page ${pageNo}: ${items.length} item${items.length === 1 ? "" : "s"}`, ["Sort key", "Version", "Updated", "Value"],
      items.map((it) => [
        h("a", { href: dataHash(app, { ns: key.ns, id: key.id, sk: it.sortKey }) }, it.sortKey),
        count(it.version), when(it.updatedDate), preview(it),
      ]), { id: "list-table" }));
    if (res.body.cursor) cursors.push(res.body.cursor);
    next.hidden = !res.body.cursor;
    first.hidden = pageNo === 1;
    notice(area, res.body.cursor ? `Page ${pageNo}; more items remain.` : `Page ${pageNo}, the last.`);
  });
  next.addEventListener("click", () => show(next));
  first.addEventListener("click", () => {
    cursors.splice(1);
    show(first);
  });
  const form = onSubmit(h("form", { class: "inline", "aria-label": "List query" },
    field("Start key", start, "Inclusive"), field("End key", end, "Exclusive"), field("Order", order), field("Items a page", limit),
    h("button", null, "Show")), (button) => {
    cursors.splice(1);
    show(button);
  });
  replace(body, h("h2", null, `List ${key.ns}/${key.id}`), form, area, results, h("div", { class: "actions" }, first, next));
  await show(null);
}

// browseView shows a namespace's items and list items, every owner's, page
// by page: the admin export of the namespace without kept versions, whose
// cursors it keeps for Previous and Next (and in the history entry, so that
// Back from an item opened here finds the same page). A page the export
// answers short (it ends at the next owner once half its time is gone) is
// filled from the pages after it. A shared item opens on the item's view;
// a private one only its owner reaches through the data routes, so its
// record is shown as the export read it, read-only.
async function browseView(body, app, ns, query) {
  const size = h("input", { type: "number", name: "pageSize", min: 1, max: 1000, value: query.get("limit") ?? "25", inputmode: "numeric" });
  const status = h("div", { "aria-live": "polite", id: "browse-status" });
  const results = h("div");
  const record = h("div", { id: "browse-record" });
  const prev = h("button", { type: "button", id: "browse-prev", disabled: true }, "Previous page");
  const next = h("button", { type: "button", id: "browse-next", disabled: true }, "Next page");
  // A shared namespace's items open through the data routes; in a private
  // one (or a record in its owner's key space, a stray elsewhere) not.
  const { body: policy } = await call("GET", path("admin", "apps", app, "namespaces", ns));
  const opens = (rec) => !rec.private && policy.access !== "private";
  // per is the page size the cursors were read with: a size typed but not
  // shown yet does not change what Previous and Next read.
  let per = Number(size.value);
  const saved = history.state?.browse;
  let { cursors, at } = saved?.ns === ns && saved?.per === per ? saved : { cursors: [null], at: 0 };

  // fill reads one page of records from cursor: as many as the page
  // takes, over as many export pages as that needs, while it is in view.
  const fill = async (cursor) => {
    const records = [];
    do {
      const { body: page } = await call("GET", path("admin", "apps", app, "export"),
        { query: { namespace: ns, history: "false", limit: per - records.length, cursor } });
      records.push(...page.records);
      cursor = page.cursor;
    } while (cursor && records.length < per && results.isConnected);
    return { records, cursor };
  };

  const showRecord = (rec) => {
    const title = h("h3", { id: "record-title", tabindex: "-1" }, `${rec.namespace}/${rec.id}${rec.sortKey ? `/${rec.sortKey}` : ""}: the exported record`);
    replace(record, h("section", { class: "panel", "aria-labelledby": "record-title" }, title,
      h("p", null, rec.private && policy.access === "private"
        ? `Private to ${rec.owner}: only its owner reaches this item through the data routes, so this is the record the export read, read-only.`
        : `A stray: it sits in the key space ${ns}'s policy does not use, where no data route reaches it; this is the record the export read, read-only.`),
      metadata(rec), h("pre", { class: "json", id: "record-json" }, pretty(rec))));
    title.focus();
  };

  const keep = () => history.replaceState({ ...history.state, browse: { ns, per, cursors, at } }, "");
  const load = async (i, button) => {
    const loaded = await busy(button, status, async () => {
      const { records, cursor } = await fill(cursors[i]);
      if (!results.isConnected) return false; // another page is shown
      if (i > 0 && !records.length && !cursor) {
        // The page before ended exactly where the records do, which the
        // export cannot know without reading on: it stays in view.
        cursors = cursors.slice(0, i);
        keep();
        notice(status, `Page ${i}, the last: no records follow it.`);
        return true;
      }
      cursors = [...cursors.slice(0, i + 1), ...(cursor ? [cursor] : [])];
      at = i;
      keep();
      const first = i * per + 1;
      const range = records.length ? `records ${count(first)} to ${count(first + records.length - 1)}` : "no records";
      replace(record);
      replace(results, table(`Page ${i + 1}: ${range}`, ["Owner", "Id", "Sort key", "Class", "Updated", "Value", "Open"],
        records.map((rec) => {
          const label = `${rec.id}${rec.sortKey ? `/${rec.sortKey}` : ""}`;
          return [rec.owner, rec.id, rec.sortKey ?? "", rec.className ?? "", when(rec.updatedDate), preview(rec),
            opens(rec)
              ? h("a", { href: dataHash(app, { ns, id: rec.id, sk: rec.sortKey }), "aria-label": `Open item ${label}`, "data-open": "" }, "Open item")
              : h("button", { type: "button", "aria-label": `View the record of ${label}`, "data-record": "", onclick: () => showRecord(rec) }, "View record")];
        }), { id: "browse-table", tabindex: "-1" }));
      results.querySelectorAll("tbody tr").forEach((tr, n) => {
        Object.assign(tr.dataset, { owner: records[n].owner, id: records[n].id, sk: records[n].sortKey ?? "" });
      });
      const more = cursor ? "more remain" : "the last";
      notice(status, i === 0 && !records.length ? `No items in ${ns}.` : `Page ${i + 1}, ${more}: ${range}.`);
      return true;
    });
    prev.disabled = at === 0;
    next.disabled = at + 1 >= cursors.length;
    // A paging button the new page disabled keeps no focus: the other one,
    // or the table, takes it.
    if (loaded && button?.disabled) (!prev.disabled ? prev : !next.disabled ? next : results.querySelector("table"))?.focus();
  };
  prev.addEventListener("click", () => load(at - 1, prev));
  next.addEventListener("click", () => load(at + 1, next));
  const form = onSubmit(h("form", { class: "inline", "aria-label": "Browse query" }, field("Records a page", size), h("button", null, "Show")),
    (button) => {
      per = Number(size.value);
      cursors = [null];
      load(0, button);
    });
  replace(body, h("h2", null, `Items of ${ns}`),
    h("p", { class: "hint" }, "Every owner's items and list items of the namespace, through the admin export: it reads each owner's index entries of the app, so a large app takes a while."),
    form, status, results, h("div", { class: "actions" }, prev, next), record);
  await load(at, null);
}
