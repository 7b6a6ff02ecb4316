package convert_test

// The API types (api/v1alpha1) and the engine's (internal/policy) are two descriptions of the same
// documents. These tests hold them together: every field of both specs survives the conversion
// (which decodes with DisallowUnknownFields, so a field added to the API but not to the engine
// fails), every regex and enum marker of the CRDs is enforced by the engine too, and the CRDs'
// defaults are the engine's.

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/yaml"

	v1 "github.com/tollgate-dev/tollgate/api/v1alpha1"
	"github.com/tollgate-dev/tollgate/internal/convert"
	"github.com/tollgate-dev/tollgate/internal/policy"
	webhookv1alpha1 "github.com/tollgate-dev/tollgate/internal/webhook/v1alpha1"
)

// fullPolicy sets every field of GuardrailPolicySpec (in at least one element of each list) to a
// valid, non-default value. TestFixturesSetEveryField fails when a new API field is not set here.
func fullPolicy() *v1.GuardrailPolicy {
	return &v1.GuardrailPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: "full", Namespace: "agents", Labels: map[string]string{"team": "core"}, Generation: 3, UID: "u-policy"},
		Spec: v1.GuardrailPolicySpec{
			PassportSelector: &metav1.LabelSelector{
				MatchLabels:      map[string]string{"team": "core"},
				MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "tier", Operator: metav1.LabelSelectorOpIn, Values: []string{"prod"}}},
			},
			PolicyID:          "shell.safety.v1",
			EnforcementAction: v1.EnforcementDryRun,
			FailurePolicy:     v1.FailOpen,
			DefaultAction:     v1.DefaultDeny,
			DefaultReason:     &v1.DefaultReason{Code: "oap.tool_not_allowed", Message: "not on the list"},
			Priority:          7,
			ToolCapabilities:  []v1.ToolCapability{{Tool: "deploy_*", Capability: "system.command.execute"}},
			Rules: []v1.Rule{
				{Name: "no-rm", Tools: []string{"bash"}, When: "input.command.contains('rm ')", Action: v1.ActionDeny,
					Code: "oap.blocked_pattern", Message: "no rm"},
				{Name: "quiet", Tools: []string{"bash"}, Action: v1.ActionModify, Message: "made quiet",
					Modify: &v1.InputPatch{Set: []v1.InputField{{Path: "options.quiet", Value: "true"}}, Remove: []string{"options.verbose"}}},
			},
			Requires: []v1.Requirement{{Name: "small", Tools: []string{"bash"}, Expression: "size(input) < 10",
				Code: "oap.requirement_failed", Message: "too many arguments"}},
			RateLimits: []v1.RateLimit{{Name: "slow", Tools: []string{"bash"}, Limit: 5,
				Window: metav1.Duration{Duration: time.Minute}, Per: "Thread"}},
			Budgets: []v1.Budget{{Name: "spend", Tools: []string{"pay_*"}, Field: "payment.amount", Max: 50_000,
				LimitKey: "max_amount_per_day", Period: &metav1.Duration{Duration: time.Hour}, Per: "Thread",
				IdempotencyField: "idempotency_key"}},
			InputGuards: &v1.InputGuards{
				BlockThreshold:         "MEDIUM",
				DisableDefaultPatterns: true,
				Patterns:               []v1.InputPattern{{Name: "ignore", Pattern: "ignore (all )?previous", RiskLevel: "HIGH", RiskType: "jailbreak"}},
				Hooks:                  []v1.GuardHook{v1.HookPreLLMCall, v1.HookPreToolCall},
			},
			ResponseGuards: &v1.ResponseGuards{
				Detectors:           []v1.SafetyDetector{{Provider: v1.ProviderAnthropic, Reasons: []string{"refusal"}}},
				SafetyFinishReasons: []string{"sensitive"},
				BlockThreshold:      "LOW",
				Patterns:            []v1.OutputPattern{{Name: "aws-key", Pattern: "AKIA[0-9A-Z]{16}", RiskLevel: "CRITICAL", RiskType: "secret_leak"}},
			},
			ExternalEvaluator: &v1.ExternalEvaluator{URL: "https://eval.example.com/decide", Timeout: &metav1.Duration{Duration: 2 * time.Second}},
		},
	}
}

