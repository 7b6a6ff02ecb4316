package decider

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tollgate-dev/tollgate/internal/policy"
)

// typicalBody is a typical ~300-byte decision request.
const typicalBody = `{"passport":"team-a/coding-agent","tool_name":"bash","hook":"pre_tool_call",` +
	`"tool_input":{"command":"git log --oneline -n 20 -- internal/decider","cwd":"/workspace/tollgate","timeout":30,` +
	`"env":{"GIT_PAGER":"cat"}},"thread_id":"thread-7f3a9c","call_id":"call_01HZX3K9ABCD","is_subagent":false,` +
	`"timestamp":"2026-01-02T03:04:05Z"}`

func TestStrictJSONDecodeRequest(t *testing.T) {
	const id = `"passport":"team-a/coding-agent",`
	cases := []struct {
		name, body  string
		code, field string
		msg         string // a substring of the message
	}{
		// Accepted.
		{name: "typical", body: typicalBody},
		{name: "escaped field name is the field", body: `{` + id + `"tool\u005fname":"ls"}`},
		{name: "unknown top-level field is ignored", body: `{` + id + `"tool_name":"ls","extra":{"a":1},"policy_id":"x"}`},
		{name: "case variants of struct fields inside tool_input are arguments", body: `{` + id + `"tool_name":"ls","tool_input":{"Tool_Name":"bash","HOOK":1}}`},
		{name: "same key in sibling objects", body: `{` + id + `"tool_name":"ls","tool_input":{"a":{"x":1},"b":{"x":1},"c":[{"x":1},{"x":2}]}}`},
		{name: "keys differing in more than case", body: `{` + id + `"tool_name":"ls","tool_input":{"path":"a","paths":"b","páth":"c"}}`},
		{name: "64 levels", body: `{` + id + `"tool_name":"ls","tool_input":{"x":` + strings.Repeat("[", 62) + strings.Repeat("]", 62) + `}}`},
		{name: "JSON whitespace around", body: " \t\r\n{" + id + `"tool_name":"ls"}` + "\n"},

		// Duplicate keys, at every level.
		{"duplicate top-level key", `{` + id + `"tool_name":"ls","tool_name":"bash"}`, ErrCodeDuplicateKey, "tool_name", `duplicate key "tool_name"`},
		{"duplicate key, spelled with an escape", `{` + id + `"tool_name":"ls","tool\u005fname":"bash"}`, ErrCodeDuplicateKey, "tool_name", `duplicate key "tool_name"`},
		{"duplicate in tool_input", `{` + id + `"tool_name":"bash","tool_input":{"command":"rm -rf /","command":"ls"}}`, ErrCodeDuplicateKey, "tool_input.command", "duplicate key"},
		{"duplicate deep in tool_input", `{` + id + `"tool_name":"bash","tool_input":{"opts":{"x":1,"y":2,"x":3}}}`, ErrCodeDuplicateKey, "tool_input.opts.x", ""},
		{"duplicate in an array in tool_input", `{` + id + `"tool_name":"bash","tool_input":{"f":[{"a":1},{"a":1,"a":2}]}}`, ErrCodeDuplicateKey, "tool_input.f[1].a", ""},
		{"duplicate in a message", `{` + id + `"hook":"pre_llm_call","messages":[{"role":"user","content":"hi"},{"role":"user","content":"a","content":"b"}]}`, ErrCodeDuplicateKey, "messages[1].content", ""},
		{"duplicate in a content part", `{` + id + `"hook":"pre_llm_call","messages":[{"role":"user","content":[{"type":"text","text":"a","text":"b"}]}]}`, ErrCodeDuplicateKey, "messages[0].content[0].text", ""},
		{"duplicate in tool_calls", `{` + id + `"hook":"post_llm_call","tool_calls":[{"name":"ls"},{"name":"ls","name":"bash"}]}`, ErrCodeDuplicateKey, "tool_calls[1].name", ""},
		{"duplicate in tool call arguments", `{` + id + `"hook":"post_llm_call","tool_calls":[{"name":"bash","arguments":{"cmd":"a","cmd":"b"}}]}`, ErrCodeDuplicateKey, "tool_calls[0].arguments.cmd", ""},
		{"duplicate null", `{` + id + `"tool_name":"ls","tool_input":null,"tool_input":{}}`, ErrCodeDuplicateKey, "tool_input", ""},
		{"duplicate key with a dot", `{` + id + `"tool_name":"ls","tool_input":{"a.b":1,"a.b":2}}`, ErrCodeDuplicateKey, `tool_input["a.b"]`, ""},
		{"duplicate empty key", `{` + id + `"tool_name":"ls","tool_input":{"":1,"":2}}`, ErrCodeDuplicateKey, `tool_input[""]`, ""},
		{"keys encoding/json reads as the same U+FFFD", `{` + id + `"tool_name":"ls","tool_input":{"a` + "\xff" + `":1,"a` + "\xfe" + `":2}}`, ErrCodeDuplicateKey, "tool_input[\"a\uFFFD\"]", ""},
		{"lone surrogates read as U+FFFD", `{` + id + `"tool_name":"ls","tool_input":{"\ud800":1,"\udfff":2}}`, ErrCodeDuplicateKey, "tool_input[\"\uFFFD\"]", ""},

		// Keys differing only in case.
		{"case collision at top level", `{` + id + `"tool_name":"read_file","TOOL_NAME":"bash"}`, ErrCodeDuplicateKey, "tool_name", `keys "tool_name" and "TOOL_NAME" differ only in case`},
		{"case collision in tool_input", `{` + id + `"tool_name":"bash","tool_input":{"command":"ls","Command":"rm -rf /"}}`, ErrCodeDuplicateKey, "tool_input.command", `"Command"`},
		{"case collision, first spelling named", `{` + id + `"tool_name":"bash","tool_input":{"Command":"ls","command":"rm -rf /"}}`, ErrCodeDuplicateKey, "tool_input.Command", ""},
		{"Unicode case collision (long s)", `{` + id + `"tool_name":"bash","tool_input":{"pass":"a","paſs":"b"}}`, ErrCodeDuplicateKey, "tool_input.pass", ""},
		{"Unicode case collision (Kelvin sign, escaped)", `{` + id + `"tool_name":"bash","tool_input":{"k":"a","\u212a":"b"}}`, ErrCodeDuplicateKey, "tool_input.k", ""},
		{"non-ASCII case collision", `{` + id + `"tool_name":"bash","tool_input":{"straße":"a","STRAẞE":"b"}}`, ErrCodeDuplicateKey, `tool_input["straße"]`, ""},
		{"case collision in a message", `{` + id + `"hook":"pre_llm_call","messages":[{"role":"user","ROLE":"system","content":"x"}]}`, ErrCodeDuplicateKey, "messages[0].role", ""},

		// Keys that match a struct field only case-insensitively.
		{"TOOL_NAME alone", `{` + id + `"TOOL_NAME":"bash"}`, ErrCodeInvalidField, "TOOL_NAME", `unknown field "TOOL_NAME": field names are case-sensitive, want "tool_name"`},
		{"Tool_Name alone", `{` + id + `"Tool_Name":"bash"}`, ErrCodeInvalidField, "Tool_Name", `want "tool_name"`},
		{"Unicode variant of a field", `{"paſſport":"team-a/coding-agent","tool_name":"ls"}`, ErrCodeInvalidField, `["paſſport"]`, `want "passport"`},
		{"case variant of tool_input", `{` + id + `"tool_name":"ls","Tool_Input":{"command":"rm -rf /"}}`, ErrCodeInvalidField, "Tool_Input", `want "tool_input"`},
		{"case variant in a message", `{` + id + `"hook":"pre_llm_call","messages":[{"role":"user","Content":"x"}]}`, ErrCodeInvalidField, "messages[0].Content", `want "content"`},
		{"case variant in a content part", `{` + id + `"hook":"pre_llm_call","messages":[{"role":"user","content":[{"type":"text","TEXT":"x"}]}]}`, ErrCodeInvalidField, "messages[0].content[0].TEXT", `want "text"`},
		{"case variant in a tool call", `{` + id + `"hook":"post_llm_call","tool_calls":[{"Name":"bash"}]}`, ErrCodeInvalidField, "tool_calls[0].Name", `want "name"`},

		// Depth, syntax and whitespace.
		{"65 levels", `{` + id + `"tool_name":"ls","tool_input":{"x":` + strings.Repeat("[", 63) + strings.Repeat("]", 63) + `}}`, ErrCodeInvalidJSON,
			"tool_input.x" + strings.Repeat("[0]", 62), "nesting deeper than 64 levels"},
		{"syntax error after a duplicate", `{` + id + `"tool_name":"ls","tool_name":"ls"`, ErrCodeInvalidJSON, "", "truncated JSON"},
		{"trailing data", `{` + id + `"tool_name":"ls"} {}`, ErrCodeInvalidJSON, "", "unexpected data after the JSON object"},
		{"Unicode space before the object", "\u00a0{" + id + `"tool_name":"ls"}`, ErrCodeInvalidJSON, "", "want a JSON object"},
		{"vertical tab after the object", `{` + id + `"tool_name":"ls"}` + "\v", ErrCodeInvalidJSON, "", ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := DecodeRequest([]byte(tc.body))
			if tc.code == "" {
				if err != nil {
					t.Fatalf("DecodeRequest: %v", err)
				}
				return
			}
			var re *RequestError
			if !errors.As(err, &re) {
				t.Fatalf("DecodeRequest = %v, want a *RequestError %s at %s", err, tc.code, tc.field)
			}
			if re.Code != tc.code || re.Field != tc.field || !strings.Contains(re.Message, tc.msg) {
				t.Errorf("got %s at %q: %s\nwant %s at %q containing %q", re.Code, re.Field, re.Message, tc.code, tc.field, tc.msg)
			}
		})
	}
}

