// Data: an item by namespace, id and sort key, pretty-printed with its
// metadata and ETag, edited with If-Match (a 412 shows the newer version;
// an edit goes as a merge patch of what changed, patch.js),
// created, deleted after a confirmation, with its history and restores
// where the namespace keeps versions; a binary value as its type and size
// with a download link (and a picture's thumbnail); a list browsed page by
// page with its cursor, order and key range. Opened without a key, the
// page lists the app's namespaces that hold data, and a namespace's items
// and list items page by page, every owner's or one owner's, through the
// admin listing of its keys, beside its recent changes (changes.js). An
// item shown follows its changes live where the server takes
// subscriptions (realtime.js). The data calls act as the caller in the
// page's header.

import { call, path, ApiError, config, actAs } from "./api.js";
import { appSub } from "./apps.js";
import { namespacesTable } from "./namespaces.js";
import { changesPanel } from "./changes.js";
import { subscribe } from "./realtime.js";
import { mergePatch } from "./patch.js";
import { h, replace, field, onSubmit, busy, bytes, count, table, heading, notice, pretty, confirm, when, showError, download, errorBox, isImage, thumbnail, preview } from "./ui.js";

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
// headerText reads a header that holds a subject or a class name: the API
// percent-encodes one that holds %, characters outside printable ASCII or
// spaces at its ends, and headerValue writes one so.
function headerText(v) {
  if (v === null || !v.includes("%")) return v;
  try { return decodeURIComponent(v); } catch { return v; }
}

function headerValue(s) {
  if (/^[\x20-\x7e]*$/.test(s) && !s.includes("%") && s === s.trim()) return s;
  let out = "";
  for (const b of new TextEncoder().encode(s)) {
    out += b > 0x20 && b < 0x7f && b !== 0x25 ? String.fromCharCode(b) : "%" + b.toString(16).toUpperCase().padStart(2, "0");
  }
  return out;
}

