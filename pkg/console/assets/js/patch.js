// Patch: the JSON Merge Patch (RFC 7396) that turns one value into
// another, for the item editor, which sends what the person changed rather
// than the whole value: the members left alone keep their bytes on the
// server (a number written 1.50 stays so, a large integer keeps its
// digits, which a value read into JavaScript and written back would not).

function isObject(v) {
  return v !== null && typeof v === "object" && !Array.isArray(v);
}

// setsNull reports whether a value brought in by a merge patch holds an
// object member that is null, which the patch would read as removing it.
// Arrays are taken whole, their nulls included.
function setsNull(v) {
  return isObject(v) && Object.values(v).some((m) => m === null || setsNull(m));
}

function same(a, b) {
  return JSON.stringify(a) === JSON.stringify(b);
}

// mergePatch is the merge patch that makes after of before, or undefined
// where none can: when either is not an object, or after gives a member
// the value null.
export function mergePatch(before, after) {
  if (!isObject(before) || !isObject(after)) return undefined;
  const patch = {};
  for (const name of Object.keys(before)) {
    if (!Object.hasOwn(after, name)) patch[name] = null;
  }
  for (const [name, v] of Object.entries(after)) {
    const was = Object.hasOwn(before, name) ? before[name] : undefined;
    if (was !== undefined && same(was, v)) continue;
    if (v === null) return undefined;
    if (isObject(v) && isObject(was)) {
      const inner = mergePatch(was, v);
      if (inner === undefined) return undefined;
      patch[name] = inner;
      continue;
    }
    if (setsNull(v)) return undefined;
    patch[name] = v;
  }
  return patch;
}
