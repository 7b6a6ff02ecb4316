package policy

import (
	"fmt"
	"maps"
	"math"
	"slices"

	"github.com/tollgate-dev/tollgate/internal/policy/hosts"
	"github.com/tollgate-dev/tollgate/internal/policy/paths"
	"github.com/tollgate-dev/tollgate/internal/policy/shell"
)

// Passport limit keys the engine enforces (under spec.limits.<capability id>).
const (
	// LimitAllowedCommands lists the programs a shell call may run ("*" any); every command of the
	// script counts, wrappers (sudo, env, xargs, find -exec, …) included.
	LimitAllowedCommands = "allowed_commands"
	// LimitBlockedPatterns lists commands ("rm -rf", "sudo", "curl | sh") and paths ("/etc/shadow",
	// "~/.ssh") a shell call must not run or touch.
	LimitBlockedPatterns = "blocked_patterns"
	// LimitAllowDynamicCommands lets a shell call run programs whose name is not known statically.
	LimitAllowDynamicCommands = "allow_dynamic_commands"
	// LimitAllowInlineCode lets a shell call run interpreter code the guard cannot see into
	// (python -c, node -e, curl | sh, bash -c "$x").
	LimitAllowInlineCode = "allow_inline_code"
	// LimitAllowedPaths restricts data.file.read / data.file.write calls to these path globs.
	LimitAllowedPaths = "allowed_paths"
	// LimitBlockedPaths lists path globs that file tools and shell commands must not touch.
	LimitBlockedPaths = "blocked_paths"
	// LimitSensitiveBaseline, set to false, turns off the built-in sensitive-path baseline.
	LimitSensitiveBaseline = "sensitive_baseline"
	// LimitMaxFileBytes caps the content a data.file.write call writes (also read from the
	// capability's params).
	LimitMaxFileBytes = "max_file_bytes"
	// LimitAllowedDomains restricts URLs (web.fetch, and URLs anywhere in a call) to these hosts,
	// "*.suffix" globs, IPs and CIDRs; it also lifts the default block of private addresses it names.
	LimitAllowedDomains = "allowed_domains"
	// LimitBlockedDomains lists hosts, "*.suffix" globs, IPs and CIDRs a call must not reach.
	LimitBlockedDomains = "blocked_domains"
)

// Kinds of limit values.
const (
	kindList = "list"
	kindBool = "bool"
	kindInt  = "int"
)

// limitKeys are the keys each capability's limits may use that the engine reads (others are free-form).
var limitKeys = map[string]map[string]string{
	CapCommandExecute: {LimitAllowedCommands: kindList, LimitBlockedPatterns: kindList,
		LimitAllowDynamicCommands: kindBool, LimitAllowInlineCode: kindBool, LimitSensitiveBaseline: kindBool},
	CapFileRead:  {LimitAllowedPaths: kindList, LimitBlockedPaths: kindList, LimitSensitiveBaseline: kindBool},
	CapFileWrite: {LimitAllowedPaths: kindList, LimitBlockedPaths: kindList, LimitSensitiveBaseline: kindBool, LimitMaxFileBytes: kindInt},
	CapWebFetch:  {LimitAllowedDomains: kindList, LimitBlockedDomains: kindList},
}

// cmdLimits are a passport's limits for system.command.execute.
type cmdLimits struct {
	restrict     bool // allowed_commands set and without "*"
	allowed      map[string]struct{}
	patterns     []*shell.CommandPattern
	blockedPaths *paths.Set // the path entries of blocked_patterns
	allowDynamic bool
	allowCode    bool
	baseline     bool
}

// fileLimits are a passport's limits for data.file.read or data.file.write.
type fileLimits struct {
	allowed  *paths.Set // nil: any path
	blocked  *paths.Set // nil: none
	baseline bool
	maxBytes int64 // 0: no cap
}

// webLimits are a passport's limits for web.fetch.
type webLimits struct {
	allowed *hosts.HostSet // nil: any public host
	blocked *hosts.HostSet
}

// passportLimits are the limits the engine enforces, compiled once per passport.
type passportLimits struct {
	cmd   cmdLimits
	read  fileLimits
	write fileLimits
	web   webLimits
}

// limitsOf returns the limits object of a capability (nil when absent or not an object).
func limitsOf(spec PassportSpec, capID string) map[string]any {
	m, _ := spec.Limits[capID].(map[string]any)
	return m
}

// compileLimits validates and compiles the limits the engine enforces; problems are reported at
// spec.limits[<capability>].<key>[i]. The result is usable even when e gained errors.
func compileLimits(e *errs, spec PassportSpec) passportLimits {
	var l passportLimits
	for _, capID := range slices.Sorted(maps.Keys(limitKeys)) {
		keys := limitKeys[capID]
		raw, ok := spec.Limits[capID]
		if !ok || raw == nil {
			continue
		}
		base := "spec.limits[" + capID + "]"
		m, ok := raw.(map[string]any)
		if !ok {
			e.add(base, "must be an object")
			continue
		}
		for _, key := range slices.Sorted(maps.Keys(keys)) {
			kind := keys[key]
			v, ok := m[key]
			if !ok || v == nil {
				continue
			}
			switch kind {
			case kindList:
				if _, ok := stringList(v); !ok {
					e.add(base+"."+key, "must be a list of strings")
				}
			case kindBool:
				if _, ok := v.(bool); !ok {
					e.add(base+"."+key, "must be true or false")
				}
			case kindInt:
				if f, ok := v.(float64); !ok || f < 0 || f != math.Trunc(f) {
					if _, isInt := v.(int64); !isInt {
						e.add(base+"."+key, "must be a non-negative integer")
					}
				}
			}
		}
	}
	l.cmd = compileCmdLimits(e, spec)
	l.read = compileFileLimits(e, spec, CapFileRead)
	l.write = compileFileLimits(e, spec, CapFileWrite)
	l.web = compileWebLimits(e, spec)
	return l
}

