// The API at the page's own origin: the local server, or `uds console`'s
// proxy to a deployed stack. Every call goes through call(), which answers
// the parsed body with the status and headers, and throws an ApiError for
// any answer the caller did not ask to take (so no error goes unseen) and
// for a network failure.

const BASE = "../rest/api/v1";

// config is what the server says of itself (config.json): whether the API
// takes the caller from X-Uds-Subject, what answers the page's calls
// (server), who data calls act as where the server decides (subject), how
// calls are authenticated (calls), and whether the page may subscribe to
// changes over the API's WebSocket (realtime).
export const config = { subjectHeader: false, server: "", subject: "", calls: "", realtime: false };

let caller = "";

// setCaller names the subject data calls act as, where the API takes it
// from the header. A change is announced (the page's "callerchange"
// event): a subscription made as the caller before is made again.
export function setCaller(subject) {
  const next = subject.trim();
  if (next === caller) return;
  caller = next;
  window.dispatchEvent(new CustomEvent("callerchange", { detail: caller }));
}

// realtimeURL is the API's WebSocket at the page's origin. The caller goes
// as the subject parameter where the API takes it from the header: a
// browser cannot set a WebSocket's headers.
export function realtimeURL() {
  const url = new URL(BASE + "/realtime", document.baseURI);
  url.protocol = url.protocol === "https:" ? "wss:" : "ws:";
  if (config.subjectHeader && caller) url.searchParams.set("subject", caller);
  return url.href;
}

// actAs makes subject the caller, as if typed in the caller field (which
// hears of it through the page's "caller" event): opening a private item
// from a listing acts as its owner, the only caller who reaches it.
export function actAs(subject) {
  setCaller(subject);
  window.dispatchEvent(new CustomEvent("caller", { detail: caller }));
}

export async function loadConfig() {
  const res = await fetch("config.json", { cache: "no-cache" });
  if (!res.ok) throw new ApiError(res.status, { error: "Console configuration not served" });
  Object.assign(config, await res.json());
}

// ApiError is an answer the page did not expect, or a network failure
// (status 0): its error and details are what the API said.
export class ApiError extends Error {
  constructor(status, body, headers) {
    const error = (body && body.error) || (status ? `HTTP ${status}` : "Network error");
    super(error);
    this.status = status;
    this.body = body ?? {};
    this.headers = headers ?? new Headers();
    this.details = this.body.details ?? (typeof this.body.message === "string" ? this.body.message : "");
  }
}

// path joins an API path's segments, each escaped: ids and sort keys may
// hold slashes, spaces and anything else.
export function path(...segments) {
  return segments.map((s) => "/" + encodeURIComponent(s)).join("");
}

// call sends one request. path is what follows /rest/api/v1 (built with
// path() for keys); query's members that are empty are left out; json is a
// body sent as JSON (of type contentType, application/json unless given),
// raw one sent as it is; data marks a data route, which
// carries the caller (subject instead, for this call only); accept lists the statuses besides 2xx that answer
// rather than throw (412 to show the newer version, say).
export async function call(method, route, { query, json, raw, contentType = "application/json", data = false, subject, headers = {}, accept = [] } = {}) {
  const url = new URL(BASE + route, document.baseURI);
  for (const [k, v] of Object.entries(query ?? {})) {
    if (v !== undefined && v !== null && v !== "" && v !== false) url.searchParams.set(k, v === true ? "" : String(v));
  }
  // A flag such as ?history or ?inline is sent bare: the API refuses
  // ?history= with a value, even an empty one.
  const href = url.href.replace(/=(?=&|$)/g, "");
  const h = new Headers(headers);
  let body;
  if (json !== undefined) {
    h.set("Content-Type", contentType);
    body = JSON.stringify(json);
  } else if (raw !== undefined) {
    body = raw;
  }
  const as = subject ?? caller;
  if (data && config.subjectHeader && as) h.set("X-Uds-Subject", as);
  let res;
  try {
    res = await fetch(href, { method, headers: h, body, cache: "no-store", redirect: "manual" });
  } catch (e) {
    throw new ApiError(0, { error: "Network error", details: `${method} ${url.pathname}: ${e.message}` });
  }
  if (res.type === "opaqueredirect") {
    throw new ApiError(0, { error: "Redirected", details: `${method} ${url.pathname} answered a redirect the page cannot follow` });
  }
  const type = res.headers.get("Content-Type") ?? "";
  let parsed = null;
  let blob = null;
  if (isApiJSON(type)) {
    const text = await res.text();
    try {
      parsed = text ? JSON.parse(text) : null;
    } catch {
      parsed = { error: `HTTP ${res.status}`, details: text.slice(0, 500) };
    }
  } else if (res.status !== 204 && res.status !== 304) {
    blob = await res.blob();
  }
  if (!res.ok && !accept.includes(res.status)) {
    if (parsed === null && blob) parsed = { error: `HTTP ${res.status}`, details: (await blob.text()).slice(0, 500) };
    throw new ApiError(res.status, parsed, res.headers);
  }
  return { status: res.status, headers: res.headers, body: parsed, blob, type };
}

// isApiJSON says an answer's type is the API's own JSON, application/json,
// which no binary value may have (the API refuses JSON types for bytes);
// not any type that merely holds "json", such as a value stored as
// text/json, whose bytes are the value and not an answer to read.
function isApiJSON(type) {
  return type.split(";")[0].trim().toLowerCase() === "application/json";
}

// pages calls a paged listing until its cursor ends, or until each page
// handler returns false; member names the page's array.
export async function pages(route, member, onPage, query = {}) {
  let cursor;
  do {
    const { body } = await call("GET", route, { query: { ...query, cursor } });
    if ((await onPage(body[member] ?? [], body)) === false) return body.cursor;
    cursor = body.cursor;
  } while (cursor);
  return undefined;
}
