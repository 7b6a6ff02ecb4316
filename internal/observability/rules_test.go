package observability

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/tollgate-dev/tollgate/internal/testenv"
)

// rulesPath is the alert rules' source; config/prometheus/rules.yaml holds a copy for kustomize.
const rulesPath = "charts/tollgate/files/prometheus-rules.yaml"

// rulesTestPath holds promtool's unit tests of the rules.
const rulesTestPath = "internal/observability/testdata/rules_test.yaml"

// ruleFile is the part of a Prometheus rule file these tests read.
type ruleFile struct {
	Groups []struct {
		Name  string `json:"name"`
		Rules []struct {
			Alert  string `json:"alert"`
			Record string `json:"record"`
			Expr   string `json:"expr"`
		} `json:"rules"`
	} `json:"groups"`
}

// promtool returns the path of promtool, built from the Prometheus module by hack/promtool.sh when
// bin/ lacks it. The test fails (never skips) when it cannot be built.
func promtool(t *testing.T) string {
	t.Helper()
	root := testenv.RepoRoot()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, filepath.Join(root, "hack", "promtool.sh"))
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("hack/promtool.sh: %v\n%s", err, stderr.String())
	}
	if stderr.Len() > 0 {
		t.Log(strings.TrimSpace(stderr.String()))
	}
	return strings.TrimSpace(string(out))
}

// TestAlertRules checks the alert rules with Prometheus's own tools: promtool check rules, then
// promtool test rules on testdata/rules_test.yaml (series in, expected alerts out, for every alert,
// each with cases that must fire and cases that must not). It also checks that every query uses
// metrics Tollgate exports and that every alert has a test.
func TestAlertRules(t *testing.T) {
	root := testenv.RepoRoot()
	data, err := os.ReadFile(filepath.Join(root, rulesPath))
	if err != nil {
		t.Fatal(err)
	}
	var rf ruleFile
	if err := yaml.Unmarshal(data, &rf); err != nil {
		t.Fatalf("%s: %v", rulesPath, err)
	}
	queries := map[string]string{}
	alerts := map[string]bool{}
	for _, g := range rf.Groups {
		for _, r := range g.Rules {
			name := r.Alert + r.Record
			queries[fmt.Sprintf("group %s rule %s", g.Name, name)] = r.Expr
			if r.Alert != "" {
				alerts[r.Alert] = true
			}
		}
	}
	checkQueries(t, exportedMetrics(t), queries)
	for _, want := range []string{"TollgateDeciderBundleStale", "TollgateDeciderBundleLoadFailing", "TollgatePassportDenySpike",
		"TollgateEvaluationErrors", "TollgateWebhookErrors", "TollgateDecisionLogDrops"} {
		if !alerts[want] {
			t.Errorf("no alert %s", want)
		}
	}

	// Every alert is tested, both firing and not firing.
	tests, err := os.ReadFile(filepath.Join(root, rulesTestPath))
	if err != nil {
		t.Fatal(err)
	}
	var tf struct {
		Tests []struct {
			AlertRuleTest []struct {
				Alertname string `json:"alertname"`
				ExpAlerts []any  `json:"exp_alerts"`
			} `json:"alert_rule_test"`
		} `json:"tests"`
	}
	if err := yaml.Unmarshal(tests, &tf); err != nil {
		t.Fatalf("%s: %v", rulesTestPath, err)
	}
	fires, quiet := map[string]bool{}, map[string]bool{}
	for _, tc := range tf.Tests {
		for _, a := range tc.AlertRuleTest {
			if len(a.ExpAlerts) > 0 {
				fires[a.Alertname] = true
			} else {
				quiet[a.Alertname] = true
			}
		}
	}
	for a := range alerts {
		if !fires[a] || !quiet[a] {
			t.Errorf("alert %s: tested firing %v, tested not firing %v; want both", a, fires[a], quiet[a])
		}
	}

	bin := promtool(t)
	run := func(args ...string) {
		t.Helper()
		cmd := exec.Command(bin, args...)
		cmd.Dir = root
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("promtool %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		t.Logf("promtool %s:\n%s", strings.Join(args, " "), strings.TrimSpace(string(out)))
	}
	run("check", "rules", rulesPath)
	run("test", "rules", rulesTestPath)
}

// TestPromtoolRuleTestsCanFail runs promtool on a rule test that expects an alert the series do not
// raise: the harness must report the failure, or TestAlertRules would prove nothing.
func TestPromtoolRuleTestsCanFail(t *testing.T) {
	bin := promtool(t)
	dir := t.TempDir()
	rules, err := filepath.Abs(filepath.Join(testenv.RepoRoot(), rulesPath))
	if err != nil {
		t.Fatal(err)
	}
	test := fmt.Sprintf(`rule_files: [%q]
evaluation_interval: 1m
tests:
- interval: 1m
  input_series:
  - series: tollgate_bundle_load_failing{instance="d-a:8080",namespace="team-a"}
    values: 0x15
  alert_rule_test:
  - eval_time: 10m
    alertname: TollgateDeciderBundleLoadFailing
    exp_alerts:
    - exp_labels: {severity: critical, instance: "d-a:8080", namespace: team-a}
`, rules)
	path := filepath.Join(dir, "wrong_test.yaml")
	if err := os.WriteFile(path, []byte(test), 0o600); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(bin, "test", "rules", path).CombinedOutput()
	if err == nil {
		t.Fatalf("promtool passed a test whose expected alert cannot fire:\n%s", out)
	}
	if !strings.Contains(string(out), "TollgateDeciderBundleLoadFailing") {
		t.Errorf("promtool's failure does not name the alert:\n%s", out)
	}
}
