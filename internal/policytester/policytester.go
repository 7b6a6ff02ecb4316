// Package policytester runs Tollgate policy test files (`tollgate test`): YAML documents naming the
// policies and passports under test and cases of decision requests with their expected outcome, in
// the spirit of `kyverno test` and `opa test`. Each case is decided by the decision service
// (decider.Service.DecideJSON) exactly as POST /v1/decide would decide it.
package policytester

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"time"

	sigsjson "sigs.k8s.io/json"

	"github.com/tollgate-dev/tollgate/internal/decider"
	"github.com/tollgate-dev/tollgate/internal/manifest"
	"github.com/tollgate-dev/tollgate/internal/policy"
)

// APIVersion and Kind identify a policy test document.
const (
	APIVersion = "cli.tollgate.dev/v1alpha1"
	Kind       = "Test"
)

// Test is one policy test document.
type Test struct {
	// APIVersion is cli.tollgate.dev/v1alpha1.
	APIVersion string `json:"apiVersion"`
	// Kind is Test.
	Kind string `json:"kind"`
	// Metadata names the test.
	Metadata TestMeta `json:"metadata"`
	// Paths are manifest files or directories, relative to the test file.
	Paths []string `json:"paths,omitempty"`
	// Objects are inline GuardrailPolicy and AgentPassport manifests.
	Objects []json.RawMessage `json:"objects,omitempty"`
	// Namespace resolves bare passport names in requests (default: the namespace holding the passport).
	Namespace string `json:"namespace,omitempty"`
	// Now fixes the clock (RFC 3339), for passports that expire.
	Now *time.Time `json:"now,omitempty"`
	// Cases are the requests and their expected decisions, run in order.
	Cases []Case `json:"cases"`
}

// TestMeta names a test.
type TestMeta struct {
	// Name identifies the test in reports.
	Name string `json:"name"`
}

// Case is one request and its expected outcome.
type Case struct {
	// Name identifies the case in reports.
	Name string `json:"name"`
	// Request is the decision request, as sent to POST /v1/decide.
	Request json.RawMessage `json:"request"`
	// Expect is the expected outcome.
	Expect Expect `json:"expect"`
}

// Expect is what a case's decision must be. Empty fields are not checked; Decision or Allow is
// required.
type Expect struct {
	// Decision is allow, deny or modify.
	Decision string `json:"decision,omitempty"`
	// Allow, when set, checks only whether the call goes through (allow or modify) or not (deny):
	// what a guard corpus of benign and dangerous calls asks.
	Allow *bool `json:"allow,omitempty"`
	// Code is an OAP reason code the decision's reasons must contain.
	Code string `json:"code,omitempty"`
	// PolicyID is the deciding policy (and "#rule").
	PolicyID string `json:"policy_id,omitempty"`
	// ModifiedInput is the exact rewritten input of a modify decision.
	ModifiedInput map[string]any `json:"modified_input,omitempty"`
}

// Got is the part of a decision a case checks.
type Got struct {
	Decision      string         `json:"decision"`
	Code          string         `json:"code,omitempty"`
	Message       string         `json:"message,omitempty"`
	PolicyID      string         `json:"policy_id,omitempty"`
	ModifiedInput map[string]any `json:"modified_input,omitempty"`
}

// Result is the outcome of one case.
type Result struct {
	File string `json:"file"`
	// Line is the 1-based line of the case in its file (0 when unknown, e.g. in a JSON stream).
	Line     int      `json:"line,omitempty"`
	Test     string   `json:"test"`
	Case     string   `json:"case"`
	Pass     bool     `json:"pass"`
	Expect   Expect   `json:"expect"`
	Got      *Got     `json:"got,omitempty"`
	Failures []string `json:"failures,omitempty"`
	// Duration is how long the case took to decide.
	Duration time.Duration `json:"-"`
}

// FileError is a test file (or a test in it) that could not run.
type FileError struct {
	File  string `json:"file"`
	Test  string `json:"test,omitempty"`
	Error string `json:"error"`
}

// Report is the outcome of a run.
type Report struct {
	Results []Result    `json:"results"`
	Errors  []FileError `json:"errors,omitempty"`
	Passed  int         `json:"passed"`
	Failed  int         `json:"failed"`
}

// OK reports whether every case passed and every file ran.
func (r *Report) OK() bool { return r.Failed == 0 && len(r.Errors) == 0 }

