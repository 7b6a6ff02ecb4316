package decider

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
)

// Masks are the decision log's per-field rules, OPA's decision-log masking idea: each names a field
// of the log record by a JSON pointer (RFC 6901, e.g. /tool_input/password; "*" stands for any key
// or array index, e.g. /dry_run/*/modified_input/token) or by a dotted path (tool_input.password),
// and removes it, or with "=VALUE" replaces its value (VALUE is JSON when it parses as JSON, else a
// string: /tool_input/password="***" and /tool_input/password=*** mean the same). A rule whose field
// is absent does nothing. Masks run in the log's goroutine, after redaction, before any sink.

// Mask is one masking rule.
type Mask struct {
	// Path is the field's path: object keys and array indexes, "*" matching any.
	Path []string
	// Replace replaces the field's value by Value instead of removing the field.
	Replace bool
	// Value is the replacement.
	Value any
	// text is the rule as written.
	text string
}

// String returns the rule as written.
func (m Mask) String() string { return m.text }

// ParseMask reads a rule: PATH or PATH=VALUE, where PATH is a JSON pointer or a dotted path.
func ParseMask(s string) (Mask, error) {
	m := Mask{text: s}
	path, value, replace := strings.Cut(s, "=")
	path = strings.TrimSpace(path)
	if path == "" || path == "/" {
		return Mask{}, fmt.Errorf("decision-log mask %q: want a JSON pointer (/tool_input/password) or a dotted path (tool_input.password)", s)
	}
	if strings.HasPrefix(path, "/") {
		for _, tok := range strings.Split(path[1:], "/") {
			m.Path = append(m.Path, strings.ReplaceAll(strings.ReplaceAll(tok, "~1", "/"), "~0", "~"))
		}
	} else {
		m.Path = strings.Split(path, ".")
	}
	for _, tok := range m.Path {
		if tok == "" {
			return Mask{}, fmt.Errorf("decision-log mask %q: empty path segment", s)
		}
	}
	if replace {
		m.Replace = true
		if err := json.Unmarshal([]byte(value), &m.Value); err != nil {
			m.Value = value
		}
	}
	return m, nil
}

// applyMasks rewrites one encoded record (a JSON object line ending in '\n') by masks. The result is
// the record re-encoded (keys sorted), with its final newline.
func applyMasks(line []byte, masks []Mask) ([]byte, error) {
	dec := json.NewDecoder(bytes.NewReader(line))
	dec.UseNumber()
	var rec map[string]any
	if err := dec.Decode(&rec); err != nil {
		return line, fmt.Errorf("masking a decision-log record: %w", err)
	}
	for _, m := range masks {
		mask(rec, m.Path, m)
	}
	out, err := json.Marshal(rec)
	if err != nil {
		return line, fmt.Errorf("masking a decision-log record: %w", err)
	}
	return append(out, '\n'), nil
}

// mask applies m at path under v (a decoded JSON value).
func mask(v any, path []string, m Mask) {
	if len(path) == 0 {
		return
	}
	key, rest := path[0], path[1:]
	switch c := v.(type) {
	case map[string]any:
		if key == "*" {
			for k := range c {
				maskAt(c, k, rest, m)
			}
			return
		}
		if _, ok := c[key]; ok {
			maskAt(c, key, rest, m)
		}
	case []any:
		if key == "*" {
			for i := range c {
				maskIndex(c, i, rest, m)
			}
			return
		}
		if i, err := strconv.Atoi(key); err == nil && i >= 0 && i < len(c) {
			maskIndex(c, i, rest, m)
		}
	}
}

// maskAt masks key of object c: the field itself when the path ends there, else further down.
func maskAt(c map[string]any, key string, rest []string, m Mask) {
	if len(rest) > 0 {
		mask(c[key], rest, m)
		return
	}
	if m.Replace {
		c[key] = m.Value
	} else {
		delete(c, key)
	}
}

// maskIndex masks element i of array c; a removed element becomes null, so that indexes hold.
func maskIndex(c []any, i int, rest []string, m Mask) {
	if len(rest) > 0 {
		mask(c[i], rest, m)
		return
	}
	if m.Replace {
		c[i] = m.Value
	} else {
		c[i] = nil
	}
}
