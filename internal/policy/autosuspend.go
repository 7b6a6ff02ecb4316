package policy

import (
	"time"
)

// Defaults of a passport's spec.autoSuspend.
const (
	// DefaultAutoSuspendWithin is the window autoSuspend counts denials in when within is empty.
	DefaultAutoSuspendWithin = 10 * time.Minute
	// DefaultAutoSuspendFor is how long an automatic suspension lasts when for is empty.
	DefaultAutoSuspendFor = time.Hour
)

// AutoSuspend mirrors AgentPassport.spec.autoSuspend: denials denies within the window suspend the
// passport for the duration For. The controllers act on it; the engine only carries it.
type AutoSuspend struct {
	// Denials is how many denies within the window suspend the passport.
	Denials int32 `json:"denials"`
	// Within is the window (Go duration string, default DefaultAutoSuspendWithin).
	Within string `json:"within,omitempty"`
	// For is how long the suspension lasts (Go duration string, default DefaultAutoSuspendFor).
	For string `json:"for,omitempty"`
}

// WithinDuration returns the window, DefaultAutoSuspendWithin when empty, invalid or not positive.
func (a AutoSuspend) WithinDuration() time.Duration {
	return durationOr(a.Within, DefaultAutoSuspendWithin)
}

// ForDuration returns the suspension's length, DefaultAutoSuspendFor when empty, invalid or not
// positive.
func (a AutoSuspend) ForDuration() time.Duration {
	return durationOr(a.For, DefaultAutoSuspendFor)
}

func durationOr(s string, def time.Duration) time.Duration {
	d, err := time.ParseDuration(s)
	if err != nil || d <= 0 {
		return def
	}
	return d
}

// AutoSuspension is an automatic suspension in force, carried by a bundle's passport from the
// AgentPassport's status: until Until every call is denied with oap.passport_suspended and a reason
// saying it was automatic. It is not part of the passport's digest.
type AutoSuspension struct {
	// Until is when the suspension lifts (the engine stops applying it then, whatever the bundle).
	Until time.Time `json:"until"`
	// Reason says what triggered it, e.g. "20 denials within 10m0s".
	Reason string `json:"reason,omitempty"`
}

// autoSuspended returns the deny of a passport automatically suspended at now, and whether it is.
func autoSuspended(d Decision, p *cPassport, now time.Time) (Decision, bool) {
	a := p.src.AutoSuspension
	if a == nil || !now.Before(a.Until) {
		return d, false
	}
	msg := "passport " + p.src.Name + " is suspended automatically until " + a.Until.UTC().Format(time.RFC3339)
	if a.Reason != "" {
		msg += " (" + a.Reason + ")"
	}
	return deny(d, CodePassportSuspended, msg, ""), true
}
