package policy

import (
	"encoding/json"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite golden files")

// TestCompileErrorsGolden compiles every testdata/compile/*.json bundle and compares the field errors
// with the .golden file beside it (go test -run Golden -update rewrites them).
func TestCompileErrorsGolden(t *testing.T) {
	files, err := filepath.Glob("testdata/compile/*.json")
	if err != nil || len(files) == 0 {
		t.Fatalf("no inputs: %v", err)
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			data, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			var b Bundle
			if err := json.Unmarshal(data, &b); err != nil {
				t.Fatalf("decode: %v", err)
			}
			_, err = Compile(b)
			var ce *CompileError
			if !errors.As(err, &ce) {
				t.Fatalf("want *CompileError, got %v", err)
			}
			got := JoinErrors(ce.Errors(), "\n") + "\n"
			golden := strings.TrimSuffix(f, ".json") + ".golden"
			if *update {
				if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run with -update)", err)
			}
			if got != string(want) {
				t.Errorf("errors differ from %s:\n--- got\n%s--- want\n%s", golden, got, want)
			}
		})
	}
}

func TestCompilePolicyPaths(t *testing.T) {
	cases := []struct {
		name string
		spec PolicySpec
		want string
	}{
		{"undeclared reference", PolicySpec{Rules: []Rule{
			{Name: "a", Tools: []string{"x"}, Action: ActionAllow}, {Name: "b", Tools: []string{"x"}, Action: ActionAllow},
			{Name: "c", Tools: []string{"bash"}, When: "inptu.command == 'x'", Action: ActionDeny}}},
			"spec.rules[2].when: undeclared reference to 'inptu'"},
		{"when must be bool", PolicySpec{Rules: []Rule{{Name: "a", Tools: []string{"x"}, When: "1 + 2", Action: ActionDeny}}},
			"spec.rules[0].when: expression must evaluate to bool, not int"},
		{"requires must be bool", PolicySpec{Requires: []Requirement{{Name: "a", Expression: "'s'", Code: "oap.requirement_failed"}}},
			"spec.requires[0].expression: expression must evaluate to bool, not string"},
		{"modify value syntax", PolicySpec{Rules: []Rule{{Name: "a", Tools: []string{"x"}, Action: ActionModify,
			Modify: &InputPatch{Set: []InputField{{Path: "p", Value: "1 +"}}}}}}, "spec.rules[0].modify.set[0].value: "},
		{"window", PolicySpec{RateLimits: []RateLimit{{Name: "a", Limit: 1, Window: "1 minute"}}}, "spec.rateLimits[0].window: invalid duration"},
		{"regex", PolicySpec{InputGuards: &InputGuards{Patterns: []InputPattern{{Name: "a", Pattern: "a(", RiskLevel: RiskLow}}}},
			"spec.inputGuards.patterns[0].pattern: invalid regular expression"},
		{"normal finish reason", PolicySpec{ResponseGuards: &ResponseGuards{SafetyFinishReasons: []string{"length"}}},
			"spec.responseGuards.safetyFinishReasons[0]: \"length\" is a normal termination"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			fe := ValidatePolicy(tc.spec)
			if len(fe) != 1 || !strings.HasPrefix(FormatError(fe[0]), tc.want) {
				t.Fatalf("got %v, want one error starting %q", fe, tc.want)
			}
		})
	}
	if fe := ValidatePolicy(sampleBundle().Policies[0].Spec); len(fe) != 0 {
		t.Errorf("valid policy: %v", fe)
	}
}

func TestCompileBundlePaths(t *testing.T) {
	b := sampleBundle()
	b.Policies[0].Spec.Rules[2].When = "inptu.x"
	b.Passports[1].Spec.Status = "sleeping"
	_, err := Compile(b)
	var ce *CompileError
	if !errors.As(err, &ce) {
		t.Fatalf("got %v", err)
	}
	got := JoinErrors(ce.Errors(), "\n")
	for _, want := range []string{
		"policies[shell-safety].spec.rules[2].when: undeclared reference to 'inptu'",
		`passports[suspended].spec.status: unsupported value "sleeping"`,
	} {
		if !strings.Contains(got, want) {
			t.Errorf("errors lack %q:\n%s", want, got)
		}
	}
}

func TestCompilePassport(t *testing.T) {
	cases := []struct {
		name string
		spec PassportSpec
		want string
	}{
		{"valid", sampleBundle().Passports[0].Spec, ""},
		{"owner required", PassportSpec{}, "spec.owner.id: required"},
		{"bad capability", PassportSpec{Owner: PassportOwner{ID: "x"}, Capabilities: []Capability{{ID: "Bad"}}}, "spec.capabilities[0].id: invalid value"},
		{"bad limits", PassportSpec{Owner: PassportOwner{ID: "x"}, Limits: map[string]any{CapCommandExecute: map[string]any{"allowed_commands": "git"}}},
			"spec.limits[system.command.execute].allowed_commands: must be a list of strings"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			fe := ValidatePassport(tc.spec)
			if tc.want == "" {
				if len(fe) != 0 {
					t.Fatalf("unexpected errors: %v", fe)
				}
				return
			}
			if len(fe) == 0 || !strings.HasPrefix(FormatError(fe[0]), tc.want) {
				t.Fatalf("got %v, want %q", fe, tc.want)
			}
		})
	}
}

