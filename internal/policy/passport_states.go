package policy

import "time"

// EachPassport calls fn with the name, effective status (spec.status, StatusActive when empty) and
// expiry (zero when none) of every passport of the snapshot, in no particular order. It is what the
// decision endpoint's metrics report; fn must not keep references beyond the call.
func (s *Snapshot) EachPassport(fn func(name, status string, expires time.Time)) {
	for name, p := range s.passports {
		fn(name, p.status, p.expires)
	}
}

// IsBuiltinToolName reports whether name is one of the exact tool names of the built-in
// tool-to-capability table (the glob mappings such as mcp__* excluded).
func IsBuiltinToolName(name string) bool {
	_, ok := builtinToolCapabilities[name]
	return ok
}
