package uds

import "fmt"

// ErrNoStreams: this deployment reads no stream of the data tables (they
// were imported from a seed deployment, whose tables the stack does not
// control), so nothing would count writes in streamed mode.
var ErrNoStreams = NewError(CodeNotConfigured, "streamed quotas not available")

// ErrNoChangesFeed: this deployment reads no stream of the data tables, so
// nothing writes their changes into the changes feed, and a read of it
// would show a namespace's items once and then nothing, whatever changes.
var ErrNoChangesFeed = NewError(CodeNotConfigured, "changes feed not available")

// QuotaMode is how an app's quotas are kept (docs/decisions/quotas.md, "Quota
// modes").
type QuotaMode string

const (
	// QuotaStrict, the default, charges every write to its owner's usage
	// in the write's own transaction: the limit is never passed.
	QuotaStrict QuotaMode = "strict"
	// QuotaStreamed writes items with plain conditional writes and sums
	// usage from the tables' streams, exactly once per change: a write is
	// refused when the owner's tracked usage leaves no room for it, so an
	// owner can pass its limit only by what it writes within the stream's
	// lag.
	QuotaStreamed QuotaMode = "streamed"
)

// QuotaModes lists the modes, the default first.
var QuotaModes = []QuotaMode{QuotaStrict, QuotaStreamed}

// ParseQuotaMode reads a mode's name as QuotaModes spells it.
func ParseQuotaMode(s string) (QuotaMode, error) {
	for _, m := range QuotaModes {
		if s == string(m) {
			return m, nil
		}
	}
	return "", fmt.Errorf("%w: quota mode %q is none of %q and %q", ErrInvalid, s, QuotaStrict, QuotaStreamed)
}
