// Package docscheck checks the repository's Markdown documents: every
// relative link names a file that exists and, where it names an anchor, a
// heading or an explicit anchor of that file, as GitHub renders them. The
// documents link to each other by section (the README's map of the guides,
// the guides to the decisions), and a heading renamed or a file moved
// would otherwise break them silently.
package docscheck
