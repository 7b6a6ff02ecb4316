package policy

import (
	"fmt"
	"strings"
)

// maxShadowChecks bounds the glob comparisons of the shadowing analysis (rules × earlier rules ×
// globs² grows to 10⁸ for the largest policy the CRD allows); past it no further rule is reported as
// shadowed, so the warnings of any policy take milliseconds.
const maxShadowChecks = 1 << 20

// PolicyWarnings lists problems that do not make a policy invalid but are almost certainly mistakes:
// rules that can never match (`when: false`, tool globs no tool name can match) and rules shadowed by
// an earlier rule without `when` whose tools cover theirs. The admission webhook returns them as
// warnings.
func PolicyWarnings(p PolicySpec) []string {
	env, err := baseCELEnv()
	if err != nil {
		return []string{err.Error()}
	}
	var out []string
	type earlier struct {
		index int
		name  string
		globs []glob
	}
	var unconditional []earlier
	checks := maxShadowChecks
	for i, r := range p.Rules {
		path := fmt.Sprintf("spec.rules[%d]", i)
		if r.When != "" && isConstBool(env, r.When, false) {
			out = append(out, fmt.Sprintf("%s (%s): when is always false; the rule can never match", path, r.Name))
			continue
		}
		live := 0
		for j, t := range r.Tools {
			if bad := impossibleGlob(t); bad != "" {
				out = append(out, fmt.Sprintf("%s.tools[%d] (%s): %q can never match a tool name: %s", path, j, r.Name, t, bad))
				continue
			}
			live++
		}
		if live == 0 && len(r.Tools) > 0 {
			out = append(out, fmt.Sprintf("%s (%s): no tool glob can match; the rule can never match", path, r.Name))
			continue
		}
		for _, e := range unconditional {
			if covers(e.globs, r.Tools, &checks) {
				out = append(out, fmt.Sprintf("%s (%s): shadowed by spec.rules[%d] (%s), which has no when and covers the same tools; the rule can never match",
					path, r.Name, e.index, e.name))
				break
			}
		}
		if r.When == "" || isConstBool(env, r.When, true) {
			globs := make([]glob, len(r.Tools))
			for j, t := range r.Tools {
				globs[j] = compileGlob(t)
			}
			unconditional = append(unconditional, earlier{i, r.Name, globs})
		}
	}
	return out
}

// impossibleGlob says why a glob can never match a tool name, or "" if it can.
func impossibleGlob(g string) string {
	if g == "" {
		return "it is empty"
	}
	if strings.TrimSpace(g) != g {
		return "it has leading or trailing whitespace"
	}
	for _, c := range g {
		if !toolNameChar(c) {
			if c == '?' || c == '[' {
				return fmt.Sprintf("%q is not a wildcard (only * is)", c)
			}
			return fmt.Sprintf("tool names do not contain %q", c)
		}
	}
	return ""
}

// covers reports whether every tool matched by any of later is matched by some glob of earlier;
// each comparison spends one of checks, and with none left the answer is false.
func covers(earlier []glob, later []string, checks *int) bool {
	if len(later) == 0 {
		return false
	}
	for _, t := range later {
		if impossibleGlob(t) != "" {
			continue
		}
		ok := false
		for i := range earlier {
			if *checks <= 0 {
				return false
			}
			*checks--
			if g := &earlier[i]; g.raw == t || g.raw == "*" || g.match(t) {
				ok = true
				break
			}
		}
		if !ok {
			return false
		}
	}
	return true
}
