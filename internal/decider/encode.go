package decider

import (
	"encoding/json"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/tollgate-dev/tollgate/internal/policy"
)

// The hot path encodes decisions and log records by hand: encoding/json's reflection was a tenth
// of the server's CPU per decision. The output is identical to json.Marshal's for these types
// (TestEncodeMatchesEncodingJSON); free-form values (modified_input, tool_input) are encoded by
// appendValue, which hands any type but those JSON decodes to (and NaN or infinite numbers) to
// encoding/json, and the risk assessment and suppression details go through encoding/json.

const hexDigits = "0123456789abcdef"

// appendString appends s as a JSON string, escaped like encoding/json (HTML-safe, U+2028/2029,
// invalid UTF-8 as U+FFFD).
func appendString(b []byte, s string) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		// Skip 8 bytes at a time while none needs a look (most strings need none).
		for i+8 <= len(s) && !needsEscape8(load8(s[i:i+8])) {
			i += 8
		}
		if i >= len(s) {
			break
		}
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' && c != '<' && c != '>' && c != '&' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			default:
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xF])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hexDigits[r&0xF])
			i += size
			start = i
			continue
		}
		i += size
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}

// needsEscape8 reports whether any byte of x (8 bytes of a string) is one appendString must look
// at: a control character, '"', '\\', '<', '>', '&' or a byte of a multi-byte character.
func needsEscape8(x uint64) bool {
	eq := func(c byte) uint64 { // high bit set in each byte of x equal to c (exact where it matters: any)
		y := x ^ (lsb * uint64(c))
		return (y - lsb) &^ y
	}
	return ((x-lsb*0x20)&^x|eq('"')|eq('\\')|eq('<')|eq('>')|eq('&')|x)&msb != 0
}

// load8 returns the 8 bytes of s as a little-endian word (one load).
func load8(s string) uint64 {
	_ = s[7]
	return uint64(s[0]) | uint64(s[1])<<8 | uint64(s[2])<<16 | uint64(s[3])<<24 |
		uint64(s[4])<<32 | uint64(s[5])<<40 | uint64(s[6])<<48 | uint64(s[7])<<56
}

func appendTime(b []byte, t time.Time) []byte {
	b = append(b, '"')
	b = t.AppendFormat(b, time.RFC3339Nano)
	return append(b, '"')
}

// appendAny appends v with encoding/json (for free-form values).
func appendAny(b []byte, v any) ([]byte, error) {
	data, err := json.Marshal(v)
	if err != nil {
		return b, err
	}
	return append(b, data...), nil
}

// maxAppendDepth is the nesting appendValue encodes by hand; deeper values (beyond anything a
// bounded request decodes to) go to encoding/json, which detects cycles.
const maxAppendDepth = 100

// appendValue appends v as json.Marshal would: the types encoding/json decodes JSON into
// (map[string]any, []any, string, float64, bool, nil) by hand, anything else through encoding/json.
// depth is v's nesting.
func appendValue(b []byte, v any, depth int) ([]byte, error) {
	if depth > maxAppendDepth {
		return appendAny(b, v)
	}
	var err error
	switch v := v.(type) {
	case nil:
		return append(b, "null"...), nil
	case string:
		return appendString(b, v), nil
	case bool:
		return strconv.AppendBool(b, v), nil
	case float64:
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return appendAny(b, v) // encoding/json's error
		}
		return appendFloat(b, v), nil
	case map[string]any:
		if v == nil {
			return append(b, "null"...), nil
		}
		return appendMap(b, v, depth)
	case []any:
		if v == nil {
			return append(b, "null"...), nil
		}
		b = append(b, '[')
		for i, e := range v {
			if i > 0 {
				b = append(b, ',')
			}
			if b, err = appendValue(b, e, depth+1); err != nil {
				return b, err
			}
		}
		return append(b, ']'), nil
	}
	return appendAny(b, v)
}

// appendMap appends m (not nil), at nesting depth, with its keys sorted, as json.Marshal does.
func appendMap(b []byte, m map[string]any, depth int) ([]byte, error) {
	if depth > maxAppendDepth {
		return appendAny(b, m)
	}
	var small [16]string
	keys := small[:0]
	for k := range m {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, strings.Compare)
	var err error
	b = append(b, '{')
	for i, k := range keys {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendString(b, k)
		b = append(b, ':')
		if b, err = appendValue(b, m[k], depth+1); err != nil {
			return b, err
		}
	}
	return append(b, '}'), nil
}

