// Live changes over the API's WebSocket (docs/realtime.md): one
// subscription a connection, to a namespace, a list or an item, as the
// page's caller. A connection that drops is made again after a pause that
// doubles up to 30 s, and the subscription goes on from the last cursor it
// received, so that a drop costs time and never a change. A resync (the
// cursor is older than the feed keeps) starts again from the beginning,
// after the page heard to empty what it shows.

import { realtimeURL, ApiError } from "./api.js";

const firstPause = 500;
const longestPause = 30000;

// subscribe follows target ({app, ns, key, sortKey, cursor}; cursor
// undefined for the changes from now on, "" for the beginning) while
// alive() holds, calling on.change(entry, cursor) for each change,
// on.resync() before the subscription starts again from the beginning,
// on.state("live" or "reconnecting") as the connection comes and goes,
// and on.error(ApiError) once when the server refuses the subscription
// (which ends it). It answers a handle whose close() ends it.
export function subscribe(target, alive, on) {
  let cursor = target.cursor;
  let ws = null;
  let pauses = 0;
  let timer;
  let ended = false;

  const end = () => {
    ended = true;
    clearTimeout(timer);
    clearInterval(watch);
    ws?.close(1000);
  };
  // The page has no event for a view that is no longer shown: the
  // subscription looks every second, and at each message.
  const watch = setInterval(() => {
    if (!alive()) end();
  }, 1000);

  const send = () => ws.send(JSON.stringify({ action: "subscribe", id: "1", applicationUuid: target.app,
    namespace: target.ns, key: target.key || undefined, sortKey: target.sortKey || undefined, cursor }));

  const connect = () => {
    if (ended) return;
    if (!alive()) return end();
    const socket = new WebSocket(realtimeURL());
    ws = socket;
    socket.addEventListener("open", send);
    socket.addEventListener("message", (e) => {
      if (ended || socket !== ws) return;
      if (!alive()) return end();
      const m = JSON.parse(e.data);
      if (m.id !== "1") return;
      switch (m.type) {
        case "subscribed":
          pauses = 0;
          if (m.cursor !== undefined) cursor = m.cursor;
          on.state("live");
          break;
        case "change":
          cursor = m.cursor;
          on.change(m.change, m.cursor);
          break;
        case "resync":
          cursor = "";
          on.resync();
          send();
          break;
        case "error":
          // A rate limit or a cap passes: the subscription is made
          // again later, as after a drop. Anything else is final.
          if (m.status === 429) {
            socket.close(1000);
            return;
          }
          end();
          on.error(new ApiError(m.status, m));
          break;
      }
    });
    socket.addEventListener("close", () => {
      if (ended || socket !== ws) return;
      on.state("reconnecting");
      const bound = Math.min(firstPause * 2 ** pauses, longestPause);
      pauses += 1;
      timer = setTimeout(connect, bound / 2 + Math.random() * (bound / 2));
    });
  };
  connect();
  return { close: end };
}