func TestStrictJSONBatchAndVerify(t *testing.T) {
	item := `{"passport":"team-a/coding-agent","tool_name":"ls"}`
	batch := func(body string) error {
		var br batchRequest
		if err := decodeJSON([]byte(body), &br, ""); err != nil {
			return err
		}
		for i, raw := range br.Requests {
			var r policy.Request
			if err := decodeJSON(raw, &r, fmt.Sprintf("requests[%d]", i)); err != nil {
				return err
			}
		}
		return nil
	}
	verify := func(body string) error {
		_, err := decodeVerify([]byte(body), "system.command.execute.v1")
		return err
	}
	// verifyOther decodes for a policy id that names no policy pack (the context names the tool).
	verifyOther := func(body string) error {
		_, err := decodeVerify([]byte(body), "corp.custom.v1")
		return err
	}
	cases := []struct {
		name        string
		decode      func(string) error
		body        string
		code, field string
	}{
		{"batch ok", batch, `{"requests":[` + item + `,` + item + `]}`, "", ""},
		{"batch item duplicate deep", batch, `{"requests":[` + item + `,` + item + `,{"passport":"team-a/coding-agent","tool_name":"bash","tool_input":{"opts":{"x":1,"x":2}}}]}`,
			ErrCodeDuplicateKey, "requests[2].tool_input.opts.x"},
		{"batch item case variant", batch, `{"requests":[{"passport":"team-a/coding-agent","Tool_Name":"bash"}]}`, ErrCodeInvalidField, "requests[0].Tool_Name"},
		{"batch item case collision", batch, `{"requests":[` + item + `,{"passport":"team-a/coding-agent","tool_name":"ls","TOOL_NAME":"bash"}]}`, ErrCodeDuplicateKey, "requests[1].tool_name"},
		{"batch requests twice", batch, `{"requests":[],"requests":[` + item + `]}`, ErrCodeDuplicateKey, "requests"},
		{"batch Requests", batch, `{"Requests":[` + item + `]}`, ErrCodeInvalidField, "Requests"},
		{"verify ok", verify, `{"context":{"agent_id":"ap_1","tool_name":"bash","command":"ls"}}`, "", ""},
		{"verify same value twice in aliases", verify, `{"agent_id":"ap_1","context":{"agent_id":"ap_1","passport_id":"ap_1","tool":"bash","tool_name":"bash","command":"ls"}}`, "", ""},
		{"verify context case variant argument kept", verifyOther, `{"context":{"agent_id":"ap_1","tool_name":"bash","Command":"ls"}}`, "", ""},
		{"verify context duplicate", verify, `{"context":{"agent_id":"ap_1","command":"ls","command":"rm -rf /"}}`, ErrCodeDuplicateKey, "context.command"},
		{"verify context case collision", verify, `{"context":{"agent_id":"ap_1","AGENT_ID":"ap_2"}}`, ErrCodeDuplicateKey, "context.agent_id"},
		{"verify context case variant of a routing key", verify, `{"context":{"agent_id":"ap_1","Tool_Name":"bash"}}`, ErrCodeInvalidField, "context.Tool_Name"},
		{"verify Context", verify, `{"Context":{"agent_id":"ap_1"}}`, ErrCodeInvalidField, "Context"},
		{"verify top-level duplicate", verify, `{"agent_id":"ap_1","agent_id":"ap_2","context":{}}`, ErrCodeDuplicateKey, "agent_id"},
		{"verify agent_id conflict", verify, `{"agent_id":"ap_1","context":{"agent_id":"ap_2"}}`, ErrCodeInvalidField, "context.agent_id"},
		{"verify passport_id conflict", verify, `{"context":{"agent_id":"ap_1","passport_id":"ap_2"}}`, ErrCodeInvalidField, "context.passport_id"},
		{"verify tool conflict", verify, `{"context":{"agent_id":"ap_1","tool_name":"read_file","tool":"bash"}}`, ErrCodeInvalidField, "context.tool"},
		{"verify passport conflict", verify, `{"passport":"team-a/a","context":{"passport":"team-a/b"}}`, ErrCodeInvalidField, "context.passport"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.decode(tc.body)
			if tc.code == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			var re *RequestError
			if !errors.As(err, &re) || re.Code != tc.code || re.Field != tc.field {
				t.Fatalf("got %v (%+v), want %s at %q", err, re, tc.code, tc.field)
			}
		})
	}
}

