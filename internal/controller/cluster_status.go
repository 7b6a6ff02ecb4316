package controller

import (
	"fmt"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	guardrailsv1alpha1 "github.com/tollgate-dev/tollgate/api/v1alpha1"
)

// clusterNamespaceFact is what one namespace's stored bundle holds of a cluster policy.
type clusterNamespaceFact struct {
	// name is the namespace.
	name string
	// selected is true when the policy's current namespaceSelector selects the namespace.
	selected bool
	// enforced is the policy as the namespace's bundle holds it; nil when it does not.
	enforced *enforcedPolicy
	// writeErr is the namespace's last bundle write error.
	writeErr string
	// rejected says why the namespace's bundle does not compile as a whole ("" when it does).
	rejected string
}

// clusterPolicyFacts is everything a cluster policy's status depends on besides the object itself.
type clusterPolicyFacts struct {
	// now is the reconcile time.
	now time.Time
	// errs are the compile errors of the current generation (namespaceSelector included).
	errs field.ErrorList
	// namespaces are the namespaces holding Tollgate objects that the policy selects or whose bundle
	// holds it, sorted by name.
	namespaces []clusterNamespaceFact
}

// clusterPolicyStatus computes a ClusterGuardrailPolicy's status from the object and facts. It is
// pure: the previous status only supplies condition transition times.
//
// Ready=True means every selected namespace's bundle enforces the current generation (and no other
// bundle still holds the policy); Ready=Unknown while bundles are being written; Ready=False when
// the generation does not compile, a bundle cannot be stored, or a namespace's policies do not
// compile together with it.
func clusterPolicyStatus(p *guardrailsv1alpha1.ClusterGuardrailPolicy, f clusterPolicyFacts) guardrailsv1alpha1.ClusterGuardrailPolicyStatus {
	gen := p.Generation
	st := guardrailsv1alpha1.ClusterGuardrailPolicyStatus{
		ObservedGeneration: gen,
		Conditions:         cloneConditions(p.Status.Conditions),
	}
	set := func(typ string, status metav1.ConditionStatus, reason, msg string) {
		setCondition(&st.Conditions, typ, status, reason, msg, gen, f.now)
	}

	var pending, writeFailed, rejected []string
	var firstWriteErr, firstRejected string
	for _, ns := range f.namespaces {
		if e := ns.enforced; e != nil {
			st.Namespaces++
			st.SelectedPassports += e.selected
			if st.EnforcedGeneration == 0 || e.spec.Generation < st.EnforcedGeneration {
				st.EnforcedGeneration = e.spec.Generation
				st.RuleCount = int32(len(e.spec.Spec.Rules))
			}
		}
		switch {
		case ns.writeErr != "":
			writeFailed = append(writeFailed, ns.name)
			if firstWriteErr == "" {
				firstWriteErr = ns.writeErr
			}
		case ns.rejected != "" && ns.selected:
			rejected = append(rejected, ns.name)
			if firstRejected == "" {
				firstRejected = ns.rejected
			}
		case ns.selected && (ns.enforced == nil || ns.enforced.spec.Generation != gen),
			!ns.selected && ns.enforced != nil:
			pending = append(pending, ns.name)
		}
	}
	still := "no generation of this policy is enforced"
	if st.EnforcedGeneration > 0 {
		still = fmt.Sprintf("generation %d is still enforced in %d namespace%s", st.EnforcedGeneration, st.Namespaces, plural(int(st.Namespaces)))
	}

	if !setValidity(&st.Conditions, set, gen, still, f.errs) {
		return st
	}

	switch {
	case len(writeFailed) > 0:
		m := truncate(fmt.Sprintf("the bundle of %s could not be stored (retrying; %s): %s", namespaceList(writeFailed), still, firstWriteErr))
		set(guardrailsv1alpha1.ConditionReady, metav1.ConditionFalse, guardrailsv1alpha1.ReasonBundleWriteFailed, m)
		set(guardrailsv1alpha1.ConditionReconciling, metav1.ConditionTrue, guardrailsv1alpha1.ReasonBundleWriteFailed, m)
	case len(rejected) > 0:
		m := truncate(fmt.Sprintf("the policies of %s do not compile together with this one, so their new generations are not stored "+
			"and the last good bundle keeps serving (%s): %s", namespaceList(rejected), still, firstRejected))
		set(guardrailsv1alpha1.ConditionReady, metav1.ConditionFalse, guardrailsv1alpha1.ReasonBundleRejected, m)
		set(guardrailsv1alpha1.ConditionStalled, metav1.ConditionTrue, guardrailsv1alpha1.ReasonBundleRejected, m)
		meta.RemoveStatusCondition(&st.Conditions, guardrailsv1alpha1.ConditionReconciling)
	case len(pending) > 0:
		m := fmt.Sprintf("generation %d is being written to the bundle of %s (%s)", gen, namespaceList(pending), still)
		set(guardrailsv1alpha1.ConditionReady, metav1.ConditionUnknown, guardrailsv1alpha1.ReasonProgressing, m)
		set(guardrailsv1alpha1.ConditionReconciling, metav1.ConditionTrue, guardrailsv1alpha1.ReasonProgressing, m)
	case st.Namespaces == 0:
		set(guardrailsv1alpha1.ConditionReady, metav1.ConditionTrue, guardrailsv1alpha1.ReasonNoNamespaces,
			fmt.Sprintf("generation %d is valid, but its namespaceSelector matches no namespace holding passports or policies", gen))
		meta.RemoveStatusCondition(&st.Conditions, guardrailsv1alpha1.ConditionReconciling)
	default:
		set(guardrailsv1alpha1.ConditionReady, metav1.ConditionTrue, guardrailsv1alpha1.ReasonReconciled,
			fmt.Sprintf("generation %d is enforced in %d namespace%s for %d passport%s", gen,
				st.Namespaces, plural(int(st.Namespaces)), st.SelectedPassports, plural(int(st.SelectedPassports))))
		meta.RemoveStatusCondition(&st.Conditions, guardrailsv1alpha1.ConditionReconciling)
	}
	return st
}

// namespaceList names up to three namespaces and counts the rest: "namespace a", "namespaces a, b
// and 3 more".
func namespaceList(names []string) string {
	const shown = 3
	noun := "namespace "
	if len(names) > 1 {
		noun = "namespaces "
	}
	if len(names) <= shown {
		return noun + strings.Join(names, ", ")
	}
	return fmt.Sprintf("%s%s and %d more", noun, strings.Join(names[:shown], ", "), len(names)-shown)
}
