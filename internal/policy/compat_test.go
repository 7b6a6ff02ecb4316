package policy

import (
	"encoding/json"
	"testing"

	"sigs.k8s.io/yaml"
)

// The specs as the API server stores them (metav1.Duration and metav1.Time encodings included)
// decode into the engine's structs.
const crdPolicyYAML = `
passportSelector:
  matchLabels: {team: dev}
policyID: system.command.execute.v1
enforcementAction: Enforce
failurePolicy: Closed
defaultAction: Allow
priority: 10
toolCapabilities:
- {tool: "kubectl_*", capability: k8s.cluster.admin}
rules:
- name: deny-rm
  tools: [bash]
  when: input.command.contains("rm -rf")
  action: Deny
  code: oap.blocked_pattern
  message: "no recursive deletes"
- name: timeout
  tools: [web_fetch]
  action: Modify
  modify:
    set: [{path: timeout, value: "10"}]
    remove: [headers.authorization]
requires:
- {name: main-thread, tools: ["write_*"], expression: "!request.is_subagent", code: oap.requirement_failed}
rateLimits:
- {name: fetches, tools: [web_fetch], limit: 10, window: 1m0s, per: Thread}
inputGuards:
  blockThreshold: MEDIUM
  patterns: [{name: exfil, pattern: "curl .*\\|", riskLevel: HIGH, riskType: exfiltration}]
responseGuards:
  safetyFinishReasons: [content_filter, sensitive]
externalEvaluator: {url: "https://opa.example/v1/data/tollgate", timeout: 500ms}
`

const crdPassportYAML = `
agentID: agent-7
owner: {id: alice@example.com, type: user}
assuranceLevel: L2
status: active
capabilities:
- id: system.command.execute
  params: {shell: bash}
- {id: web.fetch}
limits:
  system.command.execute:
    allowed_commands: [git, ls]
    blocked_patterns: [rm -rf, sudo]
regions: [eu-west-1]
expiresAt: "2027-01-01T00:00:00Z"
subjects:
  serviceAccounts: [coder]
`

func TestCRDJSONCompat(t *testing.T) {
	var pol PolicySpec
	data, err := yaml.YAMLToJSON([]byte(crdPolicyYAML))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, &pol); err != nil {
		t.Fatalf("policy spec: %v", err)
	}
	if fe := ValidatePolicy(pol); len(fe) != 0 {
		t.Fatalf("policy spec: %v", fe)
	}
	if pol.RateLimits[0].Window != "1m0s" || pol.ExternalEvaluator.TimeoutDuration().String() != "500ms" || pol.Rules[1].Modify.Remove[0] != "headers.authorization" {
		t.Errorf("policy spec decoded as %+v", pol)
	}
	var pp PassportSpec
	data, err = yaml.YAMLToJSON([]byte(crdPassportYAML))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, &pp); err != nil {
		t.Fatalf("passport spec: %v", err)
	}
	if fe := ValidatePassport(pp); len(fe) != 0 {
		t.Fatalf("passport spec: %v", fe)
	}
	if pp.ExpiresAt == nil || pp.ExpiresAt.Year() != 2027 || pp.Capabilities[0].Params["shell"] != "bash" {
		t.Errorf("passport spec decoded as %+v", pp)
	}
}