// appendFloat appends a finite f as encoding/json's float64 encoder does (ES6 number formatting).
func appendFloat(b []byte, f float64) []byte {
	format := byte('f')
	if abs := math.Abs(f); abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	b = strconv.AppendFloat(b, f, format, -1, 64)
	if format == 'e' { // e-09 to e-9
		if n := len(b); n >= 4 && b[n-4] == 'e' && b[n-3] == '-' && b[n-2] == '0' {
			b[n-2] = b[n-1]
			b = b[:n-1]
		}
	}
	return b
}

func appendReason(b []byte, r policy.Reason) []byte {
	b = append(b, `{"code":`...)
	b = appendString(b, r.Code)
	if r.Message != "" {
		b = append(b, `,"message":`...)
		b = appendString(b, r.Message)
	}
	return append(b, '}')
}

func appendReasons(b []byte, rs []policy.Reason) []byte {
	if rs == nil {
		return append(b, "null"...)
	}
	b = append(b, '[')
	for i, r := range rs {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendReason(b, r)
	}
	return append(b, ']')
}

// appendKey appends the key of a field that follows others (`,"key":`), or the first one.
func appendKey(b []byte, first bool, key string) []byte {
	if !first {
		b = append(b, ',')
	}
	b = append(b, '"')
	b = append(b, key...)
	return append(b, '"', ':')
}

// appendMetadata appends m as json.Marshal would.
func appendMetadata(b []byte, m *policy.Metadata) ([]byte, error) {
	var err error
	b = append(b, '{')
	first := true
	if len(m.DryRun) > 0 {
		b = appendKey(b, first, "dry_run")
		first = false
		if b, err = appendPolicyResults(b, m.DryRun); err != nil {
			return b, err
		}
	}
	if len(m.Warnings) > 0 {
		b = appendKey(b, first, "warnings")
		first = false
		if b, err = appendPolicyResults(b, m.Warnings); err != nil {
			return b, err
		}
	}
	if m.Risk != nil {
		b = appendKey(b, first, "risk_assessment")
		first = false
		if b, err = appendAny(b, m.Risk); err != nil {
			return b, err
		}
	}
	if m.Suppressed != nil {
		b = appendKey(b, first, "suppressed_tool_calls")
		first = false
		if b, err = appendAny(b, m.Suppressed); err != nil {
			return b, err
		}
	}
	if len(m.ModifiedBy) > 0 {
		b = appendKey(b, first, "modified_by")
		b = appendStrings(b, m.ModifiedBy)
	}
	return append(b, '}'), nil
}

// appendResultHead opens a policy result object with its policy_id, decision and reason.
func appendResultHead(b []byte, policyID, decision string, reason policy.Reason) []byte {
	b = append(b, `{"policy_id":`...)
	b = appendString(b, policyID)
	b = append(b, `,"decision":`...)
	b = appendString(b, decision)
	b = append(b, `,"reason":`...)
	return appendReason(b, reason)
}

func appendPolicyResults(b []byte, rs []policy.PolicyResult) ([]byte, error) {
	var err error
	b = append(b, '[')
	for i := range rs {
		r := &rs[i]
		if i > 0 {
			b = append(b, ',')
		}
		b = appendResultHead(b, r.PolicyID, r.Decision, r.Reason)
		if len(r.ModifiedInput) > 0 {
			b = append(b, `,"modified_input":`...)
			if b, err = appendMap(b, r.ModifiedInput, 0); err != nil {
				return b, err
			}
		}
		b = append(b, '}')
	}
	return append(b, ']'), nil
}

func appendLogPolicyResults(b []byte, rs []LogPolicyResult) ([]byte, error) {
	var err error
	b = append(b, '[')
	for i := range rs {
		r := &rs[i]
		if i > 0 {
			b = append(b, ',')
		}
		b = appendResultHead(b, r.PolicyID, r.Decision, r.Reason)
		if len(r.ChangedFields) > 0 {
			b = append(b, `,"changed_fields":`...)
			b = appendStrings(b, r.ChangedFields)
		}
		if len(r.RemovedFields) > 0 {
			b = append(b, `,"removed_fields":`...)
			b = appendStrings(b, r.RemovedFields)
		}
		if len(r.ModifiedInput) > 0 {
			b = append(b, `,"modified_input":`...)
			if b, err = appendMap(b, r.ModifiedInput, 0); err != nil {
				return b, err
			}
		}
		b = append(b, '}')
	}
	return append(b, ']'), nil
}