// TestShapesMatchStructs keeps the shapes in step with the structs encoding/json decodes into: a
// field added to policy.Request must be added to requestShape, or its case variants would pass.
func TestShapesMatchStructs(t *testing.T) {
	names := func(s *jsonShape) []string {
		var out []string
		for _, f := range s.fields {
			out = append(out, f.name)
		}
		slices.Sort(out)
		return out
	}
	tags := func(v any) []string {
		var out []string
		rt := reflect.TypeOf(v)
		for i := range rt.NumField() {
			name, _, _ := strings.Cut(rt.Field(i).Tag.Get("json"), ",")
			if name != "-" && rt.Field(i).IsExported() {
				out = append(out, name)
			}
		}
		slices.Sort(out)
		return out
	}
	for _, tc := range []struct {
		shape *jsonShape
		v     any
	}{
		{requestShape, policy.Request{}}, {toolCallShape, policy.ToolCall{}}, {messageShape, policy.Message{}},
		{batchShape, batchRequest{}}, {verifyShape, verifyRequest{}},
	} {
		if got, want := names(tc.shape), tags(tc.v); !slices.Equal(got, want) {
			t.Errorf("shape of %T = %v, want the json names %v", tc.v, got, want)
		}
	}
	if got, want := names(verifyContextShape), slices.Sorted(slices.Values(verifyContextKeys)); !slices.Equal(got, want) {
		t.Errorf("verify context shape = %v, want %v", got, want)
	}
	// Message decodes its content parts' text (policy.Message.UnmarshalJSON).
	var m policy.Message
	if err := json.Unmarshal([]byte(`{"role":"user","content":[{"TEXT":"x"}]}`), &m); err != nil || m.Content != "x" {
		t.Errorf("content parts are no longer decoded case-insensitively (%q, %v): update contentPartShape", m.Content, err)
	}
	// The struct-field case variants really are read by encoding/json (the reason for the shapes).
	var r policy.Request
	if err := json.Unmarshal([]byte(`{"TOOL_NAME":"bash","paſſport":"p"}`), &r); err != nil || r.ToolName != "bash" || r.Passport != "p" {
		t.Errorf("encoding/json no longer matches field names case-insensitively: %+v %v", r, err)
	}
}