// fullPassport sets every field of AgentPassportSpec to a valid, non-default value.
func fullPassport() *v1.AgentPassport {
	expires := metav1.NewTime(time.Date(2031, 1, 2, 3, 4, 5, 0, time.UTC))
	return &v1.AgentPassport{
		ObjectMeta: metav1.ObjectMeta{Name: "full", Namespace: "agents", Labels: map[string]string{"team": "core"}, Generation: 2, UID: "u-passport"},
		Spec: v1.AgentPassportSpec{
			AgentID:        "agent-1",
			Owner:          v1.PassportOwner{ID: "team@example.com", Type: "team"},
			AssuranceLevel: "L2",
			Status:         v1.PassportSuspended,
			Capabilities:   []v1.Capability{{ID: "system.command.execute", Params: &apiextensionsv1.JSON{Raw: []byte(`{"max":3}`)}}},
			Limits:         &apiextensionsv1.JSON{Raw: []byte(`{"system.command.execute":{"allowed_commands":["git","ls"],"blocked_patterns":["rm -rf"]}}`)},
			Regions:        []string{"eu-west-1"},
			ExpiresAt:      &expires,
			Subjects:       v1.PassportSubjects{ServiceAccounts: []string{"coder"}},
			UnmappedTools:  "Allow",
			AutoSuspend:    &v1.AutoSuspend{Denials: 20, Within: metav1.Duration{Duration: 5 * time.Minute}, For: metav1.Duration{Duration: 2 * time.Hour}},
		},
	}
}

// TestFixturesSetEveryField checks that fullPolicy and fullPassport set every field of the API's
// spec types, so the round trip below covers fields added later.
func TestFixturesSetEveryField(t *testing.T) {
	for _, spec := range []any{fullPolicy().Spec, fullPassport().Spec} {
		v := reflect.ValueOf(spec)
		set := map[string]bool{}
		all := map[string]bool{}
		fieldsOf(v.Type(), v.Type().Name(), all)
		setFields(v, v.Type().Name(), set)
		for f := range all {
			if !set[f] {
				t.Errorf("%s is not set in the test fixture: set it so the conversion tests cover it", f)
			}
		}
	}
}

// apiPkg is the package path of the API types; types of other packages are leaves.
var apiPkg = reflect.TypeFor[v1.GuardrailPolicySpec]().PkgPath()

// fieldsOf lists the field paths of struct type t (recursing into API structs, slices, pointers).
func fieldsOf(t reflect.Type, path string, out map[string]bool) {
	switch t.Kind() {
	case reflect.Pointer, reflect.Slice:
		fieldsOf(t.Elem(), path, out)
		return
	case reflect.Struct:
	default:
		return
	}
	if t.PkgPath() != apiPkg {
		return
	}
	for i := range t.NumField() {
		f := t.Field(i)
		p := path + "." + f.Name
		out[p] = true
		fieldsOf(f.Type, p, out)
	}
}

// setFields records the field paths of v that are not zero (in any element of a list).
func setFields(v reflect.Value, path string, out map[string]bool) {
	switch v.Kind() {
	case reflect.Pointer:
		if !v.IsNil() {
			setFields(v.Elem(), path, out)
		}
		return
	case reflect.Slice:
		for i := range v.Len() {
			setFields(v.Index(i), path, out)
		}
		return
	case reflect.Struct:
	default:
		return
	}
	if v.Type().PkgPath() != apiPkg {
		return
	}
	for i := range v.NumField() {
		f := v.Field(i)
		p := path + "." + v.Type().Field(i).Name
		if !f.IsZero() && (f.Kind() != reflect.Slice || f.Len() > 0) {
			out[p] = true
		}
		setFields(f, p, out)
	}
}

