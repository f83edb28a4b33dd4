// Recent changes: a namespace's changes feed (docs/changes.md), read as the
// page's data calls' caller and followed while the panel is in view. The
// feed starts with the namespace's items as they are and goes on with every
// change after, each an item as it is now or the tombstone of one that is
// gone; the panel keeps the latest entry of each key, the newest kept
// entries first, deleted ones marked. Once it has read the feed up to date
// it follows it live, where the server takes subscriptions
// (config.realtime: docs/realtime.md), from the cursor it reached, so
// that a change shows as soon as it is in the feed; otherwise, or when
// the server refuses the subscription, it reads again on its own, after
// 2 s and then twice as long each time nothing changed (up to 30 s).
// Refresh reads at once. A change of the caller starts the panel again
// from the beginning, as the new caller: a cursor is bound to its caller.

import { call, path, ApiError, config } from "./api.js";
import { subscribe } from "./realtime.js";
import { h, replace, busy, count, table, when, preview, showError } from "./ui.js";

// kept is how many entries the panel shows.
const kept = 50;

// pagesPerRead bounds one read of the feed: a namespace of many items is
// read over several reads, one after the other, rather than in one that
// keeps the panel busy for long.
const pagesPerRead = 20;

// The waits between reads while the feed is up to date.
const firstWait = 2000;
const longestWait = 30000;

// keyOf names an entry's item: its id and sort key.
const keyOf = (c) => JSON.stringify([c.id, c.sortKey ?? ""]);