func TestStrictJSONBigObjects(t *testing.T) {
	var b strings.Builder
	b.WriteString(`{"passport":"team-a/coding-agent","tool_name":"ls","tool_input":{`)
	for i := range 1000 {
		fmt.Fprintf(&b, `"key%d":%d,`, i, i)
	}
	ok := b.String() + `"last":1}}`
	if _, err := DecodeRequest([]byte(ok)); err != nil {
		t.Fatalf("1000 distinct keys: %v", err)
	}
	for _, tc := range []struct{ extra, field string }{
		{`"KEY3":1`, "tool_input.key3"},      // collides with a key compared pairwise
		{`"Key999":1`, "tool_input.key999"},  // collides with a key indexed in the map
		{`"key500":1`, "tool_input.key500"},  // exact duplicate
		{`"ke\u00597":1`, "tool_input.key7"}, // escaped
	} {
		_, err := DecodeRequest([]byte(b.String() + tc.extra + `}}`))
		var re *RequestError
		if !errors.As(err, &re) || re.Code != ErrCodeDuplicateKey || re.Field != tc.field {
			t.Errorf("%s: got %v, want %s at %s", tc.extra, err, ErrCodeDuplicateKey, tc.field)
		}
	}
}

// TestStrictJSONBoundedCost checks that bodies built to be slow (1 MiB of keys in one object, of
// keys whose FNV hashes collide, of escapes, of nesting) are checked in linear time.
func TestStrictJSONBoundedCost(t *testing.T) {
	const size = 1 << 20
	manyKeys := func(key func(i int) string) []byte {
		var b bytes.Buffer
		b.WriteString(`{"tool_input":{`)
		for i := 0; b.Len() < size-64; i++ {
			fmt.Fprintf(&b, `"%s":0,`, key(i))
		}
		b.WriteString(`"end":0}}`)
		return b.Bytes()
	}
	bodies := map[string][]byte{
		"distinct keys":      manyKeys(func(i int) string { return fmt.Sprintf("k%d", i) }),
		"escaped keys":       manyKeys(func(i int) string { return fmt.Sprintf(`\u006b%d\u00e9`, i) }),
		"non-ASCII keys":     manyKeys(func(i int) string { return fmt.Sprintf("ſ%dK", i) }),
		"long key prefixes":  manyKeys(func(i int) string { return fmt.Sprintf("%s%d", strings.Repeat("a", 200), i) }),
		"deep arrays":        []byte(`{"tool_input":{"x":` + strings.Repeat("[", size/2) + `}}`),
		"many small objects": []byte(`{"tool_input":{"x":[` + strings.Repeat(`{"a":1,"b":2,"c":3},`, size/20) + `{}]}}`),
		"long string":        []byte(`{"tool_input":{"x":"` + strings.Repeat(`a\n\u00e9`, size/9) + `"}}`),
	}
	for name, body := range bodies {
		start := time.Now()
		is := checkStrictJSON(body, requestShape)
		elapsed := time.Since(start)
		t.Logf("%s: %d bytes in %v (issue %d)", name, len(body), elapsed, is.kind)
		// Linear work is a few ms for 1 MiB; a quadratic pass would take minutes.
		if elapsed > 2*time.Second {
			t.Errorf("%s: %v for %d bytes", name, elapsed, len(body))
		}
	}
}