// TestRoundTripEveryField converts the fixtures (convert decodes with DisallowUnknownFields, so a
// field the engine lacks is an error) and checks that re-encoding the engine's spec gives the API's
// spec back, field for field, and that the object's identity is carried over.
func TestRoundTripEveryField(t *testing.T) {
	pol := fullPolicy()
	ep, err := convert.Policy(pol)
	if err != nil {
		t.Fatalf("converting the full policy: %v", err)
	}
	if want, got := canonicalJSON(t, pol.Spec), canonicalJSON(t, ep.Spec); want != got {
		t.Errorf("policy spec changed in conversion:\n api: %s\n got: %s", want, got)
	}
	if ep.Name != pol.Name || ep.Namespace != pol.Namespace || ep.Generation != pol.Generation || ep.Labels["team"] != "core" {
		t.Errorf("policy identity not carried over: %+v", ep)
	}

	pp := fullPassport()
	epp, err := convert.Passport(pp)
	if err != nil {
		t.Fatalf("converting the full passport: %v", err)
	}
	if want, got := canonicalJSON(t, pp.Spec), canonicalJSON(t, epp.Spec); want != got {
		t.Errorf("passport spec changed in conversion:\n api: %s\n got: %s", want, got)
	}
	if epp.Name != pp.Name || epp.Namespace != pp.Namespace || epp.UID != string(pp.UID) || epp.Generation != pp.Generation || epp.Labels["team"] != "core" {
		t.Errorf("passport identity not carried over: %+v", epp)
	}

	// The fixtures are valid: the marker checks below start from a document without problems.
	if _, errs := convert.ValidatePolicy(pol); len(errs) > 0 {
		t.Errorf("the full policy is invalid: %v", errs)
	}
	if _, errs := convert.ValidatePassport(pp); len(errs) > 0 {
		t.Errorf("the full passport is invalid: %v", errs)
	}
}

// TestSamplesConvertLosslessly checks that every sample's spec survives conversion into the engine
// structs: re-encoding the engine spec gives back the same JSON document.
func TestSamplesConvertLosslessly(t *testing.T) {
	files, err := filepath.Glob("../../config/samples/guardrails_*.yaml")
	if err != nil || len(files) == 0 {
		t.Fatalf("no samples found: %v", err)
	}
	for _, file := range files {
		t.Run(filepath.Base(file), func(t *testing.T) {
			data, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			var meta struct{ Kind string }
			if err := yaml.Unmarshal(data, &meta); err != nil {
				t.Fatal(err)
			}
			var apiSpec, engineSpec any
			switch meta.Kind {
			case "AgentPassport":
				var p v1.AgentPassport
				if err := yaml.UnmarshalStrict(data, &p); err != nil {
					t.Fatal(err)
				}
				out, err := convert.Passport(&p)
				if err != nil {
					t.Fatal(err)
				}
				apiSpec, engineSpec = p.Spec, out.Spec
			case "GuardrailPolicy":
				var p v1.GuardrailPolicy
				if err := yaml.UnmarshalStrict(data, &p); err != nil {
					t.Fatal(err)
				}
				out, err := convert.Policy(&p)
				if err != nil {
					t.Fatal(err)
				}
				apiSpec, engineSpec = p.Spec, out.Spec
			case "ClusterGuardrailPolicy":
				var p v1.ClusterGuardrailPolicy
				if err := yaml.UnmarshalStrict(data, &p); err != nil {
					t.Fatal(err)
				}
				out, err := convert.ClusterPolicy(&p)
				if err != nil {
					t.Fatal(err)
				}
				if out.Name != "cluster/"+p.Name || !out.ClusterScoped || out.Namespace != "" {
					t.Errorf("cluster policy %s converts to name %q, clusterScoped %v, namespace %q", p.Name, out.Name, out.ClusterScoped, out.Namespace)
				}
				apiSpec, engineSpec = p.Spec.GuardrailPolicySpec, out.Spec
			default:
				t.Fatalf("unexpected kind %q", meta.Kind)
			}
			want, got := canonicalJSON(t, apiSpec), canonicalJSON(t, engineSpec)
			if want != got {
				t.Errorf("spec changed in conversion:\n api: %s\n got: %s", want, got)
			}
		})
	}
}

