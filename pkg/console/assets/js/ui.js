// Small DOM helpers. Everything the page shows is built with h(), which sets
// text as text: stored data never becomes markup.

// h builds an element: props are attributes, except on* (listeners), class,
// and value/checked (properties); children are nodes, strings or arrays,
// null and false skipped.
export function h(tag, props, ...children) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(props ?? {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k.startsWith("on")) el.addEventListener(k.slice(2), v);
    else if (k === "class") el.className = v;
    else if (k === "value" || k === "checked") el[k] = v;
    else el.setAttribute(k, v === true ? "" : String(v));
  }
  add(el, children);
  return el;
}

function add(el, children) {
  for (const c of children) {
    if (c === null || c === undefined || c === false) continue;
    if (Array.isArray(c)) add(el, c);
    else el.append(c instanceof Node ? c : String(c));
  }
}

// replace empties el and fills it with children.
export function replace(el, ...children) {
  el.replaceChildren();
  add(el, children);
  return el;
}

let ids = 0;

// uid is a fresh id for a label's for= and aria-describedby.
function uid(prefix) {
  ids += 1;
  return `${prefix}-${ids}`;
}

// field is a labelled control: the label names it, the hint (if any)
// describes it.
export function field(label, control, hint) {
  control.id ||= uid("f");
  const parts = [h("label", { for: control.id }, label), control];
  if (hint) {
    const hintId = uid("hint");
    control.setAttribute("aria-describedby", hintId);
    parts.push(h("span", { id: hintId, class: "hint" }, hint));
  }
  return h("div", { class: "field" }, parts);
}

// errorBox shows an API error whole: its status and error, its details,
// and every other member of the body (the violations of a schema, the
// usage of a refused write), as the API wrote them.
export function errorBox(err) {
  const status = err.status ? `${err.status} ` : "";
  const rest = { ...(err.body ?? {}) };
  delete rest.error;
  delete rest.details;
  delete rest.timestamp;
  const retry = err.headers?.get?.("Retry-After");
  return h("div", { role: "alert", class: "error" },
    h("p", null, h("strong", null, status + (err.message || "Error"))),
    err.details ? h("p", { class: "details" }, err.details) : null,
    retry ? h("p", null, `Retry-After: ${retry} s`) : null,
    Object.keys(rest).length ? h("pre", { class: "json" }, JSON.stringify(rest, null, 2)) : null);
}

// report writes an error that is not the API's answer (a failure of the
// page's own code) to the browser's console as an error: the page shows
// it too, but a person debugging, and the console's browser test, which
// fails on any console error, must see it as the page's fault rather than
// as one more answer shown.
export function report(err) {
  if (!err.status && err.status !== 0) console.error(err);
}

// showError puts an error (an ApiError, or any other) in area.
export function showError(area, err) {
  report(err);
  replace(area, errorBox(err));
}

// notice shows a passing message (role=status: read without interrupting).
export function notice(area, text) {
  replace(area, h("p", { role: "status", class: "ok" }, text));
}

// busy runs work with button disabled and its errors shown in area, which
// it empties first: what an earlier action said no longer stands.
export async function busy(button, area, work) {
  if (button) button.disabled = true;
  replace(area);
  try {
    return await work();
  } catch (e) {
    showError(area, e);
    return undefined;
  } finally {
    if (button) button.disabled = false;
  }
}

// onSubmit handles a form's submit without navigating.
export function onSubmit(form, handler) {
  form.addEventListener("submit", (e) => {
    e.preventDefault();
    handler(e.submitter ?? null);
  });
  return form;
}

const units = ["B", "KiB", "MiB", "GiB", "TiB"];

// bytes is a count of bytes for people: 1536 is 1.5 KiB.
export function bytes(n) {
  let v = Number(n);
  let u = 0;
  while (Math.abs(v) >= 1024 && u < units.length - 1) {
    v /= 1024;
    u += 1;
  }
  return `${u === 0 ? v : v.toFixed(1)} ${units[u]}`;
}

