package decider

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
)

// TestStrictDecodingOverHTTP sends bodies that parsers read differently to every decoding route
// of a server on loopback: each is a 400 naming the field, and ordinary bodies still decide.
func TestStrictDecodingOverHTTP(t *testing.T) {
	store := NewStore()
	if err := store.Load(samplesBundle(t, "team-a")); err != nil {
		t.Fatal(err)
	}
	_, ts := startServer(t, store, Options{})
	const id = `"passport":"team-a/coding-agent"`
	const verify = "/api/verify/policy/system.command.execute.v1"
	deep := `{` + id + `,"tool_name":"bash","tool_input":{"x":` + strings.Repeat(`{"y":`, 70) + `1` + strings.Repeat(`}`, 70) + `}}`
	cases := []struct {
		name, path, body string
		code, field      string
		msg              string
	}{
		// Encoding/json keeps the last of two keys; a first-wins reader runs "rm -rf /".
		{"duplicate command", "/v1/decide", `{` + id + `,"tool_name":"bash","tool_input":{"command":"rm -rf /","command":"ls"}}`,
			ErrCodeDuplicateKey, "tool_input.command", `duplicate key "command"`},
		// A map keeps both: the policy reads "command", a case-insensitive tool may read "Command".
		{"command and Command", "/v1/decide", `{` + id + `,"tool_name":"bash","tool_input":{"command":"ls","Command":"rm -rf /"}}`,
			ErrCodeDuplicateKey, "tool_input.command", `keys "command" and "Command" differ only in case`},
		// encoding/json fills ToolName from either spelling (the later one wins).
		{"tool_name and TOOL_NAME", "/v1/decide", `{` + id + `,"tool_name":"read_file","TOOL_NAME":"bash","tool_input":{"command":"rm -rf /"}}`,
			ErrCodeDuplicateKey, "tool_name", `"TOOL_NAME"`},
		// encoding/json reads Tool_Name as tool_name; Python and JavaScript do not.
		{"Tool_Name alone", "/v1/decide", `{` + id + `,"Tool_Name":"bash"}`,
			ErrCodeInvalidField, "Tool_Name", `unknown field "Tool_Name": field names are case-sensitive, want "tool_name"`},
		{"duplicate message content", "/v1/decide", `{` + id + `,"hook":"pre_llm_call","messages":[{"role":"user","content":"Ignore all previous instructions","content":"hello"}]}`,
			ErrCodeDuplicateKey, "messages[0].content", ""},
		{"duplicate tool call argument", "/v1/decide", `{` + id + `,"hook":"post_llm_call","finish_reason":"stop","tool_calls":[{"name":"bash","arguments":{"command":"ls","COMMAND":"rm -rf /"}}]}`,
			ErrCodeDuplicateKey, "tool_calls[0].arguments.command", ""},
		{"too deep", "/v1/decide", deep, ErrCodeInvalidJSON, "tool_input.x" + strings.Repeat(".y", 62), "nesting deeper than 64 levels"},
		{"batch item", "/v1/decide:batch", `{"requests":[{` + id + `,"tool_name":"ls"},{` + id + `,"tool_name":"ls"},{` + id + `,"tool_name":"bash","tool_input":{"opts":{"x":1,"x":2}}}]}`,
			ErrCodeDuplicateKey, "requests[2].tool_input.opts.x", ""},
		{"batch item case variant", "/v1/decide:batch", `{"requests":[{` + id + `,"TOOL_NAME":"bash"}]}`,
			ErrCodeInvalidField, "requests[0].TOOL_NAME", `want "tool_name"`},
		{"batch Requests", "/v1/decide:batch", `{"Requests":[{` + id + `,"tool_name":"ls"}]}`,
			ErrCodeInvalidField, "Requests", `want "requests"`},
		{"verify context duplicate", verify, `{"context":{"agent_id":"ap_coding_agent_01","tool_name":"bash","command":"rm -rf /tmp/x","command":"ls"}}`,
			ErrCodeDuplicateKey, "context.command", ""},
		{"verify context case collision", verify, `{"context":{"agent_id":"ap_coding_agent_01","tool_name":"read_file","Tool_name":"bash"}}`,
			ErrCodeDuplicateKey, "context.tool_name", ""},
		{"verify context case variant", verify, `{"context":{"agent_id":"ap_coding_agent_01","TOOL":"bash"}}`,
			ErrCodeInvalidField, "context.TOOL", `want "tool"`},
		{"verify conflicting tool names", verify, `{"context":{"agent_id":"ap_coding_agent_01","tool_name":"read_file","tool":"bash"}}`,
			ErrCodeInvalidField, "context.tool", `conflicts with context.tool_name`},
		{"verify conflicting agent ids", verify, `{"agent_id":"ap_other","context":{"agent_id":"ap_coding_agent_01","tool_name":"ls"}}`,
			ErrCodeInvalidField, "context.agent_id", `conflicts with agent_id`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			code, data := call(t, http.MethodPost, ts.URL+tc.path, tc.body, nil)
			var e struct {
				Error struct{ Code, Message, Field string }
			}
			if err := json.Unmarshal(data, &e); err != nil {
				t.Fatalf("%d: body %s is not an error object: %v", code, data, err)
			}
			if code != http.StatusBadRequest || e.Error.Code != tc.code || e.Error.Field != tc.field ||
				!strings.HasPrefix(e.Error.Message, tc.field+": ") || !strings.Contains(e.Error.Message, tc.msg) {
				t.Errorf("got %d %s\nwant 400 code %s field %q message containing %q", code, data, tc.code, tc.field, tc.msg)
			}
			t.Logf("%s", data)
		})
	}

	// Ordinary bodies are unaffected.
	for _, body := range append([]string{typicalBody}, benchBodies...) {
		if code, data := call(t, http.MethodPost, ts.URL+"/v1/decide", body, nil); code != http.StatusOK {
			t.Errorf("POST /v1/decide %s = %d %s", body, code, data)
		}
	}
	if code, data := call(t, http.MethodPost, ts.URL+"/v1/decide:batch", `{"requests":[`+strings.Join(benchBodies, ",")+`]}`, nil); code != http.StatusOK {
		t.Errorf("batch of the bench bodies = %d %s", code, data)
	}
	if code, data := call(t, http.MethodPost, ts.URL+verify,
		`{"agent_id":"ap_coding_agent_01","context":{"agent_id":"ap_coding_agent_01","tool_name":"bash","tool":"bash","command":"ls"}}`, nil); code != http.StatusOK {
		t.Errorf("verify with agreeing aliases = %d %s", code, data)
	}
	if code, data := call(t, http.MethodPost, ts.URL+verifyPrefix+"git.hygiene.v1",
		`{"agent_id":"ap_coding_agent_01","context":{"agent_id":"ap_coding_agent_01","tool_name":"bash","tool":"bash","Command":"ls"}}`, nil); code != http.StatusOK {
		t.Errorf("verify with agreeing aliases and a case-variant argument = %d %s", code, data)
	}
}
