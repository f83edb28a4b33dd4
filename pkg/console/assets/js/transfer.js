// Export and import: an app's export pages gathered into one JSON file to
// download, and a file (that JSON, or the NDJSON `uds export` writes) sent
// back in pages of up to 1000 records, with progress and the results.

import { call, path, pages } from "./api.js";
import { h, replace, field, onSubmit, busy, count, table, heading, download } from "./ui.js";
import { appSub } from "./apps.js";

const pageSize = 1000;

// records reads an export file: an object with "records", an array of
// records, or NDJSON, one record a line.
function records(text) {
  const trimmed = text.trim();
  if (trimmed === "") return [];
  try {
    const v = JSON.parse(trimmed);
    if (Array.isArray(v)) return v;
    if (v && Array.isArray(v.records)) return v.records;
    if (v && typeof v === "object") return [v];
  } catch {
    // Not one JSON value: NDJSON, read below line by line.
  }
  return trimmed.split("\n").filter((l) => l.trim()).map((line, i) => {
    try {
      return JSON.parse(line);
    } catch (e) {
      throw Object.assign(new Error("The file is not an export"), { details: `line ${i + 1}: ${e.message}` });
    }
  });
}

export async function transferPage(view, app) {
  // Export.
  const history = h("input", { type: "checkbox", name: "history", id: "export-history", checked: true });
  const exportBar = h("progress", { "aria-label": "Export progress", hidden: true });
  const exportStatus = h("div", { "aria-live": "polite", id: "export-status" });
  const exportForm = onSubmit(h("form", { "aria-label": "Export" },
    h("div", { class: "check" }, history, h("label", { for: "export-history" }, "Include kept versions and delete markers")),
    h("button", null, "Export")), (button) => busy(button, exportStatus, async () => {
    const all = [];
    let pageCount = 0;
    exportBar.hidden = false;
    exportBar.removeAttribute("value");
    try {
      await pages(path("admin", "apps", app, "export"), "records", (list) => {
        all.push(...list);
        pageCount += 1;
        replace(exportStatus, h("p", { role: "status" }, `Exporting: ${count(all.length)} records in ${pageCount} pages…`));
      }, { limit: pageSize, history: history.checked ? undefined : "false" });
    } finally {
      exportBar.hidden = true;
    }
    const file = new Blob([JSON.stringify({ applicationUuid: app, exportedAt: new Date().toISOString(), records: all }, null, 1)],
      { type: "application/json" });
    const name = `uds-export-${app}.json`;
    replace(exportStatus, h("p", { role: "status", "data-records": all.length }, `Exported ${count(all.length)} records in ${pageCount} pages. `,
      download(file, name)));
  }));

  // Import.
  const file = h("input", { type: "file", name: "file", accept: ".json,.ndjson,application/json", required: true });
  const importBar = h("progress", { "aria-label": "Import progress", value: 0, max: 1, hidden: true });
  const importStatus = h("div", { "aria-live": "polite", id: "import-status" });
  const importForm = onSubmit(h("form", { "aria-label": "Import" },
    field("Export file", file, "The JSON this page exports, or the NDJSON of uds export"),
    h("button", null, "Import")), (button) => busy(button, importStatus, async () => {
    const chosen = file.files[0];
    if (!chosen) return;
    const list = records(await chosen.text());
    const total = { imported: 0, skipped: 0, expired: 0, conflicts: [], notImported: [] };
    importBar.hidden = false;
    importBar.max = Math.max(list.length, 1);
    importBar.value = 0;
    for (let at = 0; at < list.length; at += pageSize) {
      const page = list.slice(at, at + pageSize);
      let res;
      try {
        res = await call("POST", path("admin", "apps", app, "import"), { json: { records: page } });
      } catch (e) {
        e.details = `records ${at + 1} to ${at + page.length} of ${list.length} (those before were imported): ${e.details}`;
        throw e;
      }
      total.imported += res.body.imported;
      total.skipped += res.body.skipped;
      total.expired += res.body.expired;
      total.conflicts.push(...res.body.conflicts.map((c) => ({ ...c, index: c.index + at })));
      total.notImported.push(...(res.body.notImported ?? []).map((l) => ({ ...l, index: l.index + at })));
      importBar.value = at + page.length;
      replace(importStatus, h("p", { role: "status" }, `Importing: ${count(at + page.length)} of ${count(list.length)} records…`));
    }
    replace(importStatus, h("div", { role: "status", id: "import-result" },
      h("p", null, `${count(list.length)} records: imported ${total.imported}, skipped ${total.skipped} already present, expired ${total.expired}, conflicts ${total.conflicts.length}.`),
      total.conflicts.length ? table("Conflicts: the key holds a different item (not written)", ["Record", "Namespace", "Id", "Sort key", "Stored version"],
        total.conflicts.map((c) => [count(c.index + 1), c.namespace, c.id, c.sortKey ?? "", count(c.version)])) : null,
      total.notImported.length ? table(`Not imported: ${count(total.notImported.length)} records (the others were)`, ["Record", "Namespace", "Id", "Sort key", "Why"],
        total.notImported.map((l) => [count(l.index + 1), l.namespace, l.id, l.sortKey ?? "", l.reason])) : null));
  }));

  replace(view, heading("Export & import"), appSub(app),
    h("section", { "aria-labelledby": "export" }, h("h2", { id: "export" }, "Export"),
      h("p", null, "Every record of the app (every owner, key-value items and lists), as one JSON file. Policies and limits are not in an export."),
      exportForm, exportBar, exportStatus),
    h("section", { "aria-labelledby": "import" }, h("h2", { id: "import" }, "Import"),
      h("p", null, "Records already there and identical are skipped; records whose key holds a different item are conflicts, left alone. Limits do not apply."),
      importForm, importBar, importStatus));
}