func TestPolicyWarnings(t *testing.T) {
	r := func(name, when string, tools ...string) Rule {
		return Rule{Name: name, Tools: tools, When: when, Action: ActionDeny}
	}
	cases := []struct {
		name  string
		rules []Rule
		want  []string
	}{
		{"clean", []Rule{r("a", "", "bash"), r("b", "", "ls")}, nil},
		{"when false", []Rule{r("a", " false ", "bash")}, []string{"spec.rules[0] (a): when is always false"}},
		{"impossible glob", []Rule{r("a", "", "read file")}, []string{`spec.rules[0].tools[0] (a): "read file" can never match`, "spec.rules[0] (a): no tool glob can match"}},
		{"question mark", []Rule{r("a", "", "ba?h", "ls")}, []string{`spec.rules[0].tools[0] (a): "ba?h" can never match a tool name: '?' is not a wildcard`}},
		{"shadowed by star", []Rule{r("all", "", "*"), r("b", "", "bash")}, []string{"spec.rules[1] (b): shadowed by spec.rules[0] (all)"}},
		{"shadowed by prefix glob", []Rule{r("files", "", "file_*"), r("b", "x == 1", "file_read", "file_w*")}, []string{"spec.rules[1] (b): shadowed by spec.rules[0] (files)"}},
		{"same tools", []Rule{r("a", "true", "bash"), r("b", "", "bash")}, []string{"spec.rules[1] (b): shadowed by spec.rules[0] (a)"}},
		{"not shadowed: when", []Rule{r("a", "input.x == 1", "*"), r("b", "", "bash")}, nil},
		{"not shadowed: wider", []Rule{r("a", "", "file_read"), r("b", "", "file_*")}, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := PolicyWarnings(PolicySpec{Rules: tc.rules})
			if len(got) != len(tc.want) {
				t.Fatalf("got %q, want %d warnings", got, len(tc.want))
			}
			for i := range got {
				if !strings.HasPrefix(got[i], tc.want[i]) {
					t.Errorf("warning %d = %q, want prefix %q", i, got[i], tc.want[i])
				}
			}
		})
	}
}

func TestRevisionAndDigest(t *testing.T) {
	a := sampleBundle()
	b := sampleBundle()
	b.Passports[0], b.Passports[3] = b.Passports[3], b.Passports[0]
	b.Policies[0], b.Policies[2] = b.Policies[2], b.Policies[0]
	if a.Revision() != b.Revision() || !strings.HasPrefix(a.Revision(), "sha256:") {
		t.Errorf("revision depends on order: %s vs %s", a.Revision(), b.Revision())
	}
	b.Policies[0].Spec.Priority++
	if a.Revision() == b.Revision() {
		t.Error("revision ignores content")
	}
	p := a.Passports[0]
	d := PassportDigest(p)
	if len(d) != len("sha256:")+64 {
		t.Fatalf("digest = %q", d)
	}
	// The digest is over the canonical form: a JSON round trip (different key order, number forms)
	// gives the same digest.
	data, _ := json.Marshal(p)
	var q Passport
	if err := json.Unmarshal(data, &q); err != nil {
		t.Fatal(err)
	}
	if PassportDigest(q) != d {
		t.Error("digest changes across a JSON round trip")
	}
	q.Spec.Status = StatusSuspended
	if PassportDigest(q) == d {
		t.Error("digest ignores status")
	}
	snap := compileSample(t)
	if snap.Revision() != a.Revision() || snap.Namespace() != "agents" {
		t.Errorf("snapshot revision %s, namespace %s", snap.Revision(), snap.Namespace())
	}
	if got, ok := snap.Passport("agents/dev"); !ok || got.Name != "dev" {
		t.Errorf("Passport(agents/dev) = %v, %v", got.Name, ok)
	}
	if got, ok := snap.PassportByAgentID("agent-dev"); !ok || got.Name != "dev" {
		t.Errorf("PassportByAgentID = %v, %v", got.Name, ok)
	}
	if got, ok := snap.PassportByAgentID("uid-reader"); !ok || got.Name != "reader" {
		t.Errorf("PassportByAgentID(uid) = %v, %v", got.Name, ok)
	}
	if n := snap.SelectedPassports("shell-safety"); n != 3 {
		t.Errorf("SelectedPassports(shell-safety) = %d, want 3", n)
	}
}

func TestGlob(t *testing.T) {
	cases := []struct {
		pattern, name string
		want          bool
	}{
		{"bash", "bash", true}, {"bash", "bash2", false}, {"*", "", true}, {"*", "anything", true},
		{"file_*", "file_read", true}, {"file_*", "file_", true}, {"file_*", "fil", false},
		{"*_admin", "db_admin", true}, {"*_admin", "admin", false}, {"a*b*c", "abc", true},
		{"a*b*c", "axxbyyc", true}, {"a*b*c", "acb", false}, {"mcp__*__delete*", "mcp__gh__delete_repo", true},
		{"*a*a*", "aa", true}, {"*a*a*", "a", false},
	}
	for _, tc := range cases {
		if got := globMatch(tc.pattern, tc.name); got != tc.want {
			t.Errorf("globMatch(%q, %q) = %v, want %v", tc.pattern, tc.name, got, tc.want)
		}
	}
}