// appendDecisionFields appends the fields of d (without braces), as json.Marshal would.
func appendDecisionFields(b []byte, d *policy.Decision) ([]byte, error) {
	var err error
	b = append(b, `"decision_id":`...)
	b = appendString(b, d.DecisionID)
	b = append(b, `,"allow":`...)
	b = strconv.AppendBool(b, d.Allow)
	b = append(b, `,"decision":`...)
	b = appendString(b, d.Decision)
	b = append(b, `,"reasons":`...)
	b = appendReasons(b, d.Reasons)
	if d.PolicyID != "" {
		b = append(b, `,"policy_id":`...)
		b = appendString(b, d.PolicyID)
	}
	if len(d.ModifiedInput) > 0 {
		b = append(b, `,"modified_input":`...)
		if b, err = appendMap(b, d.ModifiedInput, 0); err != nil {
			return b, err
		}
	}
	if d.PassportDigest != "" {
		b = append(b, `,"passport_digest":`...)
		b = appendString(b, d.PassportDigest)
	}
	b = append(b, `,"bundle_revision":`...)
	b = appendString(b, d.BundleRevision)
	b = append(b, `,"created_at":`...)
	b = appendTime(b, d.CreatedAt)
	b = append(b, `,"expires_in":`...)
	b = strconv.AppendInt(b, d.ExpiresIn, 10)
	if d.Metadata != nil {
		b = append(b, `,"metadata":`...)
		if b, err = appendMetadata(b, d.Metadata); err != nil {
			return b, err
		}
	}
	return b, nil
}

// appendDecision appends d as a JSON object.
func appendDecision(b []byte, d *policy.Decision) ([]byte, error) {
	b = append(b, '{')
	b, err := appendDecisionFields(b, d)
	return append(b, '}'), err
}

// appendLogRecord appends r as one JSON line (same fields and order as LogRecord's json tags).
func appendLogRecord(b []byte, r *LogRecord) ([]byte, error) {
	var err error
	b = append(b, `{"decision_id":`...)
	b = appendString(b, r.DecisionID)
	b = append(b, `,"time":`...)
	b = appendTime(b, r.Time)
	str := func(key, v string) {
		if v != "" {
			b = append(b, `,"`...)
			b = append(b, key...)
			b = append(b, `":`...)
			b = appendString(b, v)
		}
	}
	str("passport", r.Passport)
	str("agent_id", r.AgentID)
	str("caller", r.Caller)
	b = append(b, `,"hook":`...)
	b = appendString(b, r.Hook)
	str("tool", r.Tool)
	str("thread_id", r.ThreadID)
	str("call_id", r.CallID)
	str("trace_id", r.TraceID)
	str("span_id", r.SpanID)
	b = append(b, `,"outcome":`...)
	b = appendString(b, r.Outcome)
	b = append(b, `,"reasons":`...)
	b = appendReasons(b, r.Reasons)
	b = append(b, `,"policy_id":`...)
	b = appendString(b, r.PolicyID)
	b = append(b, `,"bundle_revision":`...)
	b = appendString(b, r.BundleRevision)
	b = append(b, `,"latency_ms":`...)
	b = strconv.AppendFloat(b, r.LatencyMS, 'f', -1, 64)
	if len(r.ChangedFields) > 0 {
		b = append(b, `,"changed_fields":`...)
		b = appendStrings(b, r.ChangedFields)
	}
	if len(r.RemovedFields) > 0 {
		b = append(b, `,"removed_fields":`...)
		b = appendStrings(b, r.RemovedFields)
	}
	if len(r.DryRun) > 0 {
		b = append(b, `,"dry_run":`...)
		if b, err = appendLogPolicyResults(b, r.DryRun); err != nil {
			return b, err
		}
	}
	if len(r.Warnings) > 0 {
		b = append(b, `,"warnings":`...)
		if b, err = appendLogPolicyResults(b, r.Warnings); err != nil {
			return b, err
		}
	}
	if r.Risk != nil {
		b = append(b, `,"risk_assessment":`...)
		if b, err = appendAny(b, r.Risk); err != nil {
			return b, err
		}
	}
	if r.Suppressed != nil {
		b = append(b, `,"suppressed_tool_calls":`...)
		if b, err = appendAny(b, r.Suppressed); err != nil {
			return b, err
		}
	}
	if len(r.ToolInput) > 0 {
		b = append(b, `,"tool_input":`...)
		if b, err = appendMap(b, r.ToolInput, 0); err != nil {
			return b, err
		}
	}
	if len(r.ModifiedInput) > 0 {
		b = append(b, `,"modified_input":`...)
		if b, err = appendMap(b, r.ModifiedInput, 0); err != nil {
			return b, err
		}
	}
	b = append(b, '}', '\n')
	return b, nil
}

func appendStrings(b []byte, ss []string) []byte {
	b = append(b, '[')
	for i, s := range ss {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendString(b, s)
	}
	return append(b, ']')
}