async function read(app, key, version) {
  const res = await call("GET", itemRoute(app, key), { data: true, query: { inline: version === undefined, version } });
  const etag = res.headers.get("ETag");
  // A JSON item is known by its own marker, its data; a binary value is
  // answered as its bytes, never parsed whatever its type says.
  if (res.body && "data" in res.body) return { item: res.body, etag };
  const hd = (n) => headerText(res.headers.get(n));
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

// metadata is an item's fields beside its value, and its ETag.
function metadata(item, etag) {
  const rows = [
    ["Version", count(item.version)],
    ["ETag", h("code", { "data-etag": etag ?? "" }, etag ?? "")],
    ["Class", item.className ?? ""], ["Created", `${when(item.createdDate)} by ${item.createdBySubject ?? "?"}`],
    ["Updated", `${when(item.updatedDate)} by ${item.updatedBySubject ?? "?"}`], ["Expires", when(item.expiresAt) || "never"],
  ];
  if (item.contentType) rows.push(["Type", item.contentType], ["Size", `${bytes(item.size)} (${count(item.size)} bytes)`]);
  return h("dl", { class: "meta" }, rows.flatMap(([k, v]) => [h("dt", null, k), h("dd", null, v)]));
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
  const all = h("a", { href: `#/apps/${encodeURIComponent(app)}/data` }, "All namespaces");
  if (key.ns && query.get("browse")) {
    replace(view, heading(`Items of ${key.ns}`), appSub(app, all), body);
    await keysView(body, app, key.ns, query);
    return;
  }
  if (!key.ns) {
    // Opened without a key: the namespaces that hold data, each a link
    // to its items; a key typed in is the other way in.
    const listArea = h("div", { "aria-live": "polite" });
    replace(view, heading("Data"), appSub(app), h("h2", null, "Namespaces"), listArea,
      h("h2", null, "Open by key"), pick, body);
    await namespacesTable(app, listArea, true);
    return;
  }
  replace(view, heading("Data"), appSub(app, all), pick, body);
  if (!key.id) return;
  // A private item opened from a listing acts as its owner, the only
  // caller the data routes let reach it.
  if (query.get("as") && config.subjectHeader) actAs(query.get("as"));
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
  // live says whether the view follows the item's changes, liveNote what
  // the last change did to the view. Live's line is there from the first
  // render, so that the page does not move under a person's pointer when
  // the subscription starts.
  const live = h("p", { class: "hint", id: "item-live" }, config.realtime ? "Connecting for live changes…" : null);
  const liveNote = h("div", { "aria-live": "polite", id: "item-live-note" });
  replace(body, live, liveNote, shown, area, history);
  let current = null;

  const editor = (got) => {
    const text = h("textarea", { name: "data", rows: 12, spellcheck: "false", class: "code", id: "item-editor" });
    // The default value is the text as shown, so that a live change
    // knows whether the person has edited it since.
    text.defaultValue = got?.item.data !== undefined ? pretty(got.item.data) : "{}";
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
      const res = await save(got, json);
      if (res.status === 412) {
        await newer(res);
        return;
      }
      await load();
      notice(area, `200 Saved ${res.how}: version ${current.item.version}, ETag ${current.etag}.`);
    }));
  };

  // save writes an edit at the revision edited (If-Match): a merge patch
  // of what the person changed, so that the members left alone keep their
  // bytes, and the item its expiry; a PUT of the whole value where no
  // merge patch says it (a value that is not an object, a member set to
  // null, a class name removed).
  const save = async (got, json) => {
    const headers = { "If-Match": got.etag };
    const className = json.className ?? "";
    // A class name goes in a header (percent-encoded where it must be); a
    // header cannot say that the class name is removed.
    const headerable = className || !got.item.className;
    const patch = headerable ? mergePatch(got.item.data, json.data) : undefined;
    if (patch !== undefined) {
      if (className !== (got.item.className ?? "")) headers["Uds-Class-Name"] = headerValue(className);
      const res = await call("PATCH", itemRoute(app, key), { data: true, json: patch, contentType: "application/merge-patch+json", headers, accept: [412] });
      return { ...res, how: "as a merge patch of what changed" };
    }
    // The item's expiry stays: a PUT without one would remove it.
    if (got.item.expiresAt && new Date(got.item.expiresAt) > new Date()) json.expiresAt = got.item.expiresAt;
    const res = await call("PUT", itemRoute(app, key), { data: true, json, headers, accept: [412] });
    return { ...res, how: "as a whole value" };
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

  // The view's reads run one at a time, in the order asked, each
  // rendering what it read: a live change and the page's own write, which
  // the subscription also hears of, never show an older read over a newer.
  let queue = Promise.resolve();
  const serial = (work) => {
    const run = queue.then(work);
    queue = run.catch(() => {});
    return run;
  };

  const load = () => serial(async () => {
    try {
      current = await read(app, key);
    } catch (e) {
      if (e.status !== 404) throw e;
      current = null;
      showError(area, e);
    }
    render();
    await showHistory();
  });

  // refresh reads the item after a live change, and shows it if it is not
  // what the view shows (the page's own write is), unless the person has
  // edited its text: then the text stays, and the change is said.
  const refresh = () => serial(async () => {
    let fresh = null;
    try {
      fresh = await read(app, key);
    } catch (e) {
      if (e.status !== 404) throw e;
    }
    if ((fresh?.etag ?? null) === (current?.etag ?? null)) return;
    const what = fresh ? `Version ${fresh.item.version} was written` : "The item was deleted";
    const text = shown.querySelector("#item-editor");
    if (text !== null && text.value !== text.defaultValue) {
      notice(liveNote, `${what} meanwhile: the editor keeps your text, and saving it shows the newer version first (412).`);
      return;
    }
    current = fresh;
    render();
    await showHistory();
    notice(liveNote, `${what} meanwhile: shown.`);
  });

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
  if (config.realtime) follow(app, key, shown, live, () => refresh().catch((e) => showError(liveNote, e)));
}