func canonicalJSON(t *testing.T, v any) string {
	t.Helper()
	data, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var generic any
	if err := json.Unmarshal(data, &generic); err != nil {
		t.Fatal(err)
	}
	out, err := json.Marshal(generic)
	if err != nil {
		t.Fatal(err)
	}
	return string(out)
}

// schemaProp is the part of an OpenAPI v3 schema these tests read.
type schemaProp struct {
	Type       string                `json:"type"`
	Properties map[string]schemaProp `json:"properties"`
	Items      *schemaProp           `json:"items"`
	Pattern    string                `json:"pattern"`
	Enum       []any                 `json:"enum"`
	Default    any                   `json:"default"`
}

// specSchema reads the spec schema of the CRD in config/crd/bases/<file>.
func specSchema(t *testing.T, file string) schemaProp {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("..", "..", "config", "crd", "bases", file))
	if err != nil {
		t.Fatal(err)
	}
	var crd struct {
		Spec struct {
			Versions []struct {
				Schema struct {
					OpenAPIV3Schema schemaProp `json:"openAPIV3Schema"`
				} `json:"schema"`
			} `json:"versions"`
		} `json:"spec"`
	}
	if err := yaml.Unmarshal(data, &crd); err != nil {
		t.Fatal(err)
	}
	if len(crd.Spec.Versions) != 1 {
		t.Fatalf("%s: want one version, got %d", file, len(crd.Spec.Versions))
	}
	return crd.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["spec"]
}

// seg is one step of a path into a JSON document: an object key, or a list index when key is "".
type seg struct {
	key   string
	index int
}

// enginePath formats a document path as the engine's field paths do (spec.rules[0].code).
func enginePath(path []seg) string {
	var b strings.Builder
	b.WriteString("spec")
	for _, s := range path {
		if s.key == "" {
			b.WriteString("[" + strconv.Itoa(s.index) + "]")
		} else {
			b.WriteString("." + s.key)
		}
	}
	return b.String()
}

// markedLeaf is one value of a document whose schema carries a pattern or an enum.
type markedLeaf struct {
	path    []seg
	pattern string
	enum    []string
	// schemaPath names the schema node (list items as []), to count coverage.
	schemaPath string
}

// markedLeaves walks a document and its schema together and returns every value under a pattern
// or enum marker, and every marked schema node (whether or not the document reaches it).
func markedLeaves(s schemaProp, doc any, path []seg, schemaPath string, leaves *[]markedLeaf, nodes map[string]bool) {
	if s.Pattern != "" || len(s.Enum) > 0 {
		nodes[schemaPath] = true
		if _, ok := doc.(string); ok {
			l := markedLeaf{path: slices.Clone(path), pattern: s.Pattern, schemaPath: schemaPath}
			for _, e := range s.Enum {
				l.enum = append(l.enum, fmt.Sprint(e))
			}
			*leaves = append(*leaves, l)
		}
	}
	for name, prop := range s.Properties {
		var sub any
		if m, ok := doc.(map[string]any); ok {
			sub = m[name]
		}
		markedLeaves(prop, sub, append(path, seg{key: name}), schemaPath+"."+name, leaves, nodes)
	}
	if s.Items != nil {
		list, _ := doc.([]any)
		if len(list) == 0 {
			markedLeaves(*s.Items, nil, append(path, seg{index: 0}), schemaPath+"[]", leaves, nodes)
		}
		for i, item := range list {
			markedLeaves(*s.Items, item, append(path, seg{index: i}), schemaPath+"[]", leaves, nodes)
		}
	}
}

