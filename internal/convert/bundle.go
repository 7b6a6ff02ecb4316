package convert

import (
	"errors"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/util/validation/field"

	guardrailsv1alpha1 "github.com/tollgate-dev/tollgate/api/v1alpha1"
	"github.com/tollgate-dev/tollgate/internal/policy"
)

// Objects are the AgentPassports and GuardrailPolicies of one namespace, and the
// ClusterGuardrailPolicies that select it.
type Objects struct {
	// Namespace is the namespace of every object.
	Namespace string
	// Passports are in precedence order: an earlier passport keeps an agent id a later one claims too.
	Passports []*guardrailsv1alpha1.AgentPassport
	// Policies are in any order.
	Policies []*guardrailsv1alpha1.GuardrailPolicy
	// ClusterPolicies are the ClusterGuardrailPolicies whose namespaceSelector selects the namespace,
	// in any order. The bundle holds each as policy cluster/<name> (ClusterPolicy).
	ClusterPolicies []*guardrailsv1alpha1.ClusterGuardrailPolicy
}

// BundleBuilder builds the bundle of one namespace from its API objects. The controller (which
// stores the bundle for the decision endpoints) and the file loader (tollgate eval, test, serve)
// both build with it, so a namespace holds the same bundle wherever it is read:
//
//   - a passport whose spec is invalid, or whose effective agent id (spec.agentID, else its UID) an
//     earlier passport holds, is left out: calls presenting it are denied;
//   - a policy whose current generation is invalid is replaced by its last good version (LastGood),
//     or left out when it has none; so is a cluster policy (LastGoodCluster), which the bundle
//     holds as cluster/<name> beside the namespace's own policies;
//   - the bundle must compile as a whole, as a decision endpoint compiles it (the per-bundle
//     budgets). When it does not, every policy falls back to its last good version (policies without
//     one are left out) and the result says why (BuiltBundle.Rejected); passports are never held
//     back.
//
// The zero value validates with ValidatePolicy and ValidatePassport and knows no last good versions.
type BundleBuilder struct {
	// Policy converts and validates one policy; nil means ValidatePolicy.
	Policy func(*guardrailsv1alpha1.GuardrailPolicy) (policy.Policy, field.ErrorList)
	// Passport converts and validates one passport; nil means ValidatePassport.
	Passport func(*guardrailsv1alpha1.AgentPassport) (policy.Passport, field.ErrorList)
	// LastGood returns the version of p enforced before (the stored bundle's); nil means none.
	LastGood func(p *guardrailsv1alpha1.GuardrailPolicy) (policy.Policy, bool)
	// ClusterPolicy converts and validates one cluster policy; nil means ValidateClusterPolicy.
	ClusterPolicy func(*guardrailsv1alpha1.ClusterGuardrailPolicy) (policy.Policy, field.ErrorList)
	// LastGoodCluster returns the version of cluster policy p this namespace's bundle enforced
	// before; nil means none.
	LastGoodCluster func(p *guardrailsv1alpha1.ClusterGuardrailPolicy) (policy.Policy, bool)
	// Options are the compile options of the bundle's snapshot.
	Options []policy.Option
}

// PolicyOutcome is what became of one policy.
type PolicyOutcome struct {
	// Errors are the problems of the policy's current generation (empty when it is valid).
	Errors field.ErrorList
	// Enforced is the version the bundle holds (the current one, or the last good); nil when the
	// policy is left out.
	Enforced *policy.Policy
	// Selected is how many of the bundle's passports the enforced version selects.
	Selected int
}

// PassportOutcome is what became of one passport.
type PassportOutcome struct {
	// Errors are the problems of the passport's spec; the passport is left out when there are any.
	Errors field.ErrorList
	// AgentID is the passport's effective agent id (spec.agentID, else its UID).
	AgentID string
	// HeldBy names the earlier passport holding AgentID; the passport is left out when it is set.
	HeldBy string
}

// HeldByError is the problem of a passport left out for its agent id, at spec.agentID.
func (o PassportOutcome) HeldByError() *field.Error {
	return field.Invalid(field.NewPath("spec", "agentID"), field.OmitValueType{},
		policy.DuplicateAgentIDMessage(o.AgentID, o.HeldBy))
}

// BuiltBundle is a namespace's bundle and what became of each of its objects.
type BuiltBundle struct {
	// Bundle is the bundle to serve; it compiles (unless Err is set).
	Bundle policy.Bundle
	// Snapshot is Bundle compiled with the builder's options (nil when Err is set).
	Snapshot *policy.Snapshot
	// Rejected says why the bundle of every policy's current generation does not compile as a
	// whole (e.g. it is over a per-bundle budget); Bundle then holds the last good versions.
	Rejected *policy.CompileError
	// Err is set when not even the last good versions compile together; Bundle must not be served.
	Err error
	// Policies are the outcomes by policy name in the bundle (cluster/<name> for cluster policies).
	Policies map[string]PolicyOutcome
	// Passports are the outcomes by passport name.
	Passports map[string]PassportOutcome
}