func TestStrictJSONAllocations(t *testing.T) {
	for _, body := range append([]string{typicalBody}, benchBodies...) {
		data := []byte(body)
		if n := testing.AllocsPerRun(100, func() { _ = checkStrictJSON(data, requestShape) }); n != 0 {
			t.Errorf("checkStrictJSON allocates %v times for %s", n, body)
		}
	}
}

// refStrict is an independent implementation of checkStrictJSON for valid JSON, on
// encoding/json's Decoder.Token: it returns the first issue in document order.
func refStrict(data []byte, shape *jsonShape) strictIssue {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var issue strictIssue
	var walk func(shape *jsonShape, depth int, path string) bool
	walk = func(shape *jsonShape, depth int, path string) bool {
		tok, err := dec.Token()
		if err != nil {
			panic(err)
		}
		d, ok := tok.(json.Delim)
		if !ok {
			return true
		}
		if depth == maxJSONDepth {
			issue = strictIssue{kind: issueDepth, path: path}
			return false
		}
		if d == '[' {
			for i := 0; dec.More(); i++ {
				var elem *jsonShape
				if shape != nil {
					elem = shape.elem
				}
				if !walk(elem, depth+1, fmt.Sprintf("%s[%d]", path, i)) {
					return false
				}
			}
		} else {
			var seen []string
			for dec.More() {
				tok, _ := dec.Token()
				key := tok.(string)
				for _, prev := range seen {
					if prev == key || strings.EqualFold(prev, key) {
						kind := issueCase
						if prev == key {
							kind = issueDuplicate
						}
						issue = strictIssue{kind: kind, path: keyPath(path, prev), key: key, other: prev}
						return false
					}
				}
				seen = append(seen, key)
				var child *jsonShape
				if shape != nil {
					for _, f := range shape.fields {
						if key == f.name {
							child = f.shape
							break
						}
						if strings.EqualFold(key, f.name) {
							issue = strictIssue{kind: issueFieldCase, path: keyPath(path, key), key: key, other: f.name}
							return false
						}
					}
				}
				if !walk(child, depth+1, keyPath(path, key)) {
					return false
				}
			}
		}
		_, _ = dec.Token() // the closing delimiter
		return true
	}
	walk(shape, 0, "")
	return issue
}