// withValue returns a deep copy of doc with the value at path replaced.
func withValue(t *testing.T, doc any, path []seg, value string) any {
	t.Helper()
	data, err := json.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	var cp any
	if err := json.Unmarshal(data, &cp); err != nil {
		t.Fatal(err)
	}
	switch parent, last := descend(cp, path[:len(path)-1]), path[len(path)-1]; c := parent.(type) {
	case map[string]any:
		c[last.key] = value
	case []any:
		c[last.index] = value
	default:
		t.Fatalf("path %s does not lead into the document", enginePath(path))
	}
	return cp
}

// descend returns the value at path in doc (nil when the path leads nowhere).
func descend(doc any, path []seg) any {
	cur := doc
	for _, s := range path {
		switch c := cur.(type) {
		case map[string]any:
			cur = c[s.key]
		case []any:
			cur = c[s.index]
		default:
			return nil
		}
	}
	return cur
}

// probes are candidate values for every marked field: each must be refused by the engine whenever
// the CRD's marker refuses it.
var probes = []string{
	"a", "ab", "A", "Ab", "1", "1a", "a1", "a.b", "a..b", ".a", "a.", "a-b", "-a", "a-", "a_b", "_a", "a_",
	"a b", "a:b", "a/b", "a#b", "é", "a\nb", "A.B", "oap.x", "oap.x_y", "oap.", "oap", "Oap.x", "x.y.z", "a.b-c",
	"oap.x.y", "x-y.z", "a.b_c", "0.a", "http://x", "https://x.example", "ftp://x", "http:/x", "HTTP://x",
	"L0", "l0", "L4FIN", "Allow", "allow", "Deny", "HIGH", "high", "SAFE", "Passport", "passport",
	"pre_llm_call", "PRE_LLM_CALL", "post_llm_call", "Anthropic", "anthropic", "active", "Active", "user", "Bogus",
}

// TestCRDMarkersAreEnforcedByTheEngine puts every probe (and every enum value) into each field the
// CRD constrains with a pattern or an enum, and checks that the engine's validation refuses what
// the marker refuses and accepts each enum value, so files checked by tollgate eval/test/serve and
// bundles are held to what the API server admits.
func TestCRDMarkersAreEnforcedByTheEngine(t *testing.T) {
	cases := []struct {
		crd      string
		doc      any
		validate func(raw []byte) (field.ErrorList, error)
	}{
		{"guardrails.tollgate.dev_guardrailpolicies.yaml", fullPolicy().Spec, func(raw []byte) (field.ErrorList, error) {
			var spec policy.PolicySpec
			if err := json.Unmarshal(raw, &spec); err != nil {
				return nil, err
			}
			return policy.ValidatePolicy(spec), nil
		}},
		{"guardrails.tollgate.dev_agentpassports.yaml", fullPassport().Spec, func(raw []byte) (field.ErrorList, error) {
			var spec policy.PassportSpec
			if err := json.Unmarshal(raw, &spec); err != nil {
				return nil, err
			}
			return policy.ValidatePassport(spec), nil
		}},
	}
	for _, tc := range cases {
		t.Run(tc.crd, func(t *testing.T) {
			var doc any
			data, err := json.Marshal(tc.doc)
			if err != nil {
				t.Fatal(err)
			}
			if err := json.Unmarshal(data, &doc); err != nil {
				t.Fatal(err)
			}
			var leaves []markedLeaf
			nodes := map[string]bool{}
			markedLeaves(specSchema(t, tc.crd), doc, nil, "spec", &leaves, nodes)
			covered := map[string]bool{}
			for _, l := range leaves {
				covered[l.schemaPath] = true
			}
			for n := range nodes {
				if !covered[n] {
					t.Errorf("%s carries a pattern or enum marker but the fixture sets no value there", n)
				}
			}
			engineRefuses := func(l markedLeaf, value string) bool {
				raw, err := json.Marshal(withValue(t, doc, l.path, value))
				if err != nil {
					t.Fatal(err)
				}
				errs, err := tc.validate(raw)
				if err != nil {
					return true // the engine's structs refuse the document
				}
				at := enginePath(l.path)
				for _, e := range errs {
					if e.Field == at {
						return true
					}
				}
				return false
			}
			for _, l := range leaves {
				var crdAccepts func(string) bool
				candidates := slices.Clone(probes)
				if l.pattern != "" {
					re, err := regexp.Compile(l.pattern)
					if err != nil {
						t.Fatalf("%s: pattern %q: %v", l.schemaPath, l.pattern, err)
					}
					crdAccepts = re.MatchString
				} else {
					crdAccepts = func(v string) bool { return slices.Contains(l.enum, v) }
					for _, v := range l.enum {
						candidates = append(candidates, v, strings.ToLower(v), strings.ToUpper(v), v+"x", " "+v)
					}
					for _, v := range l.enum {
						if inSiblings(doc, l.path, v) {
							continue // a list of distinct values (listType=set) already holds v
						}
						if engineRefuses(l, v) {
							t.Errorf("%s: the engine refuses %q, a value of the CRD's enum", enginePath(l.path), v)
						}
					}
				}
				for _, v := range candidates {
					if !crdAccepts(v) && !engineRefuses(l, v) {
						t.Errorf("%s: the CRD refuses %q (%s) but the engine accepts it", enginePath(l.path), v, markerOf(l))
					}
				}
			}
		})
	}
}

