package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"

	"github.com/tollgate-dev/tollgate/internal/testenv"
)

// cond is one status condition in the table cases' objects.
func cond(typ, status, reason, message string) map[string]any {
	return map[string]any{"type": typ, "status": status, "reason": reason, "message": message,
		"lastTransitionTime": "2026-11-22T20:00:00Z", "observedGeneration": float64(2)}
}

// object is a Tollgate object of kind at generation 2 whose status is observedGeneration and conds
// (no status at all when conds is nil). Numbers are float64, as Argo CD decodes JSON.
func object(kind string, observedGeneration float64, conds ...map[string]any) map[string]any {
	obj := map[string]any{
		"apiVersion": "guardrails.tollgate.dev/v1alpha1", "kind": kind,
		"metadata": map[string]any{"name": "x", "namespace": "agents", "generation": float64(2)},
		"spec":     map[string]any{},
	}
	if conds != nil {
		list := make([]any, len(conds))
		for i, c := range conds {
			list[i] = c
		}
		obj["status"] = map[string]any{"observedGeneration": observedGeneration, "conditions": list}
	}
	return obj
}

// TestArgoCDHealthTable runs config/argocd's health scripts on status shapes the controller writes
// (internal/controller/status.go), the end-to-end suite running them on live objects as well.
func TestArgoCDHealthTable(t *testing.T) {
	tests := []struct {
		name, kind  string
		obj         map[string]any
		status      string
		messageHave string
	}{
		{"passport without status", "AgentPassport", object("AgentPassport", 0), "Progressing", "Waiting for Tollgate"},
		{"passport not yet observed", "AgentPassport", object("AgentPassport", 1,
			cond("Ready", "True", "Reconciled", "the passport is active and enforced")), "Progressing", "generation 2"},
		{"active passport", "AgentPassport", object("AgentPassport", 2,
			cond("Suspended", "False", "Active", "the passport is active"),
			cond("Ready", "True", "Reconciled", "the passport is active and enforced")), "Healthy", "Reconciled: the passport is active and enforced"},
		{"suspended passport (kill switch)", "AgentPassport", object("AgentPassport", 2,
			cond("Suspended", "True", "Suspended", "the passport is suspended"),
			cond("Ready", "True", "Suspended", "enforced as declared: the passport is suspended")), "Suspended", "Suspended: the passport is suspended"},
		{"revoked passport", "AgentPassport", object("AgentPassport", 2,
			cond("Suspended", "True", "Revoked", "the passport is revoked"),
			cond("Ready", "True", "Revoked", "enforced as declared: the passport is revoked")), "Suspended", "Revoked"},
		{"expired passport", "AgentPassport", object("AgentPassport", 2,
			cond("Suspended", "True", "Expired", "the passport expired at 2026-01-01T00:00:00Z"),
			cond("Ready", "False", "Expired", "the passport expired at 2026-01-01T00:00:00Z"),
			cond("Stalled", "True", "Expired", "the passport expired at 2026-01-01T00:00:00Z")), "Degraded", "Expired: the passport expired"},
		{"invalid passport", "AgentPassport", object("AgentPassport", 2,
			cond("Suspended", "False", "Active", "the passport is active"),
			cond("Ready", "False", "Invalid", "spec.limits: too large"),
			cond("Stalled", "True", "Invalid", "spec.limits: too large")), "Degraded", "Invalid: spec.limits"},
		{"passport bundle not written", "AgentPassport", object("AgentPassport", 2,
			cond("Ready", "False", "BundleWriteFailed", "configmaps is forbidden")), "Degraded", "BundleWriteFailed"},
		{"passport reconciling", "AgentPassport", object("AgentPassport", 2,
			cond("Ready", "Unknown", "Progressing", "applying generation 2"),
			cond("Reconciling", "True", "Progressing", "applying generation 2")), "Progressing", "Progressing: applying generation 2"},

		{"policy without status", "GuardrailPolicy", object("GuardrailPolicy", 0), "Progressing", "Waiting for Tollgate"},
		{"policy not yet observed", "GuardrailPolicy", object("GuardrailPolicy", 1,
			cond("Valid", "True", "Compiled", "3 rules compiled"),
			cond("Ready", "True", "Reconciled", "enforced")), "Progressing", "generation 2"},
		{"enforced policy", "GuardrailPolicy", object("GuardrailPolicy", 2,
			cond("Valid", "True", "Compiled", "3 rules compiled"),
			cond("Ready", "True", "Reconciled", "generation 2 is enforced")), "Healthy", "Reconciled: generation 2 is enforced"},
		{"policy selecting no passport", "GuardrailPolicy", object("GuardrailPolicy", 2,
			cond("Valid", "True", "Compiled", "3 rules compiled"),
			cond("Ready", "True", "NoPassportsSelected", "no passport matches the selector")), "Healthy", "NoPassportsSelected"},
		{"policy that does not compile", "GuardrailPolicy", object("GuardrailPolicy", 2,
			cond("Valid", "False", "CompileError", "spec.rules[0].when: syntax error; generation 1 is still enforced"),
			cond("Ready", "False", "CompileError", "spec.rules[0].when: syntax error"),
			cond("Stalled", "True", "CompileError", "spec.rules[0].when: syntax error")), "Degraded", "CompileError: spec.rules[0].when"},
		{"policies over the bundle budget", "GuardrailPolicy", object("GuardrailPolicy", 2,
			cond("Valid", "True", "Compiled", "3 rules compiled"),
			cond("Ready", "False", "BundleRejected", "the namespace's policies exceed the bundle budget"),
			cond("Stalled", "True", "BundleRejected", "the namespace's policies exceed the bundle budget")), "Degraded", "BundleRejected"},
		{"policy reconciling", "GuardrailPolicy", object("GuardrailPolicy", 2,
			cond("Valid", "True", "Compiled", "3 rules compiled"),
			cond("Ready", "Unknown", "Progressing", "waiting for the bundle"),
			cond("Reconciling", "True", "Progressing", "waiting for the bundle")), "Progressing", "Progressing: waiting for the bundle"},
		{"policy enforced but degraded by evaluation errors", "GuardrailPolicy", object("GuardrailPolicy", 2,
			cond("Valid", "True", "Compiled", "3 rules compiled"),
			cond("Ready", "True", "Reconciled", "generation 2 is enforced"),
			cond("Degraded", "True", "EvaluationErrors", "3 evaluation errors in team-r/broken#adds-one")), "Healthy", "Reconciled"},

		{"cluster policy without status", "ClusterGuardrailPolicy", object("ClusterGuardrailPolicy", 0), "Progressing", "Waiting for Tollgate to report the ClusterGuardrailPolicy's status"},
		{"cluster policy enforced", "ClusterGuardrailPolicy", object("ClusterGuardrailPolicy", 2,
			cond("Valid", "True", "Compiled", "2 rules compiled"),
			cond("Ready", "True", "Reconciled", "enforced in 12 namespaces")), "Healthy", "enforced in 12 namespaces"},
		{"cluster policy that does not compile", "ClusterGuardrailPolicy", object("ClusterGuardrailPolicy", 2,
			cond("Valid", "False", "CompileError", "spec.rules[0].when: syntax error"),
			cond("Ready", "True", "Reconciled", "generation 1 is still enforced")), "Degraded", "CompileError"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			script, err := healthScript(testenv.RepoRoot())
			if err != nil {
				t.Fatal(err)
			}
			h, err := runHealthScript(script, tt.obj)
			if err != nil {
				t.Fatal(err)
			}
			if h.Status != tt.status || !strings.Contains(h.Message, tt.messageHave) {
				t.Errorf("health = %s %q, want %s with %q", h.Status, h.Message, tt.status, tt.messageHave)
			}
		})
	}
}

