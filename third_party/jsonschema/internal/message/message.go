// Package message stands in for golang.org/x/text/message, which the
// upstream package uses to print its error messages: UDS prints them in
// English only, with fmt's formatting, and leaves golang.org/x/text (about
// 230 KB of every binary) out. (UDS patch; see third_party/README.md.)
package message

import "fmt"

// Printer formats messages.
type Printer struct{}

// NewPrinter returns the English printer.
func NewPrinter() *Printer { return &Printer{} }

// Sprintf formats as fmt.Sprintf does.
func (*Printer) Sprintf(format string, a ...any) string { return fmt.Sprintf(format, a...) }