// inSiblings reports whether v is another element of the list holding the value at path.
func inSiblings(doc any, path []seg, v string) bool {
	last := path[len(path)-1]
	list, ok := descend(doc, path[:len(path)-1]).([]any)
	if last.key != "" || !ok {
		return false
	}
	for i, e := range list {
		if i != last.index && e == v {
			return true
		}
	}
	return false
}

func markerOf(l markedLeaf) string {
	if l.pattern != "" {
		return "pattern " + l.pattern
	}
	return "enum " + strings.Join(l.enum, ", ")
}

// defaultsOf returns the default of every schema node that has one, by schema path.
func defaultsOf(s schemaProp, path string, out map[string]any) {
	if s.Default != nil {
		out[path] = s.Default
	}
	for name, prop := range s.Properties {
		defaultsOf(prop, path+"."+name, out)
	}
	if s.Items != nil {
		defaultsOf(*s.Items, path+"[]", out)
	}
}

// TestDefaultsHaveOneSource checks that the CRDs' default markers are exactly the engine's
// policy.Default* values, and that the admission webhook's defaulters write every one of them.
func TestDefaultsHaveOneSource(t *testing.T) {
	want := map[string]map[string]any{
		"guardrails.tollgate.dev_guardrailpolicies.yaml": {
			"spec.enforcementAction":                  policy.DefaultEnforcementAction,
			"spec.failurePolicy":                      policy.DefaultFailurePolicy,
			"spec.defaultAction":                      policy.DefaultDefaultAction,
			"spec.priority":                           float64(policy.DefaultPriority),
			"spec.rateLimits[].per":                   policy.DefaultRateLimitPer,
			"spec.budgets[].per":                      policy.DefaultBudgetPer,
			"spec.budgets[].period":                   policy.DefaultBudgetPeriod.String(),
			"spec.inputGuards.blockThreshold":         policy.DefaultBlockThreshold,
			"spec.inputGuards.patterns[].riskType":    policy.DefaultInputRiskType,
			"spec.responseGuards.blockThreshold":      policy.DefaultBlockThreshold,
			"spec.responseGuards.patterns[].riskType": policy.DefaultOutputRiskType,
			"spec.externalEvaluator.timeout":          policy.DefaultEvaluatorTimeout.String(),
		},
		"guardrails.tollgate.dev_agentpassports.yaml": {
			"spec.status":             policy.DefaultPassportStatus,
			"spec.assuranceLevel":     policy.DefaultAssuranceLevel,
			"spec.owner.type":         policy.DefaultOwnerType,
			"spec.autoSuspend.within": policy.DefaultAutoSuspendWithin.String(),
			"spec.autoSuspend.for":    policy.DefaultAutoSuspendFor.String(),
		},
	}
	// Documents with every defaultable field empty, as the defaulters leave them.
	bare := &v1.GuardrailPolicy{Spec: v1.GuardrailPolicySpec{
		RateLimits:        []v1.RateLimit{{Name: "r"}},
		Budgets:           []v1.Budget{{Name: "b"}},
		InputGuards:       &v1.InputGuards{Patterns: []v1.InputPattern{{Name: "p"}}},
		ResponseGuards:    &v1.ResponseGuards{Patterns: []v1.OutputPattern{{Name: "p"}}},
		ExternalEvaluator: &v1.ExternalEvaluator{URL: "https://x"},
	}}
	if err := (webhookv1alpha1.GuardrailPolicyDefaulter{}).Default(t.Context(), bare); err != nil {
		t.Fatal(err)
	}
	bareP := &v1.AgentPassport{Spec: v1.AgentPassportSpec{AutoSuspend: &v1.AutoSuspend{Denials: 1}}}
	if err := (webhookv1alpha1.AgentPassportDefaulter{}).Default(t.Context(), bareP); err != nil {
		t.Fatal(err)
	}
	defaulted := map[string]any{
		"guardrails.tollgate.dev_guardrailpolicies.yaml": bare.Spec,
		"guardrails.tollgate.dev_agentpassports.yaml":    bareP.Spec,
	}
	for crd, table := range want {
		got := map[string]any{}
		defaultsOf(specSchema(t, crd), "spec", got)
		for path, v := range got {
			w, ok := table[path]
			switch {
			case !ok:
				t.Errorf("%s: %s has a default marker (%v) the engine does not define", crd, path, v)
			case fmt.Sprint(w) != fmt.Sprint(v):
				if d, err := time.ParseDuration(fmt.Sprint(v)); err != nil || d.String() != fmt.Sprint(w) {
					t.Errorf("%s: %s defaults to %v in the CRD, to %v in the engine", crd, path, v, w)
				}
			}
		}
		for path := range table {
			if _, ok := got[path]; !ok {
				t.Errorf("%s: %s has no default marker; the engine defaults it", crd, path)
			}
		}
		var doc any
		data, _ := json.Marshal(defaulted[crd])
		if err := json.Unmarshal(data, &doc); err != nil {
			t.Fatal(err)
		}
		for path, w := range table {
			v, found := lookup(doc, strings.TrimPrefix(path, "spec."))
			if !found && fmt.Sprint(w) == "0" {
				continue // an omitted zero
			}
			if d, err := time.ParseDuration(fmt.Sprint(v)); err == nil && found {
				v = d.String()
			}
			if fmt.Sprint(v) != fmt.Sprint(w) {
				t.Errorf("%s: the webhook's defaulter leaves %s at %v, want %v", crd, path, v, w)
			}
		}
	}
}

// lookup returns the value at a schema path (lists as []: their first element) in doc.
func lookup(doc any, path string) (any, bool) {
	cur := doc
	for _, part := range strings.Split(path, ".") {
		list := strings.HasSuffix(part, "[]")
		m, ok := cur.(map[string]any)
		if !ok {
			return nil, false
		}
		if cur, ok = m[strings.TrimSuffix(part, "[]")]; !ok {
			return nil, false
		}
		if list {
			l, ok := cur.([]any)
			if !ok || len(l) == 0 {
				return nil, false
			}
			cur = l[0]
		}
	}
	return cur, true
}
