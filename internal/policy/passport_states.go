package policy

import "time"

// EachPassport calls fn with the name, status (spec.status, StatusActive when empty), expiry and
// the end of an automatic suspension (zero when none) of every passport of the snapshot, in no
// particular order. It is what the decision endpoint's metrics report.
func (s *Snapshot) EachPassport(fn func(name, status string, expires, autoSuspendedUntil time.Time)) {
	for name, p := range s.passports {
		var until time.Time
		if a := p.src.AutoSuspension; a != nil {
			until = a.Until
		}
		fn(name, p.status, p.expires, until)
	}
}

// IsBuiltinToolName reports whether name is one of the exact tool names of the built-in
// tool-to-capability table (the glob mappings such as mcp__* excluded).
func IsBuiltinToolName(name string) bool {
	_, ok := builtinToolCapabilities[name]
	return ok
}
