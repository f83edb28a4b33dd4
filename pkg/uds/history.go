package uds

import "time"

// History is what a namespace keeps of the versions its writes replace:
// up to Versions replaced versions of each item, each for at most Days
// days (0: no age limit). The zero History keeps nothing.
type History struct {
	Versions int
	Days     int
}

// Bounds of a history policy.
const (
	MaxHistoryVersions = 100
	MaxHistoryDays     = 3650
)

// On reports whether the namespace keeps versions.
func (h History) On() bool { return h.Versions > 0 }

// Validate checks a history policy's bounds, naming the field at fault.
func (h History) Validate() error {
	switch {
	case h.Versions < 0 || h.Versions > MaxHistoryVersions:
		return Invalid("history.versions", "must be between 0 and %d, got %d", MaxHistoryVersions, h.Versions)
	case h.Days < 0 || h.Days > MaxHistoryDays:
		return Invalid("history.days", "must be between 1 and %d when given, got %d", MaxHistoryDays, h.Days)
	}
	return nil
}

// Age is how long a kept version lasts: 0 for no limit.
func (h History) Age() time.Duration { return time.Duration(h.Days) * 24 * time.Hour }

// Version is one entry of an item's history: a kept version, the current
// item, or a delete marker.
type Version struct {
	Version     int64
	UpdatedDate time.Time
	UpdatedBy   string
	// Size is the stored size the version holds (0 for a delete marker).
	Size    int64
	Deleted bool
	// Current marks the item as it stands (or the delete marker when the
	// item is deleted).
	Current bool
}
