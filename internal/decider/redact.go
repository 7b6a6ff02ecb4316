package decider

import (
	"reflect"
	"slices"
	"strconv"
	"strings"

	"github.com/tollgate-dev/tollgate/internal/policy"
)

// The decision log never carries a value taken from the tool arguments unless the operator opts in
// (NewDecisionLog's withInput): tool_input and every modified_input are dropped, modify results are
// logged as the names of the fields they change, and reason messages have any quoted text that comes
// from the arguments replaced by redactedQuote. This runs in the log's goroutine, off the hot path.

// Bounds of what the log derives from a request.
const (
	// maxLoggedFields bounds changed_fields and removed_fields (a last "…" entry says more were cut).
	maxLoggedFields = 32
	// maxFieldPathLen bounds one logged field path.
	maxFieldPathLen = 128
	// maxFieldDepth bounds how deep modify results are compared.
	maxFieldDepth = 8
	// maxScanBytes bounds the argument text searched for a quoted message fragment; beyond it the
	// fragment is redacted without searching (fail closed).
	maxScanBytes = 1 << 20
)

// redactedQuote replaces a quoted message fragment that comes from the arguments.
const redactedQuote = `"[redacted]"`

// finish derives rec's logged fields from its source, keeping argument values only when withInput.
func finish(rec *LogRecord, withInput bool) {
	src := &rec.src
	if src.span.IsValid() {
		rec.TraceID, rec.SpanID = src.span.TraceID().String(), src.span.SpanID().String()
	}
	if src.modified != nil {
		rec.ChangedFields, rec.RemovedFields = diffFields(src.input, src.modified)
		if withInput {
			rec.ModifiedInput = src.modified
		}
	}
	if src.dryRun != nil {
		rec.DryRun = logResults(src.dryRun, src.input, withInput)
	}
	if src.warnings != nil {
		rec.Warnings = logResults(src.warnings, src.input, withInput)
	}
	if !withInput {
		rec.ToolInput, rec.ModifiedInput = nil, nil
		for i := range rec.DryRun {
			rec.DryRun[i].ModifiedInput = nil
		}
		for i := range rec.Warnings {
			rec.Warnings[i].ModifiedInput = nil
		}
		r := redactor{input: src.input, limits: func() any { return passportLimits(src.snap, rec.Passport, rec.AgentID) }}
		rec.Reasons = r.reasons(rec.Reasons)
		for i := range rec.DryRun {
			rec.DryRun[i].Reason.Message = r.message(rec.DryRun[i].Reason)
		}
		for i := range rec.Warnings {
			rec.Warnings[i].Reason.Message = r.message(rec.Warnings[i].Reason)
		}
	}
	rec.src = logSource{}
}

func logResults(rs []policy.PolicyResult, input map[string]any, withInput bool) []LogPolicyResult {
	out := make([]LogPolicyResult, len(rs))
	for i, r := range rs {
		out[i] = LogPolicyResult{PolicyID: r.PolicyID, Decision: r.Decision, Reason: r.Reason}
		if r.ModifiedInput != nil {
			out[i].ChangedFields, out[i].RemovedFields = diffFields(input, r.ModifiedInput)
			if withInput {
				out[i].ModifiedInput = r.ModifiedInput
			}
		}
	}
	return out
}

// diffFields names the fields of out that differ from in (set or added) and the fields of in that
// out lacks (removed), as sorted dotted paths, bounded in number, length and depth.
func diffFields(in, out map[string]any) (changed, removed []string) {
	var d fieldDiff
	d.walk("", in, out, 0)
	return boundFields(d.changed), boundFields(d.removed)
}

type fieldDiff struct{ changed, removed []string }

func (d *fieldDiff) walk(prefix string, a, b map[string]any, depth int) {
	for k, bv := range b {
		av, ok := a[k]
		if !ok {
			d.changed = append(d.changed, prefix+k)
			continue
		}
		am, aok := av.(map[string]any)
		bm, bok := bv.(map[string]any)
		if aok && bok && depth < maxFieldDepth {
			d.walk(prefix+k+".", am, bm, depth+1)
		} else if !reflect.DeepEqual(av, bv) {
			d.changed = append(d.changed, prefix+k)
		}
	}
	for k := range a {
		if _, ok := b[k]; !ok {
			d.removed = append(d.removed, prefix+k)
		}
	}
}

func boundFields(fs []string) []string {
	if len(fs) == 0 {
		return nil
	}
	slices.Sort(fs)
	for i, f := range fs {
		if len(f) > maxFieldPathLen {
			fs[i] = clipUTF8(f, maxFieldPathLen) + "…"
		}
	}
	if len(fs) > maxLoggedFields {
		fs = append(fs[:maxLoggedFields], "…")
	}
	return fs
}

// clipUTF8 cuts s to at most n bytes without splitting a character.
func clipUTF8(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !isRuneStart(s[n]) {
		n--
	}
	return s[:n]
}

