// Package jsonpatch applies patches to a JSON document given as bytes:
// JSON Merge Patch (RFC 7396) with MergePatch, and JSON Patch (RFC 6902)
// with Parse and Patch.Apply, its paths JSON Pointers (RFC 6901).
//
// # What a patch does not touch keeps its bytes
//
// A client that patches one member of a value expects every other member
// to come back as it was: a number written 1.0 or 1e2 stays so, not 1 or
// 100, a large integer does not lose digits to float64, and members keep
// their order. Decoding the document into Go values and encoding it again
// (encoding/json's Unmarshal and Marshal) keeps none of that, and costs
// the work of decoding everything to change one member.
//
// So the document is never decoded as a whole. It is validated once, as a
// whole, and held as a span of its bytes; only the objects and arrays a
// patch goes into are split into members or elements, each again a span
// until the patch goes into it. The result is written out from that tree:
// each value the patch did not reach is its original bytes, and each
// object keeps its members in their order, a member that a patch adds
// going at the end of its object (a JSON Patch add at an array index goes
// where the index says). A member that a patch replaces keeps its place
// and its name as spelt (escapes included). Values a patch brings in are
// copied from the patch's bytes the same way: a number is written as the
// patch wrote it.
//
// The result is compact: white space between tokens, in the document or
// in the patch, is left out, and nothing else is changed (strings keep
// their escapes, as encoding/json's Compact does with HTML escaping off).
// A store's data is already compact (UDS stores a value compacted), so for
// it the bytes of an untouched member are exactly the bytes it had.
//
// # Errors
//
// The errors say which answer an HTTP server gives: *InvalidError for a
// patch document that is malformed (400, naming the operation and member),
// *ConflictError for an operation that does not apply to the document, a
// failed test or a missing location (409, naming the operation and its
// path), *TooLargeError for a JSON Patch whose result passes the limit
// (413), and *DocumentError for a document that is not valid JSON, which a
// store's own data never is.
//
// # Limits
//
// A JSON Patch has at most MaxOperations operations; documents, patches
// and results nest at most MaxDepth deep, as encoding/json allows; a JSON
// Patch result is at most DefaultMaxBytes, or the limit given to
// ApplyLimit, as copy operations could otherwise double the document
// each. Objects look names up through a map once they have more than a
// few members, and a removed member leaves a gap rather than moving the
// others, so that many operations on one large object do not take time
// quadratic in its size; where a large container ends is noted as the
// document is validated, so that following a path into a deeply nested
// document does not read the inner levels once for each level above them.
//
// Like encoding/json, the package does not refuse strings that are not
// valid UTF-8: it copies them as they are, and reads member names and
// pointer tokens as encoding/json does (each invalid byte as U+FFFD), so
// that a name matches where encoding/json would match it. It refuses an
// object that names a member twice only where a patch goes into it (where
// a name would mean two values), with a *DocumentError. Elsewhere such
// objects, and bytes that are not UTF-8, are copied into the result as
// they stand: a caller that must not store them refuses them in the patch
// document and the document before applying one to the other, as the UDS
// server refuses them in every JSON body it reads.
package jsonpatch