func boolLimit(m map[string]any, key string, def bool) bool {
	if b, ok := m[key].(bool); ok {
		return b
	}
	return def
}

func compileCmdLimits(e *errs, spec PassportSpec) cmdLimits {
	c := cmdLimits{baseline: true}
	m := limitsOf(spec, CapCommandExecute)
	if m == nil {
		return c
	}
	base := "spec.limits[" + CapCommandExecute + "]."
	c.allowDynamic = boolLimit(m, LimitAllowDynamicCommands, false)
	c.allowCode = boolLimit(m, LimitAllowInlineCode, false)
	c.baseline = boolLimit(m, LimitSensitiveBaseline, true)
	if v, ok := m[LimitAllowedCommands]; ok && v != nil {
		list, _ := stringList(v)
		if !slices.Contains(list, "*") {
			c.restrict = true
			c.allowed = make(map[string]struct{}, len(list))
			for _, name := range list {
				c.allowed[name] = struct{}{}
			}
		}
	}
	list, _ := stringList(m[LimitBlockedPatterns])
	var pathPatterns []string
	for i, b := range list {
		p := fmt.Sprintf("%s%s[%d]", base, LimitBlockedPatterns, i)
		switch {
		case b == "":
			e.add(p, "must not be empty")
		case shell.IsPathPattern(b):
			if _, err := paths.CompilePattern(b); err != nil {
				e.add(p, "invalid path pattern: %v", err)
				continue
			}
			pathPatterns = append(pathPatterns, b)
		default:
			cp, err := shell.CompilePattern(b)
			if err != nil {
				e.add(p, "not a command pattern: %v", err)
				continue
			}
			c.patterns = append(c.patterns, cp)
		}
	}
	if len(pathPatterns) > 0 {
		c.blockedPaths, _ = paths.CompileSet(pathPatterns)
	}
	return c
}

func compilePathSet(e *errs, path string, v any) *paths.Set {
	list, ok := stringList(v)
	if !ok || v == nil {
		return nil
	}
	set, problems := paths.CompileSet(list)
	for _, err := range problems {
		e.add(path, "%v", err)
	}
	return set
}

func compileFileLimits(e *errs, spec PassportSpec, capID string) fileLimits {
	f := fileLimits{baseline: true}
	m := limitsOf(spec, capID)
	base := "spec.limits[" + capID + "]."
	if m != nil {
		f.baseline = boolLimit(m, LimitSensitiveBaseline, true)
		if v, ok := m[LimitAllowedPaths]; ok {
			f.allowed = compilePathSet(e, base+LimitAllowedPaths, v)
		}
		if v, ok := m[LimitBlockedPaths]; ok {
			f.blocked = compilePathSet(e, base+LimitBlockedPaths, v)
		}
		f.maxBytes = intLimit(m[LimitMaxFileBytes])
	}
	if capID == CapFileWrite && f.maxBytes == 0 {
		for i, c := range spec.Capabilities {
			if c.ID != capID || c.Params == nil {
				continue
			}
			if v, ok := c.Params[LimitMaxFileBytes]; ok {
				f.maxBytes = intLimit(v)
				if f.maxBytes == 0 {
					e.add(fmt.Sprintf("spec.capabilities[%d].params.%s", i, LimitMaxFileBytes), "must be a positive integer")
				}
			}
		}
	}
	return f
}

func intLimit(v any) int64 {
	switch t := v.(type) {
	case float64:
		if t > 0 && t == math.Trunc(t) && t < math.MaxInt64 {
			return int64(t)
		}
	case int64:
		if t > 0 {
			return t
		}
	case int:
		if t > 0 {
			return int64(t)
		}
	}
	return 0
}

func compileHostSet(e *errs, path string, v any) *hosts.HostSet {
	list, ok := stringList(v)
	if !ok || v == nil {
		return nil
	}
	set, problems := hosts.CompileHostSet(list)
	for _, err := range problems {
		e.add(path, "%v", err)
	}
	return set
}

func compileWebLimits(e *errs, spec PassportSpec) webLimits {
	var w webLimits
	m := limitsOf(spec, CapWebFetch)
	if m == nil {
		return w
	}
	base := "spec.limits[" + CapWebFetch + "]."
	if v, ok := m[LimitAllowedDomains]; ok {
		w.allowed = compileHostSet(e, base+LimitAllowedDomains, v)
	}
	if v, ok := m[LimitBlockedDomains]; ok {
		w.blocked = compileHostSet(e, base+LimitBlockedDomains, v)
	}
	return w
}