export function count(n) {
  return Number(n).toLocaleString("en");
}

// when is an RFC 3339 instant, shortened for a table (UTC, to the second).
export function when(s) {
  return s ? s.replace("T", " ").replace(/\.\d+Z$|Z$/, " UTC") : "";
}

// preview is a value in a table's cell: the start of its JSON, or a binary
// value's type and size.
export function preview(it) {
  return it.data !== undefined ? h("code", { class: "preview" }, JSON.stringify(it.data).slice(0, 200)) : `${it.contentType}, ${bytes(it.size)}`;
}

// pretty is JSON for reading.
export function pretty(v) {
  return JSON.stringify(v, null, 2);
}

// table is a table with a caption and a header row; rows are arrays of
// cells (nodes or text).
export function table(caption, headers, rows, props) {
  return h("div", { class: "scroll" }, h("table", props,
    caption ? h("caption", null, caption) : null,
    h("thead", null, h("tr", null, headers.map((x) => (x instanceof Node ? x : h("th", { scope: "col" }, x))))),
    h("tbody", null, rows.map((cells) => h("tr", null, cells.map((c) => h("td", null, c)))))));
}

// confirm asks in the page's modal dialog and resolves true on Confirm.
export function confirm(text, action = "Confirm") {
  const dialog = document.getElementById("confirm");
  const ok = document.getElementById("confirm-ok");
  const cancel = document.getElementById("confirm-cancel");
  document.getElementById("confirm-text").textContent = text;
  ok.textContent = action;
  return new Promise((resolve) => {
    const done = (value) => {
      ok.removeEventListener("click", yes);
      cancel.removeEventListener("click", no);
      dialog.removeEventListener("cancel", no);
      dialog.close();
      resolve(value);
    };
    const yes = () => done(true);
    const no = () => done(false);
    ok.addEventListener("click", yes);
    cancel.addEventListener("click", no);
    dialog.addEventListener("cancel", no);
    dialog.showModal();
    cancel.focus();
  });
}

// download is a link that saves blob as a file named name. The link is a
// blob: URL of the console's own origin, which carries none of the
// headers the API answers stored bytes with (attachment, nosniff, a
// sandbox): opened as a page rather than saved, bytes typed text/html
// would be a document of the console's origin, whose script could call
// every route the console can. Typed as bytes, they are only ever saved.
export function download(blob, name) {
  const bytes = new Blob([blob], { type: "application/octet-stream" });
  return h("a", { href: URL.createObjectURL(bytes), download: name, class: "download" }, `Download ${name}`);
}

// heading is a page's h1, focused when the page is shown so that a screen
// reader announces where the person is.
export function heading(text) {
  return h("h1", { tabindex: "-1" }, text);
}

// imageTypes are the stored types shown as pictures: the raster formats
// every browser decodes. Not SVG, which is a document of its own (its
// script does not run in an <img>, but it is no thumbnail either).
const imageTypes = new Set(["image/png", "image/jpeg", "image/gif", "image/webp"]);

// isImage says a binary value's content type is one shown as a picture.
export function isImage(type) {
  return imageTypes.has((type ?? "").split(";")[0].trim().toLowerCase());
}

// thumbnail shows an image's bytes, fetched by the page, through a blob:
// URL: an <img> naming the API's URL of the value could not send the
// caller, and uds console refuses a browser's image load of an API path.
// Bytes that do not decode say so instead.
export function thumbnail(blob, alt) {
  const url = URL.createObjectURL(blob);
  const img = h("img", { src: url, alt, class: "thumb" });
  img.addEventListener("load", () => URL.revokeObjectURL(url));
  img.addEventListener("error", () => {
    URL.revokeObjectURL(url);
    img.replaceWith(h("span", { class: "hint", "data-undecodable": "" }, "(the bytes are not a picture)"));
  });
  return img;
}