// Run finds the test files under paths (files as given, directories recursively: every YAML or JSON
// file holding a document of kind Test) and runs them. The returned error is about the paths
// themselves; problems inside files are FileErrors in the report.
func Run(ctx context.Context, paths ...string) (*Report, error) {
	if len(paths) == 0 {
		return nil, errors.New("no test paths given")
	}
	rep := &Report{Results: []Result{}}
	found := 0
	for _, p := range paths {
		info, err := os.Stat(p)
		if err != nil {
			return nil, fmt.Errorf("test path: %w", err)
		}
		files, err := manifest.ExpandPaths(p)
		if err != nil {
			return nil, err
		}
		for _, f := range files {
			data, err := os.ReadFile(f)
			if err != nil {
				rep.Errors = append(rep.Errors, FileError{File: f, Error: err.Error()})
				continue
			}
			tests, err := Parse(f, data)
			if err != nil {
				if info.IsDir() && errors.Is(err, errNotTest) {
					continue // manifests and other files beside the tests
				}
				rep.Errors = append(rep.Errors, FileError{File: f, Error: err.Error()})
				continue
			}
			lines := caseLines(data)
			for i, t := range tests {
				found++
				var tl []int
				if i < len(lines) {
					tl = lines[i]
				}
				runTest(ctx, f, t, tl, rep)
			}
		}
	}
	if found == 0 && len(rep.Errors) == 0 {
		return nil, fmt.Errorf("no test files (kind: %s, apiVersion: %s) found in %s", Kind, APIVersion, strings.Join(paths, ", "))
	}
	return rep, nil
}

var errNotTest = errors.New("no test documents")