// TestArgoCDConfigMapMatchesScripts holds config/argocd/argocd-cm.yaml to the scripts it ships.
func TestArgoCDConfigMapMatchesScripts(t *testing.T) {
	root := testenv.RepoRoot()
	data, err := os.ReadFile(filepath.Join(root, "config", "argocd", "argocd-cm.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var cm corev1.ConfigMap
	if err := yaml.UnmarshalStrict(data, &cm); err != nil {
		t.Fatalf("argocd-cm.yaml: %v", err)
	}
	script, err := healthScript(root)
	if err != nil {
		t.Fatal(err)
	}
	kinds := []string{"GuardrailPolicy", "ClusterGuardrailPolicy", "AgentPassport"}
	if len(cm.Data) != len(kinds) {
		t.Errorf("argocd-cm.yaml has %d keys, want %d", len(cm.Data), len(kinds))
	}
	for _, kind := range kinds {
		key := "resource.customizations.health.guardrails.tollgate.dev_" + kind
		if cm.Data[key] != script {
			t.Errorf("argocd-cm.yaml %s differs from config/argocd/health.lua", key)
		}
	}
}

// TestHealthScriptErrors: a script that does not return a table, or returns a status Argo CD does
// not know, is an error of the runner (so the table above cannot pass on a broken script).
func TestHealthScriptErrors(t *testing.T) {
	if _, err := runHealthScript(`return "Healthy"`, map[string]any{}); err == nil {
		t.Error("a string return was accepted")
	}
	if _, err := runHealthScript(`return {status = "Fine"}`, map[string]any{}); err == nil {
		t.Error("an unknown status was accepted")
	}
	if _, err := runHealthScript(`return {status = string.upper("x")}`, map[string]any{}); err == nil {
		t.Error("the string library is open, but Argo CD does not open it")
	}
	if _, err := runHealthScript(`while true do end`, map[string]any{}); err == nil {
		t.Error("an endless script was not stopped")
	}
}
