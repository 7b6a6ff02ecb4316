package policytester

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"
)

func TestParseValidates(t *testing.T) {
	const head = "apiVersion: cli.tollgate.dev/v1alpha1\nkind: Test\nmetadata: {name: t}\n"
	const okCase = "cases:\n- name: c\n  request: {passport: p, tool_name: bash}\n  expect: {decision: allow}\n"
	tests := []struct {
		name    string
		data    string
		wantErr string
		tests   int
	}{
		{name: "valid", data: head + "paths: [x]\n" + okCase, tests: 1},
		{name: "two documents", data: head + "paths: [x]\n" + okCase + "---\n" + head + "paths: [z]\n" + okCase, tests: 2},
		{name: "unknown field", data: head + "path: [x]\n" + okCase, wantErr: `unknown field "path"`},
		{name: "no manifests", data: head + okCase, wantErr: "paths or objects"},
		{name: "bad decision", data: head + "paths: [x]\n" + strings.Replace(okCase, "allow", "permit", 1), wantErr: `cases[0].expect.decision: "permit"`},
		{name: "modified_input needs modify", data: head + "paths: [x]\n" + strings.Replace(okCase, "decision: allow", "decision: allow, modified_input: {a: 1}", 1),
			wantErr: "only for decision modify"},
		{name: "wrong version", data: strings.Replace(head, "v1alpha1", "v9", 1) + "paths: [x]\n" + okCase, wantErr: "unsupported apiVersion"},
		{name: "not a test", data: "apiVersion: v1\nkind: ConfigMap\n", wantErr: "no test documents"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Parse("t.yaml", []byte(tt.data))
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error = %v, want it to contain %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != tt.tests {
				t.Errorf("parsed %d tests, want %d", len(got), tt.tests)
			}
		})
	}
}

func TestRunExamples(t *testing.T) {
	rep, err := Run(context.Background(), "../../examples/tests")
	if err != nil {
		t.Fatal(err)
	}
	if !rep.OK() || rep.Passed != 8 {
		var buf bytes.Buffer
		_ = rep.WriteTable(&buf)
		t.Fatalf("examples: passed %d, failed %d, errors %v\n%s", rep.Passed, rep.Failed, rep.Errors, buf.String())
	}
	var buf bytes.Buffer
	if err := rep.WriteJSON(&buf); err != nil {
		t.Fatal(err)
	}
	var back Report
	if err := json.Unmarshal(buf.Bytes(), &back); err != nil || back.Passed != 8 {
		t.Errorf("JSON report does not round-trip: %v", err)
	}
}