// Parse decodes the Test documents of a file strictly. A file without any is errNotTest.
func Parse(file string, data []byte) ([]Test, error) {
	docs, err := manifest.Documents(file, data)
	if err != nil {
		return nil, err
	}
	var tests []Test
	var errs []error
	for _, d := range docs {
		var tm struct {
			APIVersion string `json:"apiVersion"`
			Kind       string `json:"kind"`
		}
		if json.Unmarshal(d.JSON, &tm) != nil || tm.Kind != Kind || !strings.HasPrefix(tm.APIVersion, "cli.tollgate.dev/") {
			continue
		}
		if tm.APIVersion != APIVersion {
			errs = append(errs, &manifest.Error{Source: d.Source, Err: fmt.Errorf("unsupported apiVersion %q: want %s", tm.APIVersion, APIVersion)})
			continue
		}
		var t Test
		strict, err := sigsjson.UnmarshalStrict(d.JSON, &t)
		if err == nil && len(strict) > 0 {
			err = errors.Join(strict...)
		}
		if err == nil {
			err = t.validate()
		}
		if err != nil {
			errs = append(errs, &manifest.Error{Source: d.Source, Err: fmt.Errorf("test %q: %w", t.Metadata.Name, err)})
			continue
		}
		tests = append(tests, t)
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	if len(tests) == 0 {
		return nil, fmt.Errorf("%s: %w (want kind: %s, apiVersion: %s)", file, errNotTest, Kind, APIVersion)
	}
	return tests, nil
}

func (t *Test) validate() error {
	var problems []string
	if t.Metadata.Name == "" {
		problems = append(problems, "metadata.name: required")
	}
	if len(t.Paths) == 0 && len(t.Objects) == 0 {
		problems = append(problems, "paths or objects: at least one is required")
	}
	if len(t.Cases) == 0 {
		problems = append(problems, "cases: at least one is required")
	}
	for i, c := range t.Cases {
		at := fmt.Sprintf("cases[%d]", i)
		if c.Name == "" {
			problems = append(problems, at+".name: required")
		}
		if len(c.Request) == 0 {
			problems = append(problems, at+".request: required")
		}
		switch c.Expect.Decision {
		case policy.DecisionAllow, policy.DecisionDeny, policy.DecisionModify:
		case "":
			if c.Expect.Allow == nil {
				problems = append(problems, at+".expect.decision: required (allow, deny or modify), or expect.allow")
			}
		default:
			problems = append(problems, fmt.Sprintf("%s.expect.decision: %q is not allow, deny or modify", at, c.Expect.Decision))
		}
		if c.Expect.ModifiedInput != nil && c.Expect.Decision != policy.DecisionModify {
			problems = append(problems, at+".expect.modified_input: only for decision modify")
		}
	}
	if len(problems) > 0 {
		return errors.New(strings.Join(problems, "; "))
	}
	return nil
}

// load reads the test's manifests: its paths (relative to the test file) and inline objects.
func (t *Test) load(file string) (*manifest.Set, error) {
	set := &manifest.Set{}
	if len(t.Paths) > 0 {
		paths := make([]string, len(t.Paths))
		for i, p := range t.Paths {
			if !filepath.IsAbs(p) {
				p = filepath.Join(filepath.Dir(file), p)
			}
			paths[i] = p
		}
		loaded, err := manifest.Load(paths...)
		if err != nil {
			return nil, err
		}
		set = loaded
	}
	for i, obj := range t.Objects {
		if err := set.Add(fmt.Sprintf("%s objects[%d]", file, i), obj); err != nil {
			return nil, err
		}
	}
	if len(set.Objects) == 0 {
		return nil, errors.New("the test's paths and objects hold no GuardrailPolicy or AgentPassport")
	}
	return set, set.CheckDuplicates()
}

// runTest runs t's cases; lines are their lines in file (shorter or nil when unknown).
func runTest(ctx context.Context, file string, t Test, lines []int, rep *Report) {
	set, err := t.load(file)
	if err != nil {
		rep.Errors = append(rep.Errors, FileError{File: file, Test: t.Metadata.Name, Error: err.Error()})
		return
	}
	var opts []policy.Option
	if t.Now != nil {
		now := *t.Now
		opts = append(opts, policy.WithClock(func() time.Time { return now }))
	}
	svc, err := decider.NewManifestService(set, t.Namespace, opts...)
	if err != nil {
		rep.Errors = append(rep.Errors, FileError{File: file, Test: t.Metadata.Name, Error: err.Error()})
		return
	}
	for i, c := range t.Cases {
		start := time.Now()
		res := runCase(ctx, svc, c)
		res.Duration = time.Since(start)
		res.File, res.Test = file, t.Metadata.Name
		if i < len(lines) {
			res.Line = lines[i]
		}
		if res.Pass {
			rep.Passed++
		} else {
			rep.Failed++
		}
		rep.Results = append(rep.Results, res)
	}
}

func runCase(ctx context.Context, svc *decider.Service, c Case) Result {
	res := Result{Case: c.Name, Expect: c.Expect}
	body, err := decider.RequestJSON(c.Request)
	if err != nil {
		res.Failures = []string{err.Error()}
		return res
	}
	d, _, err := svc.DecideJSON(ctx, body, nil)
	if err != nil {
		res.Failures = []string{err.Error()}
		return res
	}
	got := &Got{Decision: d.Decision, PolicyID: d.PolicyID, ModifiedInput: d.ModifiedInput}
	if len(d.Reasons) > 0 {
		got.Code, got.Message = d.Reasons[0].Code, d.Reasons[0].Message
	}
	res.Got = got
	if c.Expect.Allow != nil && d.Allow != *c.Expect.Allow {
		res.Failures = append(res.Failures, fmt.Sprintf("allow: got %t (%s %s), want %t", d.Allow, d.Decision, codes(d.Reasons), *c.Expect.Allow))
	}
	if c.Expect.Decision != "" && d.Decision != c.Expect.Decision {
		res.Failures = append(res.Failures, fmt.Sprintf("decision: got %s, want %s", d.Decision, c.Expect.Decision))
	}
	if c.Expect.Code != "" && !hasCode(d.Reasons, c.Expect.Code) {
		res.Failures = append(res.Failures, fmt.Sprintf("code: got %s, want %s", codes(d.Reasons), c.Expect.Code))
	}
	if c.Expect.PolicyID != "" && d.PolicyID != c.Expect.PolicyID {
		res.Failures = append(res.Failures, fmt.Sprintf("policy_id: got %q, want %q", d.PolicyID, c.Expect.PolicyID))
	}
	if c.Expect.ModifiedInput != nil && !sameJSON(d.ModifiedInput, c.Expect.ModifiedInput) {
		res.Failures = append(res.Failures, fmt.Sprintf("modified_input: got %s, want %s", compact(d.ModifiedInput), compact(c.Expect.ModifiedInput)))
	}
	res.Pass = len(res.Failures) == 0
	return res
}

func hasCode(reasons []policy.Reason, code string) bool {
	for _, r := range reasons {
		if r.Code == code {
			return true
		}
	}
	return false
}

func codes(reasons []policy.Reason) string {
	out := make([]string, len(reasons))
	for i, r := range reasons {
		out[i] = r.Code
	}
	return strings.Join(out, ",")
}

// sameJSON compares two values by their JSON meaning (numbers as numbers, key order ignored).
func sameJSON(a, b any) bool {
	var na, nb any
	if json.Unmarshal([]byte(compact(a)), &na) != nil || json.Unmarshal([]byte(compact(b)), &nb) != nil {
		return false
	}
	return reflect.DeepEqual(na, nb)
}

func compact(v any) string {
	data, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprintf("%v", v)
	}
	return string(bytes.TrimSpace(data))
}