// follow keeps an item's view up to date while it is shown: each change of
// the item calls changed, and live says whether the view is live. A new
// caller subscribes again, as the new caller.
function follow(app, key, shown, live, changed) {
  let sub;
  const start = () => {
    sub = subscribe({ app, ns: key.ns, key: key.id, sortKey: key.sk }, () => shown.isConnected, {
      state: (s) => {
        live.textContent = s === "live" ? "Live: changes to the item show as they are made." : "Connection lost: reconnecting…";
      },
      change: changed,
      // A resync says nothing of the item that its next change does not.
      resync: () => {},
      error: (e) => {
        live.textContent = `Not live: ${e.status} ${e.message}${e.details ? `: ${e.details}` : ""}`;
      },
    });
  };
  let retype;
  const onCaller = () => {
    if (!shown.isConnected) {
      window.removeEventListener("callerchange", onCaller);
      return;
    }
    clearTimeout(retype);
    retype = setTimeout(() => {
      sub.close();
      start();
    }, 300);
  };
  window.addEventListener("callerchange", onCaller);
  start();
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

// thumbnailLimit is the largest picture a listing reads to show: a
// listing reads each picture's bytes, so a large one is left to its view.
const thumbnailLimit = 512 * 1024;

// keysView shows a namespace's items and list items, page by page: every
// owner's, or one owner's (user=), sorted by key or newest first (order=),
// through the admin listing of the namespace's keys, whose cursors it
// keeps for Previous and Next (and in the history entry, so that Back from
// an item opened here finds the same page). Each of the listing's pages
// reads a bounded number of index entries, so it may hold fewer keys than
// asked, or none, and still have more after it: a page here is filled
// from as many of them as it takes, up to a bound of reads, and sorted as
// asked. An item opens on the item view; in a private namespace, under the
// local server, as its owner (the only caller who reaches it), and behind
// uds console not at all.
async function keysView(body, app, ns, query) {
  const size = h("input", { type: "number", name: "pageSize", min: 1, max: 200, value: query.get("limit") ?? "25", inputmode: "numeric" });
  const order = h("select", { name: "order" }, h("option", { value: "key" }, "by key"), h("option", { value: "newest" }, "newest first"));
  order.value = query.get("order") === "newest" ? "newest" : "key";
  const owner = h("input", { name: "owner", value: query.get("user") ?? "", autocomplete: "off", spellcheck: "false" });
  const status = h("div", { "aria-live": "polite", id: "browse-status" });
  const results = h("div");
  const prev = h("button", { type: "button", id: "browse-prev", disabled: true }, "Previous page");
  const next = h("button", { type: "button", id: "browse-next", disabled: true }, "Next page");
  const { body: policy } = await call("GET", path("admin", "apps", app, "namespaces", ns));
  const isPrivate = policy.access === "private";
  // opener is how a row's item opens: its link, or why it does not.
  const opener = (k, label) => {
    if (isPrivate && !config.subjectHeader) return h("span", { class: "hint" }, `Private to ${k.owner}`);
    const params = { ns, id: k.id, sk: k.sortKey, as: isPrivate ? k.owner : undefined };
    return h("a", { href: dataHash(app, params), "aria-label": `Open item ${label}`, "data-open": "" }, "Open item");
  };
  // The query the cursors were read with: what is typed but not shown yet
  // does not change what Previous and Next read.
  const shown = () => ({ ns, per: Number(size.value), order: order.value, user: owner.value.trim() });
  let q = shown();
  const saved = history.state?.keys;
  let { cursors, at } = saved && JSON.stringify(saved.q) === JSON.stringify(q) ? saved : { cursors: [null], at: 0 };

  // fill reads one page of keys from cursor: as many as the page takes,
  // over at most ten of the listing's pages, while it is in view.
  const fill = async (cursor) => {
    const keys = [];
    let reads = 0;
    do {
      const { body: page } = await call("GET", path("admin", "apps", app, "namespaces", ns, "items"),
        { query: { user: q.user, order: q.order, limit: Math.min(200, q.per - keys.length), cursor } });
      keys.push(...page.items);
      cursor = page.cursor;
      reads += 1;
    } while (cursor && keys.length < q.per && reads < 10 && results.isConnected);
    const byKey = (a, b) => a.id.localeCompare(b.id) || (a.sortKey ?? "").localeCompare(b.sortKey ?? "") || a.owner.localeCompare(b.owner);
    keys.sort(q.order === "newest" ? (a, b) => b.updatedDate.localeCompare(a.updatedDate) || byKey(a, b) : byKey);
    return { keys, cursor };
  };

  // thumbnails shows, beside each picture the page can open, the picture
  // itself, read from its bytes.
  const thumbnails = (keys, rows) => keys.forEach((k, n) => {
    if (!isImage(k.contentType) || k.size > thumbnailLimit || (isPrivate && !config.subjectHeader)) return;
    const cell = rows[n].querySelector("[data-value]");
    call("GET", itemRoute(app, { ns, id: k.id, sk: k.sortKey }), { data: true, subject: isPrivate ? k.owner : undefined, query: { inline: true } })
      .then((res) => cell.prepend(thumbnail(res.blob, `The image ${k.id}`)))
      .catch((e) => cell.append(" ", errorBox(e)));
  });

  const keep = () => history.replaceState({ ...history.state, keys: { q, cursors, at } }, "");
  const load = async (i, button) => {
    const loaded = await busy(button, status, async () => {
      replace(stale);
      readAt = Date.now();
      const { keys, cursor } = await fill(cursors[i]);
      if (!results.isConnected) return false; // another page is shown
      if (i > 0 && !keys.length && !cursor) {
        // The page before ended exactly where the keys do, which the
        // listing cannot know without reading on: it stays in view.
        cursors = cursors.slice(0, i);
        keep();
        notice(status, `Page ${i}, the last: no items follow it.`);
        return true;
      }
      cursors = [...cursors.slice(0, i + 1), ...(cursor ? [cursor] : [])];
      at = i;
      keep();
      const whose = q.user ? `${q.user}'s items` : "every owner's items";
      const range = keys.length ? `${count(keys.length)} ${keys.length === 1 ? "item" : "items"}` : "no items";
      replace(results, table(`Page ${i + 1}: ${range}, ${whose}, ${q.order === "newest" ? "newest first" : "by key"}`,
        ["Owner", "Id", "Sort key", "Class", "Updated", "Expires", "Value", "Open"],
        keys.map((k) => {
          const label = `${k.id}${k.sortKey ? `/${k.sortKey}` : ""}`;
          return [k.owner, k.id, k.sortKey ?? "", k.className ?? "", when(k.updatedDate), when(k.expiresAt) || "never",
            h("span", { "data-value": "" }, k.contentType ? `${k.contentType}, ${bytes(k.size)}` : `JSON, ${bytes(k.size)}`), opener(k, label)];
        }), { id: "browse-table", tabindex: "-1" }));
      const rows = [...results.querySelectorAll("tbody tr")];
      rows.forEach((tr, n) => {
        Object.assign(tr.dataset, { owner: keys[n].owner, id: keys[n].id, sk: keys[n].sortKey ?? "" });
      });
      thumbnails(keys, rows);
      const more = cursor ? "more may follow" : "the last";
      notice(status, i === 0 && !keys.length && !cursor ? `No items in ${ns}${q.user ? ` owned by ${q.user}` : ""}.` : `Page ${i + 1}, ${more}: ${range}.`);
      return true;
    });
    prev.disabled = at === 0;
    next.disabled = at + 1 >= cursors.length;
    // A paging button the new page disabled keeps no focus: the other one,
    // or the table, takes it.
    if (loaded && button?.disabled) (!prev.disabled ? prev : !next.disabled ? next : results.querySelector("table"))?.focus();
  };
  // stale says, once a change comes live, that the page shown may no
  // longer be the namespace's: the page is read again on request only,
  // so that rows do not move under the person's pointer.
  // A write older than the page's read is on it already (the feed may
  // send a change again); a delete's time is the stream's, too coarse to
  // tell, so a delete always counts.
  const stale = h("div", { "aria-live": "polite", id: "browse-stale" });
  let readAt = 0;
  const changed = (c) => {
    if (stale.firstChild || (!c.deleted && Date.parse(c.updatedDate) < readAt)) return;
    const again = h("button", { type: "button", id: "browse-again" }, "Read the page again");
    again.addEventListener("click", () => load(at, again));
    replace(stale, h("p", { role: "status" }, `The items changed since this page was read (${c.id}${c.sortKey ? `/${c.sortKey}` : ""}, first). `, again));
  };
  prev.addEventListener("click", () => load(at - 1, prev));
  next.addEventListener("click", () => load(at + 1, next));
  const form = onSubmit(h("form", { class: "inline", "aria-label": "Items query" },
    field("Order", order), field("Owner", owner, "Empty: every owner"), field("Items a page", size), h("button", null, "Show")),
  (button) => {
    q = shown();
    cursors = [null];
    // The address says the query, so that Back from an item comes to it.
    history.replaceState(history.state, "", dataHash(app, { ns, browse: "1", order: q.order === "newest" ? q.order : "", user: q.user, limit: q.per === 25 ? "" : q.per }));
    load(0, button);
  });
  replace(body,
    h("p", { class: "hint" }, `Access: ${policy.access}${isPrivate ? " (a key space per caller: each item is its owner's)" : ""}. `,
      "Pages walk the app's owners in turn; a page is sorted as asked."),
    form, status, results, h("div", { class: "actions" }, prev, next), stale, changesPanel(app, ns, changed));
  await load(at, null);
}