// changesPanel shows the panel; onLive hears of each change that comes
// live, after the panel has shown it.
export function changesPanel(app, ns, onLive = () => {}) {
  // problem shows a read's failure (and is emptied by the next read);
  // state says when the feed was last read, without being announced at
  // every read as a live region would be.
  const problem = h("div", { "aria-live": "polite" });
  const state = h("p", { class: "hint", id: "changes-state" });
  const results = h("div");
  const refresh = h("button", { type: "button", id: "changes-refresh" }, "Refresh");
  const panel = h("section", { class: "panel", id: "changes", "aria-labelledby": "changes-title" },
    h("h2", { id: "changes-title" }, "Recent changes"),
    h("p", { class: "hint" }, `The namespace's changes feed, read as this page's caller: its items, then every change, `,
      `each item as it is now. `, config.realtime ? "Changes show as they are made." : "A write shows some seconds after it is made."),
    h("div", { class: "actions" }, refresh, state), problem, results);
  // The entries by key, in the order they came: an entry that comes again
  // moves to the end.
  const latest = new Map();
  let cursor = "";
  let wait = 0;
  let timer;
  let reading = false;
  let again = false;

  // keep puts entries in the panel's map, each as the latest of its key.
  const keep = (entries) => {
    for (const c of entries) {
      latest.delete(keyOf(c));
      latest.set(keyOf(c), c);
      if (latest.size > kept) latest.delete(latest.keys().next().value);
    }
  };

  // read reads the feed from the cursor until it is up to date, or for
  // pagesPerRead pages, and says whether entries came, whether more
  // remain, and whether it started again from the beginning. It does
  // that, emptying the panel as a replica would be emptied, when the
  // cursor no longer holds: the feed no longer continues it (410), or it
  // was read as another caller than the header's now (a cursor is bound
  // to its caller: 400 Invalid changes).
  const read = async () => {
    let changed = false;
    let restarted = false;
    for (let n = 0; n < pagesPerRead; n += 1) {
      const res = await call("GET", path("data", app, ns), { data: true, query: { changes: cursor || true }, accept: [400, 410] });
      if (res.status === 410 || (res.status === 400 && cursor && res.body?.error === "Invalid changes")) {
        latest.clear();
        cursor = "";
        changed = restarted = true;
        continue;
      }
      if (res.status === 400) throw new ApiError(res.status, res.body, res.headers);
      keep(res.body.changes);
      changed ||= res.body.changes.length > 0;
      cursor = res.body.cursor;
      if (res.body.upToDate) return { changed, restarted, more: false };
    }
    return { changed, restarted, more: true };
  };

  const show = () => {
    const entries = [...latest.values()].reverse();
    replace(results, table(entries.length ? `The latest ${count(entries.length)}, newest first` : "No entries",
      ["Id", "Sort key", "Change", "Version", "When", "Value"],
      entries.map((c) => [c.id, c.sortKey ?? "", c.deleted ? h("strong", null, "deleted") : "written",
        count(c.version), when(c.updatedDate), c.deleted ? "" : preview(c)]), { id: "changes-table" }));
    results.querySelectorAll("tbody tr").forEach((tr, n) => {
      Object.assign(tr.dataset, { id: entries[n].id, sk: entries[n].sortKey ?? "", version: entries[n].version });
      if (entries[n].deleted) tr.classList.add("deleted");
    });
  };

  // subscription is the live subscription, while there is one; note says
  // why the panel last started again from the beginning, until it is up
  // to date again.
  let subscription = null;
  let note = "";
  // restart is the note of a start from the beginning that the panel
  // chose (a new caller), for the read that makes it.
  let restart = "";
  // refused says the server refused the last subscription.
  let refused = false;
  const upToDate = (how) => {
    const now = new Date().toLocaleTimeString("en-GB");
    state.textContent = `${note}${how} as of ${now}`;
  };

  // listen follows the feed live from the cursor read up to.
  const listen = () => {
    subscription = subscribe({ app, ns, cursor }, () => panel.isConnected, {
      state: (s) => {
        if (s === "live") upToDate("Live: changes show as they are made; up to date");
        else state.textContent = "Connection lost: reconnecting…";
      },
      change: (c, next) => {
        keep([c]);
        cursor = next;
        show();
        upToDate("Live: changes show as they are made; up to date");
        onLive(c);
      },
      resync: () => {
        latest.clear();
        cursor = "";
        note = "Read again from the beginning: the cursor no longer held. ";
        show();
      },
      error: (e) => {
        // Refused (the namespace turned private, say): the panel reads
        // the feed as it does without subscriptions, until Refresh or a
        // new caller tries one again.
        subscription = null;
        refused = true;
        showError(problem, e);
        timer = setTimeout(() => follow(null), firstWait);
      },
    });
  };

  // follow reads the feed and then follows it live, or sets the next
  // read: at once while more remain or after a Refresh during the read,
  // after the first wait once something changed, and after twice the
  // last wait otherwise. It stops once the panel is no longer shown.
  const follow = async (button) => {
    if (!panel.isConnected) return;
    if (reading) {
      // A Refresh during a read is not lost: another read follows it.
      again = true;
      return;
    }
    clearTimeout(timer);
    subscription?.close();
    subscription = null;
    reading = true;
    const got = await busy(button, problem, read);
    reading = false;
    if (!panel.isConnected) return;
    if (got) {
      if (got.changed || !results.firstChild) show();
      note = got.restarted ? "Read again from the beginning: the cursor no longer held. " : restart;
      restart = "";
      if (got.more) state.textContent = `${note}Reading on…`;
      else upToDate("Up to date");
    }
    if (config.realtime && !refused && got && !got.more && !again) {
      listen();
      return;
    }
    wait = again || got?.more ? 0 : got?.changed ? firstWait : Math.min(Math.max(2 * wait, firstWait), longestWait);
    again = false;
    timer = setTimeout(() => follow(null), wait);
  };
  refresh.addEventListener("click", () => {
    wait = 0;
    refused = false;
    follow(refresh);
  });
  // A new caller reads the feed from the beginning, a moment after the
  // last keystroke in the caller field.
  let retype;
  const onCaller = () => {
    if (!panel.isConnected) {
      window.removeEventListener("callerchange", onCaller);
      return;
    }
    clearTimeout(retype);
    retype = setTimeout(() => {
      latest.clear();
      cursor = "";
      wait = 0;
      refused = false;
      restart = "Read again from the beginning: the caller changed. ";
      follow(null);
    }, 300);
  };
  window.addEventListener("callerchange", onCaller);
  // The first read starts once the panel is in the page.
  setTimeout(() => follow(null), 0);
  return panel;
}
