package manifest

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tollgate-dev/tollgate/internal/policy"
)

const passportYAML = `apiVersion: guardrails.tollgate.dev/v1alpha1
kind: AgentPassport
metadata:
  name: bot
spec:
  owner: {id: me@example.com}
  capabilities: [{id: system.command.execute}]
`

const policyYAML = `apiVersion: guardrails.tollgate.dev/v1alpha1
kind: GuardrailPolicy
metadata:
  name: no-rm
  namespace: agents
spec:
  rules:
  - name: no-rm
    tools: [bash]
    when: "input.command.contains('rm ')"
    action: Deny
`

func TestParse(t *testing.T) {
	tests := []struct {
		name      string
		data      string
		objects   []string // Kind ns/name
		skipped   int
		wantErr   []string // substrings of the error
		wantLines []int
	}{
		{name: "single passport defaults namespace", data: passportYAML,
			objects: []string{"AgentPassport default/bot"}, wantLines: []int{1}},
		{name: "multi document with comments and empty docs",
			data:    "# leading comment\n---\n" + passportYAML + "---\n---\n# only a comment\n" + "...\n" + policyYAML,
			objects: []string{"AgentPassport default/bot", "GuardrailPolicy agents/no-rm"}, wantLines: []int{3, 14}},
		{name: "json object", data: `{"apiVersion":"guardrails.tollgate.dev/v1alpha1","kind":"AgentPassport","metadata":{"name":"j"},"spec":{"owner":{"id":"x"}}}`,
			objects: []string{"AgentPassport default/j"}},
		{name: "json array and stream", data: `[{"apiVersion":"guardrails.tollgate.dev/v1alpha1","kind":"AgentPassport","metadata":{"name":"a"},"spec":{"owner":{"id":"x"}}}]
{"apiVersion":"guardrails.tollgate.dev/v1alpha1","kind":"AgentPassport","metadata":{"name":"b"},"spec":{"owner":{"id":"x"}}}`,
			objects: []string{"AgentPassport default/a", "AgentPassport default/b"}},
		{name: "kind List", data: "apiVersion: v1\nkind: List\nitems:\n- " + strings.ReplaceAll(strings.TrimSpace(passportYAML), "\n", "\n  ") + "\n",
			objects: []string{"AgentPassport default/bot"}},
		{name: "other kinds are skipped", data: "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: x}\n---\n" + passportYAML,
			objects: []string{"AgentPassport default/bot"}, skipped: 1},
		{name: "unknown field with path", data: strings.Replace(policyYAML, "action: Deny", "action: Deny\n    actoin: Allow", 1),
			wantErr: []string{"x.yaml (document 1, line 1)", `unknown field "spec.rules[0].actoin"`}},
		{name: "duplicate key", data: passportYAML + "  regions: [a]\n  regions: [b]\n",
			wantErr: []string{"x.yaml (document 1, line 1)", "regions"}},
		{name: "wrong type", data: strings.Replace(passportYAML, "capabilities: [{id: system.command.execute}]", "capabilities: yes", 1),
			wantErr: []string{"spec.capabilities"}},
		{name: "unknown tollgate kind", data: "apiVersion: guardrails.tollgate.dev/v1alpha1\nkind: Guardrail\nmetadata: {name: x}\n",
			wantErr: []string{`unknown kind "Guardrail"`}},
		{name: "wrong version", data: "apiVersion: guardrails.tollgate.dev/v1\nkind: AgentPassport\nmetadata: {name: x}\n",
			wantErr: []string{`unsupported apiVersion "guardrails.tollgate.dev/v1"`}},
		{name: "missing type", data: "metadata: {name: x}\n", wantErr: []string{"apiVersion and kind are missing"}},
		{name: "missing name", data: strings.Replace(passportYAML, "name: bot", "labels: {}", 1), wantErr: []string{"metadata.name: required"}},
		{name: "invalid name", data: strings.Replace(passportYAML, "name: bot", "name: Bot_1", 1), wantErr: []string{`metadata.name "Bot_1"`}},
		{name: "duplicate object", data: passportYAML + "---\n" + passportYAML,
			wantErr: []string{"x.yaml (document 2, line 9)", "AgentPassport default/bot is also defined in x.yaml (document 1, line 1)"}},
		{name: "invalid yaml in second document", data: passportYAML + "---\nkind: [\n",
			wantErr: []string{"x.yaml (document 2, line 9): invalid YAML"}},
		{name: "invalid json", data: `{"kind": `, wantErr: []string{"x.yaml (document 1): invalid JSON"}},
		{name: "scalar document", data: "hello\n", wantErr: []string{"not an object"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			set, err := Parse("x.yaml", []byte(tt.data))
			if len(tt.wantErr) > 0 {
				if err == nil {
					t.Fatalf("want error containing %q, got none", tt.wantErr)
				}
				for _, w := range tt.wantErr {
					if !strings.Contains(err.Error(), w) {
						t.Errorf("error %q does not contain %q", err, w)
					}
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, o := range set.Objects {
				got = append(got, o.Kind()+" "+o.Namespace()+"/"+o.Name())
			}
			if strings.Join(got, ",") != strings.Join(tt.objects, ",") {
				t.Errorf("objects = %v, want %v", got, tt.objects)
			}
			if len(set.Skipped) != tt.skipped {
				t.Errorf("skipped = %d, want %d", len(set.Skipped), tt.skipped)
			}
			for i, l := range tt.wantLines {
				if set.Objects[i].Source.Line != l {
					t.Errorf("object %d line = %d, want %d", i, set.Objects[i].Source.Line, l)
				}
			}
		})
	}
}

func TestLoadSamplesDirectory(t *testing.T) {
	set, err := Load("../../config/samples")
	if err != nil {
		t.Fatal(err)
	}
	if len(set.Objects) != 8 {
		t.Fatalf("loaded %d objects from the samples, want 8", len(set.Objects))
	}
	snaps, err := set.Compile()
	if err != nil {
		t.Fatal(err)
	}
	snap := snaps[DefaultNamespace]
	if snap == nil {
		t.Fatalf("no snapshot for namespace default: %v", snaps)
	}
	d := snap.Decide(context.Background(), policy.Request{Passport: "coding-agent", ToolName: "bash",
		ToolInput: map[string]any{"command": "ls && rm -rf /"}})
	if d.Decision != policy.DecisionDeny || d.Reasons[0].Code != policy.CodeBlockedPattern {
		t.Errorf("rm -rf: got %s %v, want deny oap.blocked_pattern", d.Decision, d.Reasons)
	}
}

func TestLoadDirectoryRecursively(t *testing.T) {
	dir := t.TempDir()
	write := func(rel, content string) {
		t.Helper()
		p := filepath.Join(dir, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("b/passport.yml", passportYAML)
	write("a/policy.yaml", policyYAML)
	write("a/kustomization.yaml", "resources: [policy.yaml]\n")
	write("a/README.md", "not a manifest")
	write(".git/config.yaml", "garbage: [")
	set, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(set.Files) != 2 || !strings.HasSuffix(set.Files[0], filepath.Join("a", "policy.yaml")) {
		t.Errorf("files = %v, want a/policy.yaml then b/passport.yml", set.Files)
	}
	if got := set.Namespaces(); strings.Join(got, ",") != "agents,default" {
		t.Errorf("namespaces = %v", got)
	}
	if _, err := Load(filepath.Join(dir, "missing")); err == nil {
		t.Error("missing path: want an error")
	}
}

func TestCompileProblemsNameTheFile(t *testing.T) {
	bad := strings.Replace(policyYAML, "input.command.contains('rm ')", "input.command.contains(", 1)
	set, err := Parse("bad.yaml", []byte(passportYAML+"---\n"+bad))
	if err != nil {
		t.Fatal(err)
	}
	_, err = set.Compile()
	var ie *InvalidError
	if !errors.As(err, &ie) {
		t.Fatalf("want *InvalidError, got %v", err)
	}
	want := "bad.yaml (document 2, line 9): GuardrailPolicy agents/no-rm: spec.rules[0].when: "
	if !strings.HasPrefix(ie.Problems[0].String(), want) {
		t.Errorf("problem = %q, want prefix %q", ie.Problems[0], want)
	}
}

func TestClusterPolicyAppliesToTheNamespacesItSelects(t *testing.T) {
	const docs = `apiVersion: v1
kind: Namespace
metadata:
  name: prod
  labels: {tier: prod}
---
apiVersion: guardrails.tollgate.dev/v1alpha1
kind: ClusterGuardrailPolicy
metadata:
  name: baseline
spec:
  namespaceSelector:
    matchLabels: {tier: prod}
  rules:
  - name: no-rm
    tools: [bash]
    when: input.command.startsWith("rm ")
    action: Deny
---
apiVersion: guardrails.tollgate.dev/v1alpha1
kind: AgentPassport
metadata: {name: bot, namespace: prod}
spec:
  owner: {id: me@example.com}
  capabilities: [{id: system.command.execute}]
---
apiVersion: guardrails.tollgate.dev/v1alpha1
kind: AgentPassport
metadata: {name: bot, namespace: dev}
spec:
  owner: {id: me@example.com}
  capabilities: [{id: system.command.execute}]
`
	set, err := Parse("cluster.yaml", []byte(docs))
	if err != nil {
		t.Fatal(err)
	}
	if got := set.Namespaces(); len(got) != 2 || got[0] != "dev" || got[1] != "prod" {
		t.Fatalf("namespaces %v, want [dev prod] (a cluster policy has none)", got)
	}
	snaps, err := set.Compile()
	if err != nil {
		t.Fatal(err)
	}
	req := policy.Request{Passport: "bot", ToolName: "bash", ToolInput: map[string]any{"command": "rm x"}}
	if d := snaps["prod"].Decide(context.Background(), req); d.Decision != policy.DecisionDeny || d.PolicyID != "cluster/baseline#no-rm" {
		t.Errorf("prod: got %s by %q, want deny by cluster/baseline#no-rm", d.Decision, d.PolicyID)
	}
	if d := snaps["dev"].Decide(context.Background(), req); d.Decision != policy.DecisionAllow {
		t.Errorf("dev (not selected): got %s %v, want allow", d.Decision, d.Reasons)
	}

	// An invalid cluster policy is reported once, with its kind, name and field path.
	bad := strings.Replace(docs, `input.command.startsWith("rm ")`, `input.command.startsWith(`, 1)
	set, err = Parse("cluster.yaml", []byte(bad))
	if err != nil {
		t.Fatal(err)
	}
	_, err = set.Compile()
	var inv *InvalidError
	if !errors.As(err, &inv) || len(inv.Problems) != 1 {
		t.Fatalf("got %v, want one problem", err)
	}
	if p := inv.Problems[0]; p.Kind != KindClusterGuardrailPolicy || p.Name != "baseline" || p.Path != "spec.rules[0].when" || p.Line != 7 {
		t.Errorf("problem %+v, want ClusterGuardrailPolicy baseline spec.rules[0].when at line 7", p)
	}
}
