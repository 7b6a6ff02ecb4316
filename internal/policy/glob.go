package policy

import "strings"

// glob is a compiled tool-name pattern in which `*` matches any run of characters (possibly empty).
type glob struct {
	raw   string
	exact bool     // no wildcard: match by equality
	parts []string // literal segments between stars (only when !exact)
}

func compileGlob(pattern string) glob {
	if !strings.Contains(pattern, "*") {
		return glob{raw: pattern, exact: true}
	}
	return glob{raw: pattern, parts: strings.Split(pattern, "*")}
}

// match reports whether name matches the glob; it does not allocate.
func (g *glob) match(name string) bool {
	if g.exact {
		return g.raw == name
	}
	return matchParts(g.parts, name)
}

// globMatch matches an uncompiled pattern against name.
func globMatch(pattern, name string) bool {
	g := compileGlob(pattern)
	return g.match(name)
}

// matchParts matches literal segments separated by stars: the first segment is a prefix, the last a
// suffix, the ones in between appear in order (greedy leftmost is optimal for star-only globs).
func matchParts(parts []string, name string) bool {
	first, last := parts[0], parts[len(parts)-1]
	if len(name) < len(first)+len(last) || !strings.HasPrefix(name, first) || !strings.HasSuffix(name, last) {
		return false
	}
	rest := name[len(first) : len(name)-len(last)]
	for _, mid := range parts[1 : len(parts)-1] {
		i := strings.Index(rest, mid)
		if i < 0 {
			return false
		}
		rest = rest[i+len(mid):]
	}
	return true
}

// toolSet is a list of tool globs; an empty list matches every tool when all is set.
type toolSet struct {
	all   bool
	globs []glob
}

func compileToolSet(patterns []string, emptyMeansAll bool) toolSet {
	ts := toolSet{all: len(patterns) == 0 && emptyMeansAll}
	for _, p := range patterns {
		if p == "*" {
			ts.all = true
		}
		ts.globs = append(ts.globs, compileGlob(p))
	}
	if ts.all {
		ts.globs = nil
	}
	return ts
}

func (ts *toolSet) match(name string) bool {
	if ts.all {
		return true
	}
	for i := range ts.globs {
		if ts.globs[i].match(name) {
			return true
		}
	}
	return false
}

// toolNameChar reports whether c can appear in a tool name (letters, digits, _ - . : / @).
func toolNameChar(c rune) bool {
	switch {
	case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
		return true
	}
	return strings.ContainsRune("_-.:/@*", c)
}
