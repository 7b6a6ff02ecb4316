package decider

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/tollgate-dev/tollgate/internal/policy"
)

// fastDecodeCases are bodies for the fast request decoder: want is whether it decodes them itself
// (false: encoding/json does).
var fastDecodeCases = []struct {
	body string
	want bool
}{
	{`{}`, true},
	{` { } `, true},
	{`{"passport":"team-a/coding-agent","tool_name":"bash","tool_input":{"command":"ls -la"},"thread_id":"t1","call_id":"c1"}`, true},
	{`{"agent_id":"a","tool_name":"x","hook":"pre_tool_call","finish_reason":"f","stop_reason":"s","is_subagent":true}`, true},
	{`{"passport":null,"tool_name":"x","is_subagent":null,"tool_input":null}`, true},
	{`{"tool_name":"x","is_subagent":false,"tool_input":{}}`, true},
	{"{\n\t\"tool_name\" : \"x\" ,\r\n \"tool_input\" : { \"a\" : [ 1 , -2.5e3 , 0 , true , false , null , \"s\" , [ ] , { } ] } \n}", true},
	{`{"tool_name":"b\u0061sh","tool_input":{"k\"ey":"a\\b\/c\n\t\b\f\r","\u00e9":"\ud83d\ude00","lone":"\ud800x","lone2":"\udc00"}}`, true},
	{`{"tool_name":"bäsh","tool_input":{"ü":"日本語","x":"` + "\xff\xfe" + `","y":"a` + "\xe2\x80\xa8" + `"}}`, true},
	{`{"tool_input":{"n":1e400}}`, false}, // out of range: encoding/json's error
	{`{"tool_input":{"n":-0,"m":1.5E-7,"o":123456789012345678901234567890}}`, true},
	{`{"tool_name":"x","tool_result":"r"}`, false}, // fields the fast decoder leaves to encoding/json
	{`{"tool_name":"x","messages":[]}`, false},
	{`{"tool_name":"x","content":"c"}`, false},
	{`{"tool_name":"x","tool_calls":[]}`, false},
	{`{"tool_name":"x","timestamp":"2026-01-01T00:00:00Z"}`, false},
	{`{"tool_name":"x","unknown":1}`, false}, // ignored by encoding/json, left to it
	{`{"tool_n\u0061me":"x"}`, false},        // escaped key
	{`{"tool_name":1}`, false},               // wrong types: encoding/json's errors
	{`{"tool_input":[]}`, false},
	{`{"tool_input":"x"}`, false},
	{`{"is_subagent":"true"}`, false},
	{`{"passport":true}`, false},
}

// TestFastDecodeMatchesEncodingJSON checks that the fast decoder takes the bodies it should and
// decodes them exactly as encoding/json does.
func TestFastDecodeMatchesEncodingJSON(t *testing.T) {
	for _, tc := range fastDecodeCases {
		if is := checkStrictJSON([]byte(tc.body), requestShape); is.kind != 0 {
			t.Fatalf("%s: strict check refuses it (%d)", tc.body, is.kind)
		}
		var fast policy.Request
		got := decodeRequestFast([]byte(tc.body), &fast)
		if got != tc.want {
			t.Errorf("decodeRequestFast(%s) = %v, want %v", tc.body, got, tc.want)
		}
		if got {
			compareWithEncodingJSON(t, []byte(tc.body), &fast)
		}
	}
	// Every benchmark and sample request takes the fast path.
	for _, b := range append(append([]string{}, benchBodies...), fuzzSeeds[0]) {
		var r policy.Request
		if !decodeRequestFast([]byte(b), &r) {
			t.Errorf("decodeRequestFast(%s) = false, want true", b)
		}
	}
}

// compareWithEncodingJSON fails unless json.Unmarshal decodes body without error into fast.
func compareWithEncodingJSON(t *testing.T, body []byte, fast *policy.Request) {
	t.Helper()
	var slow policy.Request
	if err := json.Unmarshal(body, &slow); err != nil {
		t.Fatalf("fast decoder accepted %q, encoding/json refuses it: %v", body, err)
	}
	if !reflect.DeepEqual(*fast, slow) {
		t.Fatalf("%q: fast decoder got\n%#v\nencoding/json got\n%#v", body, *fast, slow)
	}
}

// TestDecodeRequestFastAndSlowPaths checks DecodeRequest answers the same through both paths: a
// body the fast decoder gives up on midway is decoded afresh by encoding/json.
func TestDecodeRequestFastAndSlowPaths(t *testing.T) {
	// tool_input filled by the fast decoder, then a field it leaves to encoding/json.
	req, err := DecodeRequest([]byte(`{"tool_name":"x","tool_input":{"a":1},"thread_id":"t","tool_result":"r"}`))
	if err != nil {
		t.Fatal(err)
	}
	want := policy.Request{ToolName: "x", ToolInput: map[string]any{"a": 1.0}, ThreadID: "t", ToolResult: "r"}
	if !reflect.DeepEqual(req, want) {
		t.Fatalf("got %#v, want %#v", req, want)
	}
	// encoding/json's errors for what the fast decoder gives up on.
	for body, msg := range map[string]string{
		`{"tool_name":1}`: "tool_name: want a string, got JSON number",
		`{"tool_name":"x","tool_input":{"n":1e400}}`: "",
	} {
		_, err := DecodeRequest([]byte(body))
		if err == nil {
			t.Fatalf("DecodeRequest(%s) succeeded", body)
		}
		if msg != "" && err.Error() != msg {
			t.Errorf("DecodeRequest(%s) = %q, want %q", body, err, msg)
		}
	}
}

// FuzzFastDecodeMatchesEncodingJSON checks the fast decoder against encoding/json on any body the
// strict check accepts: when it decodes one, encoding/json decodes it too, to the same request.
func FuzzFastDecodeMatchesEncodingJSON(f *testing.F) {
	for _, tc := range fastDecodeCases {
		f.Add([]byte(tc.body))
	}
	for _, s := range fuzzSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		var fast policy.Request
		ok := decodeRequestFast(body, &fast) // never panics, whatever the body
		if !ok || checkStrictJSON(body, requestShape).kind != 0 {
			return
		}
		compareWithEncodingJSON(t, body, &fast)
	})
}