func keyPath(path, key string) string {
	var b strings.Builder
	b.WriteString(path)
	writeKeyPath(&b, key)
	return b.String()
}

// FuzzStrictJSON checks checkStrictJSON against encoding/json (the same inputs are valid JSON) and
// against refStrict (the same first issue, at the same path), and that it never panics.
func FuzzStrictJSON(f *testing.F) {
	for _, s := range append(append([]string{typicalBody}, benchBodies...), fuzzSeeds...) {
		f.Add([]byte(s))
	}
	for _, s := range []string{
		`{"a":1,"A":2}`, `{"a":{"b":[{"c":1,"c":2}]}}`, `{"Tool_Name":"x"}`, `{"tool_input":{"ſ":1,"s":2}}`,
		`{"\u212a":1,"k":2}`, `{"a\ud800":1,"a\udc00":2}`, `{"a":1,"b":2,"c":3,"d":4,"e":5,"f":6,"g":7,"h":8,"i":9,"j":10,"k":11,"l":12,"m":13,"n":14,"o":15,"p":16,"q":17,"Q":18}`,
		`[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]`,
		`{"messages":[{"role":"u","content":[{"Text":"x"}]}]}`, `{"requests":[{"tool_name":1,"TOOL_NAME":2}]}`, "{\"a\xff\":1,\"a\xfe\":2}",
		`-0.5e+7`, `"\u00e9"`, `{"a":1e}`, `{"a" 1}`, `{"a":[1,]}`, `tru`, `{"\uD834\uDD1E":1,"\uD834\uDD1F":2}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		valid := json.Valid(data)
		for _, shape := range []*jsonShape{nil, requestShape, batchShape, verifyShape} {
			start := time.Now()
			got := checkStrictJSON(data, shape)
			if d := time.Since(start); d > time.Second {
				t.Fatalf("checking %d bytes took %v", len(data), d)
			}
			switch {
			case got.kind == issueSyntax && valid:
				t.Fatalf("syntax error at %d in valid JSON %q", got.offset, data)
			case !valid && got.kind != issueSyntax && got.kind != issueDepth && got.kind != issueValues:
				t.Fatalf("invalid JSON %q passed as %+v", data, got)
			case !valid:
				continue
			}
			want := refStrict(data, shape)
			got.offset = 0
			if got != want {
				t.Fatalf("checkStrictJSON(%q) = %+v, reference %+v", data, got, want)
			}
			if got.kind != 0 {
				continue
			}
			// A body that passes means the same to every parser: decoding it into a map of exact
			// keys loses nothing (no key collapsed into another).
			var v any
			if err := json.Unmarshal(data, &v); err != nil && !strings.Contains(err.Error(), "number") {
				t.Fatalf("valid, strict JSON %q does not decode: %v", data, err)
			}
		}
	})
}

func BenchmarkDecodeRequestTypical(b *testing.B) {
	for _, tc := range []struct {
		name   string
		bodies []string
	}{{"bench-bodies", benchBodies}, {"300B", []string{typicalBody}}} {
		bodies := make([][]byte, len(tc.bodies))
		n := 0
		for i, s := range tc.bodies {
			bodies[i] = []byte(s)
			n += len(s)
		}
		b.Run(tc.name, func(b *testing.B) {
			b.SetBytes(int64(n / len(bodies)))
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				if _, err := DecodeRequest(bodies[i%len(bodies)]); err != nil {
					b.Fatal(err)
				}
				i++
			}
		})
	}
}

func BenchmarkStrictJSON(b *testing.B) {
	for _, tc := range []struct {
		name   string
		bodies []string
	}{{"bench-bodies", benchBodies}, {"300B", []string{typicalBody}}} {
		bodies := make([][]byte, len(tc.bodies))
		n := 0
		for i, s := range tc.bodies {
			bodies[i] = []byte(s)
			n += len(s)
		}
		b.Run(tc.name, func(b *testing.B) {
			b.SetBytes(int64(n / len(bodies)))
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				if is := checkStrictJSON(bodies[i%len(bodies)], requestShape); is.kind != 0 {
					b.Fatal(is)
				}
				i++
			}
		})
	}
}