// Build builds the bundle of objs.
func (bb BundleBuilder) Build(objs Objects) BuiltBundle {
	res := BuiltBundle{
		Policies:  make(map[string]PolicyOutcome, len(objs.Policies)+len(objs.ClusterPolicies)),
		Passports: make(map[string]PassportOutcome, len(objs.Passports)),
	}
	passports := bb.passports(objs.Passports, res.Passports)

	for _, p := range objs.Policies {
		validate := bb.Policy
		if validate == nil {
			validate = ValidatePolicy
		}
		conv, errs := validate(p)
		out := PolicyOutcome{Errors: errs}
		if len(errs) == 0 {
			out.Enforced = &conv
		} else {
			out.Enforced = bb.lastGood(p)
		}
		res.Policies[p.Name] = out
	}
	for _, p := range objs.ClusterPolicies {
		validate := bb.ClusterPolicy
		if validate == nil {
			validate = ValidateClusterPolicy
		}
		conv, errs := validate(p)
		out := PolicyOutcome{Errors: errs}
		if len(errs) == 0 {
			out.Enforced = &conv
		} else {
			out.Enforced = bb.lastGoodCluster(p)
		}
		res.Policies[ClusterPolicyName(p.Name)] = out
	}

	res.Bundle = bundleOf(objs, passports, res.Policies)
	snap, err := policy.Compile(res.Bundle, bb.Options...)
	if err != nil {
		if !errors.As(err, &res.Rejected) {
			res.Err = fmt.Errorf("compiling the bundle of namespace %s: %w", objs.Namespace, err)
			return res
		}
		for _, p := range objs.Policies {
			out := res.Policies[p.Name]
			out.Enforced = bb.lastGood(p)
			res.Policies[p.Name] = out
		}
		for _, p := range objs.ClusterPolicies {
			name := ClusterPolicyName(p.Name)
			out := res.Policies[name]
			out.Enforced = bb.lastGoodCluster(p)
			res.Policies[name] = out
		}
		res.Bundle = bundleOf(objs, passports, res.Policies)
		if snap, err = policy.Compile(res.Bundle, bb.Options...); err != nil {
			res.Err = fmt.Errorf("the bundle of namespace %s does not compile, even with the policies' last good versions: %w", objs.Namespace, err)
			return res
		}
	}
	res.Snapshot = snap
	for name, out := range res.Policies {
		if out.Enforced != nil {
			out.Selected = snap.SelectedPassports(out.Enforced.Name)
			res.Policies[name] = out
		}
	}
	return res
}

// passports validates the passports in precedence order, records their outcomes and returns those
// the bundle holds.
func (bb BundleBuilder) passports(in []*guardrailsv1alpha1.AgentPassport, outcomes map[string]PassportOutcome) []policy.Passport {
	validate := bb.Passport
	if validate == nil {
		validate = ValidatePassport
	}
	kept := make([]policy.Passport, 0, len(in))
	holders := make(map[string]string, len(in))
	for _, p := range in {
		conv, errs := validate(p)
		out := PassportOutcome{Errors: errs}
		if len(errs) == 0 {
			out.AgentID = conv.Spec.AgentID
			if out.AgentID == "" {
				out.AgentID = conv.UID
			}
			if holder, taken := holders[out.AgentID]; taken {
				out.HeldBy = holder
			} else {
				if out.AgentID != "" {
					holders[out.AgentID] = p.Name
				}
				conv.AutoSuspension = AutoSuspension(p)
				kept = append(kept, conv)
			}
		}
		outcomes[p.Name] = out
	}
	return kept
}

func (bb BundleBuilder) lastGood(p *guardrailsv1alpha1.GuardrailPolicy) *policy.Policy {
	if bb.LastGood == nil {
		return nil
	}
	if lg, ok := bb.LastGood(p); ok {
		return &lg
	}
	return nil
}

func (bb BundleBuilder) lastGoodCluster(p *guardrailsv1alpha1.ClusterGuardrailPolicy) *policy.Policy {
	if bb.LastGoodCluster == nil {
		return nil
	}
	if lg, ok := bb.LastGoodCluster(p); ok {
		return &lg
	}
	return nil
}

// bundleOf assembles the bundle of the kept passports and the enforced policies, in objs' order.
func bundleOf(objs Objects, passports []policy.Passport, policies map[string]PolicyOutcome) policy.Bundle {
	b := policy.Bundle{Version: policy.BundleVersion, Namespace: objs.Namespace,
		Passports: passports, Policies: make([]policy.Policy, 0, len(objs.Policies)+len(objs.ClusterPolicies))}
	for _, p := range objs.Policies {
		if e := policies[p.Name].Enforced; e != nil {
			b.Policies = append(b.Policies, *e)
		}
	}
	for _, p := range objs.ClusterPolicies {
		if e := policies[ClusterPolicyName(p.Name)].Enforced; e != nil {
			b.Policies = append(b.Policies, *e)
		}
	}
	return b
}

// AutoSuspension is the automatic suspension in force recorded in p's status, as the bundle carries
// it (nil when none). The decision endpoints stop applying it at its end on their own.
func AutoSuspension(p *guardrailsv1alpha1.AgentPassport) *policy.AutoSuspension {
	a := p.Status.AutoSuspension
	if a == nil {
		return nil
	}
	reason := fmt.Sprintf("%d denials within %s", a.Denials, autoSuspendWithin(p))
	if a.LastDenyCode != "" {
		reason += ", the last " + a.LastDenyCode
	}
	return &policy.AutoSuspension{Until: a.Until.UTC(), Reason: reason}
}

func autoSuspendWithin(p *guardrailsv1alpha1.AgentPassport) time.Duration {
	if s := p.Spec.AutoSuspend; s != nil && s.Within.Duration > 0 {
		return s.Within.Duration
	}
	return policy.DefaultAutoSuspendWithin
}
