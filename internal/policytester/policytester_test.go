package policytester

import (
	"bytes"
	"context"
	"encoding/json"
	"encoding/xml"
	"os"
	"path/filepath"
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

// failingFile is a test file with one passing and two failing cases, at known lines, beside a
// second Test document.
const failingFile = `# a comment
apiVersion: cli.tollgate.dev/v1alpha1
kind: Test
metadata:
  name: ci-formats
paths:
- SAMPLES
cases:
- name: listing is allowed
  request: {passport: coding-agent, tool_name: bash, tool_input: {command: ls}}
  expect: {decision: allow}
- name: "rm -rf, wrongly expected to pass"
  request:
    passport: coding-agent
    tool_name: bash
    tool_input: {command: rm -rf /}
  expect:
    decision: allow
---
apiVersion: cli.tollgate.dev/v1alpha1
kind: Test
metadata:
  name: second
paths:
- SAMPLES
cases:
- name: wrong code
  request: {passport: coding-agent, tool_name: bash, tool_input: {command: "sudo ls"}}
  expect: {decision: deny, code: oap.allowed}
`

func runFailing(t *testing.T) (*Report, string) {
	t.Helper()
	samples, err := filepath.Abs("../../config/samples")
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "ci.yaml")
	if err := os.WriteFile(file, []byte(strings.ReplaceAll(failingFile, "SAMPLES", samples)), 0o644); err != nil {
		t.Fatal(err)
	}
	rep, err := Run(context.Background(), file)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Passed != 1 || rep.Failed != 2 {
		t.Fatalf("passed %d failed %d, want 1 and 2: %+v %+v", rep.Passed, rep.Failed, rep.Results, rep.Errors)
	}
	return rep, file
}

func TestCaseLines(t *testing.T) {
	rep, _ := runFailing(t)
	want := map[string]int{"listing is allowed": 9, "rm -rf, wrongly expected to pass": 12, "wrong code": 27}
	for _, r := range rep.Results {
		if r.Line != want[r.Case] {
			t.Errorf("case %q at line %d, want %d", r.Case, r.Line, want[r.Case])
		}
	}
	if got := caseLines([]byte("{\"apiVersion\": \"cli.tollgate.dev/v1alpha1\", \"kind\": \"Test\",\n \"cases\": [\n {\"name\": \"a\"}]}")); len(got) != 1 || len(got[0]) != 1 || got[0][0] != 3 {
		t.Errorf("lines of a JSON test file %v, want [[3]]", got)
	}
	if got := caseLines([]byte("kind: Test\ncases: [\n")); got != nil {
		t.Errorf("lines of broken YAML %v, want none", got)
	}
}

func TestWriteGitHub(t *testing.T) {
	rep, file := runFailing(t)
	rep.Errors = append(rep.Errors, FileError{File: "bad, file.yaml", Error: "line one\nline two: 100%"})
	var buf bytes.Buffer
	if err := rep.WriteGitHub(&buf); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	want := []string{
		"::error file=" + file + ",line=12,title=tollgate test ci-formats%3A rm -rf%2C wrongly expected to pass::case \"rm -rf, wrongly expected to pass\" failed: decision: got deny, want allow",
		"::error file=" + file + ",line=27,title=tollgate test second%3A wrong code::case \"wrong code\" failed: code: got oap.blocked_pattern, want oap.allowed",
		"::error file=bad%2C file.yaml,title=tollgate test%3A cannot run::line one%0Aline two: 100%25",
		"1 passed, 2 failed, 1 errors",
	}
	if len(lines) != len(want) {
		t.Fatalf("output:\n%s\nwant %d lines", buf.String(), len(want))
	}
	for i := range want {
		if lines[i] != want[i] {
			t.Errorf("line %d:\n got %s\nwant %s", i, lines[i], want[i])
		}
	}
}

func TestWriteJUnitValidates(t *testing.T) {
	s, err := loadSchema("testdata/junit-10.xsd")
	if err != nil {
		t.Fatal(err)
	}
	rep, file := runFailing(t)
	rep.Errors = append(rep.Errors, FileError{File: "broken.yaml", Test: "broken", Error: "cannot <load> & \"fail\""})
	var buf bytes.Buffer
	if err := rep.WriteJUnit(&buf); err != nil {
		t.Fatal(err)
	}
	if problems := s.validate(bytes.NewReader(buf.Bytes())); len(problems) > 0 {
		t.Fatalf("JUnit output does not validate against junit-10.xsd: %v\n%s", problems, buf.String())
	}
	var doc junitSuites
	if err := xml.Unmarshal(buf.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	if doc.Tests != 4 || doc.Failures != 2 || doc.Errors != 1 || len(doc.Suites) != 3 {
		t.Fatalf("testsuites tests=%d failures=%d errors=%d suites=%d, want 4, 2, 1, 3", doc.Tests, doc.Failures, doc.Errors, len(doc.Suites))
	}
	first := doc.Suites[0]
	if first.Name != "ci-formats" || first.File != file || first.Tests != 2 || first.Failures != 1 || len(first.Cases) != 2 {
		t.Errorf("first suite %+v", first)
	}
	if f := first.Cases[1].Failure; f == nil || !strings.Contains(f.Text, file+":12") || f.Message != "decision: got deny, want allow" {
		t.Errorf("failure of the second case %+v, want its location and reason", f)
	}
	if first.Cases[0].Failure != nil {
		t.Error("a passing case has a failure")
	}
	if e := doc.Suites[2].Cases[0].Error; e == nil || !strings.Contains(e.Text, `cannot <load> & "fail"`) {
		t.Errorf("file error %+v", e)
	}
	// Examples pass: a report without failures validates too.
	ok, err := Run(context.Background(), "../../examples/tests")
	if err != nil {
		t.Fatal(err)
	}
	buf.Reset()
	if err := ok.WriteJUnit(&buf); err != nil {
		t.Fatal(err)
	}
	if problems := s.validate(bytes.NewReader(buf.Bytes())); len(problems) > 0 || !strings.Contains(buf.String(), `failures="0"`) {
		t.Fatalf("examples' JUnit: %v\n%s", problems, buf.String())
	}
}
