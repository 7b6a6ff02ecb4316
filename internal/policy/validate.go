package policy

import (
	"fmt"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Field formats (the CRD's patterns, so the engine rejects what the API server would).
var (
	reCapabilityID = regexp.MustCompile(`^[a-z0-9]+(\.[a-z0-9]+)*$`)
	reReasonCode   = regexp.MustCompile(`^[a-z][a-z0-9_]*(\.[a-z0-9_]+)+$`)
	reRuleName     = regexp.MustCompile(`^[a-z0-9]([-a-z0-9_.]*[a-z0-9])?$`)
	rePolicyID     = regexp.MustCompile(`^[a-z0-9]+([._-][a-z0-9]+)*$`)
	reFieldPath    = regexp.MustCompile(`^[A-Za-z0-9_-]+(\.[A-Za-z0-9_-]+)*$`)
	reAgentID      = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._:-]*$`)
	reSAName       = regexp.MustCompile(`^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$`)
)

var (
	assuranceLevels = []string{"L0", "L1", "L2", "L3", "L4KYC", "L4FIN"}
	ownerTypes      = []string{"user", "team", "org", "service"}
	passportStatus  = []string{StatusActive, StatusSuspended, StatusRevoked}
)

func (e *errs) enum(path, val string, allowed []string) {
	if val != "" && !slices.Contains(allowed, val) {
		e.add(path, "unsupported value %q: must be one of %s", val, strings.Join(allowed, ", "))
	}
}

func (e *errs) pattern(path, val string, re *regexp.Regexp, max int) {
	if len(val) > max {
		e.add(path, "must be at most %d characters", max)
		return
	}
	if !re.MatchString(val) {
		e.add(path, "invalid value %q: must match %s", val, re.String())
	}
}

// ValidatePassport validates one passport spec; paths start with "spec.".
func ValidatePassport(p PassportSpec) field.ErrorList {
	fe, _ := checkPassport(p)
	return fe
}

// checkPassport validates one passport spec and returns the limits it compiled on the way, so a
// bundle compiles each passport's limits once.
func checkPassport(p PassportSpec) (field.ErrorList, passportLimits) {
	var e errs
	if p.AgentID != "" {
		e.pattern("spec.agentID", p.AgentID, reAgentID, 128)
	}
	if p.Owner.ID == "" {
		e.required("spec.owner.id")
	} else if len(p.Owner.ID) > 253 {
		e.add("spec.owner.id", "must be at most 253 characters")
	}
	e.enum("spec.owner.type", p.Owner.Type, ownerTypes)
	e.enum("spec.assuranceLevel", p.AssuranceLevel, assuranceLevels)
	e.enum("spec.status", p.Status, passportStatus)
	seen := map[string]bool{}
	for i, c := range p.Capabilities {
		path := fmt.Sprintf("spec.capabilities[%d].id", i)
		e.pattern(path, c.ID, reCapabilityID, 128)
		if seen[c.ID] {
			e.add(path, "duplicate capability %q", c.ID)
		}
		seen[c.ID] = true
	}
	limits := compileLimits(&e, p)
	e.enum("spec.unmappedTools", p.UnmappedTools, []string{UnmappedDeny, UnmappedAllow})
	for i, sa := range p.Subjects.ServiceAccounts {
		e.pattern(fmt.Sprintf("spec.subjects.serviceAccounts[%d]", i), sa, reSAName, 253)
	}
	return e.list, limits
}

// stringList converts a JSON list of strings ([]any or []string).
func stringList(v any) ([]string, bool) {
	switch t := v.(type) {
	case []string:
		return t, true
	case []any:
		out := make([]string, 0, len(t))
		for _, x := range t {
			s, ok := x.(string)
			if !ok {
				return nil, false
			}
			out = append(out, s)
		}
		return out, true
	case nil:
		return nil, true
	}
	return nil, false
}

func validateTools(e *errs, path string, tools []string, required bool) {
	if required && len(tools) == 0 {
		e.add(path, "at least one tool glob is required")
	}
	if len(tools) > 64 {
		e.add(path, "at most 64 tool globs are allowed")
	}
	for i, t := range tools {
		p := fmt.Sprintf("%s[%d]", path, i)
		switch {
		case t == "":
			e.add(p, "tool glob must not be empty")
		case len(t) > 128:
			e.add(p, "tool glob must be at most 128 characters")
		}
	}
}

func validateName(e *errs, path, name string, seen map[string]bool) {
	if name == "" {
		e.required(path)
		return
	}
	e.pattern(path, name, reRuleName, 63)
	if seen[name] {
		e.add(path, "duplicate name %q", name)
	}
	seen[name] = true
}

func parsePositiveDuration(s string) (time.Duration, error) {
	d, err := time.ParseDuration(s)
	if err != nil {
		return 0, fmt.Errorf("invalid duration %q (want e.g. 500ms, 30s, 1m, 1h)", s)
	}
	if d <= 0 {
		return 0, fmt.Errorf("duration %q must be positive", s)
	}
	return d, nil
}

func validateURL(e *errs, path, raw string) {
	if raw == "" {
		e.required(path)
		return
	}
	// The scheme is matched as written, as the CRD's pattern ^https?:// does (url.Parse lowercases it).
	u, err := url.Parse(raw)
	if err != nil || !strings.HasPrefix(raw, "http://") && !strings.HasPrefix(raw, "https://") || u.Host == "" {
		e.add(path, "must be an http:// or https:// URL")
	}
}
