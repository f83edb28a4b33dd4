// Package docs carries the API's OpenAPI document, openapi.json beside
// this file, into the programs that serve it (the local server answers
// /openapi.json with it). The document stays here, with the guides that
// link it, rather than in a package of code: this is where people and
// the linter look for it, and embedding it keeps the served copy the file
// itself, never a second copy to keep in step.
package docs

import _ "embed"

// OpenAPI is openapi.json, as built into the program.
//
//go:embed openapi.json
var OpenAPI []byte