func isRuneStart(b byte) bool { return b&0xC0 != 0x80 }

// passportLimits returns the limits of the passport a request presented (nil when unknown).
func passportLimits(snap *policy.Snapshot, passport, agentID string) any {
	if snap == nil {
		return nil
	}
	var p policy.Passport
	var ok bool
	if passport != "" {
		p, ok = snap.Passport(passport)
	} else {
		p, ok = snap.PassportByAgentID(agentID)
	}
	if !ok {
		return nil
	}
	return p.Spec.Limits
}

// redactor replaces quoted fragments of reason messages that come from the arguments. A fragment
// that is a string of the passport's limits (a blocked pattern, an allowed command) is the
// operator's configuration, not an argument, and is kept.
type redactor struct {
	input    map[string]any
	limits   func() any // the passport's limits, asked for on first need (nil: none)
	leaves   []string   // the arguments' strings and numbers, quote characters removed (built on first use)
	over     bool       // the arguments exceed maxScanBytes: redact every quoted fragment
	built    bool
	limitSet map[string]bool
}

// argumentQuotingCodes are reason codes whose engine messages quote what the arguments contain (the
// command's first word): every quoted fragment of their messages is redacted.
var argumentQuotingCodes = map[string]bool{policy.CodeCommandNotAllowed: true}

func (r *redactor) reasons(rs []policy.Reason) []policy.Reason {
	var out []policy.Reason // copied on first change: rs is shared with the decision answered
	for i, x := range rs {
		m := r.message(x)
		if m == x.Message {
			continue
		}
		if out == nil {
			out = slices.Clone(rs)
		}
		out[i].Message = m
	}
	if out == nil {
		return rs
	}
	return out
}

// message returns x's message with every Go-quoted fragment that comes from the arguments replaced.
func (r *redactor) message(x policy.Reason) string {
	msg := x.Message
	if strings.IndexByte(msg, '"') < 0 {
		return msg
	}
	all := argumentQuotingCodes[x.Code]
	var b strings.Builder
	last := 0
	for i := 0; i < len(msg); {
		if msg[i] != '"' {
			i++
			continue
		}
		q, err := strconv.QuotedPrefix(msg[i:])
		if err != nil {
			i++
			continue
		}
		if all || r.fromArguments(q) {
			b.WriteString(msg[last:i])
			b.WriteString(redactedQuote)
			last = i + len(q)
		}
		i += len(q)
	}
	if last == 0 {
		return msg
	}
	b.WriteString(msg[last:])
	return b.String()
}

// fromArguments reports whether the quoted fragment q occurs in an argument (shell quote characters
// ignored on both sides, so that `TOK"EN=x"` matches TOKEN=x).
func (r *redactor) fromArguments(q string) bool {
	s, err := strconv.Unquote(q)
	if err != nil {
		return true
	}
	s = stripQuotes(s)
	if s == "" {
		return false
	}
	if !r.built {
		r.built = true
		n := 0
		r.collect(r.input, &n, 0)
	}
	if r.over {
		return true
	}
	for _, l := range r.leaves {
		if strings.Contains(l, s) {
			return !r.isLimit(q)
		}
	}
	return false
}

// isLimit reports whether the quoted fragment q is exactly a string of the passport's limits.
func (r *redactor) isLimit(q string) bool {
	if r.limitSet == nil {
		r.limitSet = map[string]bool{}
		if r.limits != nil {
			addStrings(r.limitSet, r.limits(), 0)
		}
	}
	s, err := strconv.Unquote(q)
	return err == nil && r.limitSet[s]
}

func addStrings(set map[string]bool, v any, depth int) {
	if depth > 16 || len(set) > 4096 {
		return
	}
	switch x := v.(type) {
	case string:
		set[x] = true
	case []any:
		for _, e := range x {
			addStrings(set, e, depth+1)
		}
	case []string:
		for _, e := range x {
			set[e] = true
		}
	case map[string]any:
		for _, e := range x {
			addStrings(set, e, depth+1)
		}
	}
}

func (r *redactor) collect(v any, n *int, depth int) {
	if r.over {
		return
	}
	if depth > 64 {
		r.over = true
		return
	}
	add := func(s string) {
		*n += len(s)
		if *n > maxScanBytes {
			r.over = true
			return
		}
		r.leaves = append(r.leaves, stripQuotes(s))
	}
	switch x := v.(type) {
	case string:
		add(x)
	case float64:
		add(strconv.FormatFloat(x, 'g', -1, 64))
	case map[string]any:
		for _, e := range x {
			r.collect(e, n, depth+1)
		}
	case []any:
		for _, e := range x {
			r.collect(e, n, depth+1)
		}
	}
}

// stripQuotes removes the shell's quote and escape characters.
func stripQuotes(s string) string {
	if !strings.ContainsAny(s, `'"\`) {
		return s
	}
	return strings.Map(func(r rune) rune {
		if r == '\'' || r == '"' || r == '\\' {
			return -1
		}
		return r
	}, s)
}
