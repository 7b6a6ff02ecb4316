package manifest

import (
	"fmt"
	"sort"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/validation/field"

	guardrailsv1alpha1 "github.com/tollgate-dev/tollgate/api/v1alpha1"
	"github.com/tollgate-dev/tollgate/internal/convert"
	"github.com/tollgate-dev/tollgate/internal/policy"
)

// Namespaces returns the namespaces of the loaded objects, sorted.
func (s *Set) Namespaces() []string {
	seen := map[string]bool{}
	var out []string
	for _, o := range s.Objects {
		if ns := o.Namespace(); ns != "" && !seen[ns] {
			seen[ns] = true
			out = append(out, ns)
		}
	}
	sort.Strings(out)
	return out
}

// Bundles builds one bundle per namespace, sorted by namespace, by the rules the controller follows
// (convert.BundleBuilder). Any object the builder would leave out, and any bundle that does not
// compile as a whole, is an error: an *InvalidError locating every problem in the manifests.
func (s *Set) Bundles() ([]policy.Bundle, error) {
	built, err := s.build()
	if err != nil {
		return nil, err
	}
	out := make([]policy.Bundle, len(built))
	for i := range built {
		out[i] = built[i].Bundle
	}
	return out, nil
}

// Build builds and compiles every namespace's bundle with opts, once, and returns the bundles with
// their snapshots, sorted by namespace: what a decision store serves (decider.Store.LoadSet).
// Problems are an *InvalidError as for Compile.
func (s *Set) Build(opts ...policy.Option) ([]convert.BuiltBundle, error) { return s.build(opts...) }

// build builds and compiles every namespace's bundle, sorted by namespace, with opts.
func (s *Set) build(opts ...policy.Option) ([]convert.BuiltBundle, error) {
	builder := convert.BundleBuilder{Options: opts}
	var out []convert.BuiltBundle
	var problems []Problem
	cluster, clusterProblems := s.clusterPolicies()
	problems = append(problems, clusterProblems...)
	for _, ns := range s.Namespaces() {
		objs := convert.Objects{Namespace: ns}
		byName := map[string]Object{}
		nsLabels := labels.Set{"kubernetes.io/metadata.name": ns}
		for k, v := range s.NamespaceLabels[ns] {
			nsLabels[k] = v
		}
		for _, c := range cluster {
			if c.selector.Matches(nsLabels) {
				objs.ClusterPolicies = append(objs.ClusterPolicies, c.obj.ClusterPolicy)
				byName[KindClusterGuardrailPolicy+"/"+convert.ClusterPolicyName(c.obj.Name())] = c.obj
			}
		}
		for _, o := range s.Objects {
			if o.Namespace() != ns || o.ClusterPolicy != nil {
				continue
			}
			byName[o.Kind()+"/"+o.Name()] = o
			if o.Policy != nil {
				objs.Policies = append(objs.Policies, o.Policy)
			} else {
				objs.Passports = append(objs.Passports, o.Passport)
			}
		}
		b := builder.Build(objs)
		if b.Err != nil {
			return nil, fmt.Errorf("namespace %s: %w", ns, b.Err)
		}
		place := func(kind, name string, fe *field.Error) {
			p := Problem{Namespace: ns, Kind: kind, Name: name, Path: fe.Field, Message: policy.ErrorMessage(fe)}
			if o, ok := byName[kind+"/"+name]; ok {
				p.Source, p.File, p.Document, p.Line = o.Source, o.Source.File, o.Source.Document, o.Source.Line
			}
			problems = append(problems, p)
		}
		for _, p := range objs.Policies {
			for _, fe := range b.Policies[p.Name].Errors {
				place(KindGuardrailPolicy, p.Name, fe)
			}
		}
		for _, p := range objs.Passports {
			po := b.Passports[p.Name]
			for _, fe := range po.Errors {
				place(KindAgentPassport, p.Name, fe)
			}
			if po.HeldBy != "" {
				place(KindAgentPassport, p.Name, po.HeldByError())
			}
		}
		if b.Rejected != nil {
			for _, fe := range b.Rejected.Bundle {
				problems = append(problems, Problem{Namespace: ns, Path: fe.Field, Message: policy.ErrorMessage(fe)})
			}
			for _, oe := range b.Rejected.Objects {
				kind := KindGuardrailPolicy
				switch {
				case oe.Kind == policy.KindPassport:
					kind = KindAgentPassport
				case strings.HasPrefix(oe.Name, guardrailsv1alpha1.ClusterPolicyPrefix):
					kind = KindClusterGuardrailPolicy
				}
				for _, fe := range oe.Errors {
					place(kind, oe.Name, fe)
				}
			}
		}
		out = append(out, b)
	}
	if len(problems) > 0 {
		return nil, &InvalidError{Problems: problems}
	}
	return out, nil
}

// clusterPolicy is a valid ClusterGuardrailPolicy of the set and its namespaceSelector.
type clusterPolicy struct {
	obj      Object
	selector labels.Selector
}

// clusterPolicies validates the set's cluster policies once (not once per namespace) and returns
// the valid ones, with a problem for every error of the others (namespace "").
func (s *Set) clusterPolicies() ([]clusterPolicy, []Problem) {
	var out []clusterPolicy
	var problems []Problem
	for _, o := range s.Objects {
		if o.ClusterPolicy == nil {
			continue
		}
		_, errs := convert.ValidateClusterPolicy(o.ClusterPolicy)
		for _, fe := range errs {
			problems = append(problems, Problem{Source: o.Source, File: o.Source.File, Document: o.Source.Document,
				Line: o.Source.Line, Kind: KindClusterGuardrailPolicy, Name: o.Name(), Path: fe.Field, Message: policy.ErrorMessage(fe)})
		}
		if len(errs) > 0 {
			continue
		}
		sel := labels.Everything()
		if ls := o.ClusterPolicy.Spec.NamespaceSelector; ls != nil {
			var err error
			if sel, err = metav1.LabelSelectorAsSelector(ls); err != nil {
				continue // reported by ValidateClusterPolicy
			}
		}
		out = append(out, clusterPolicy{obj: o, selector: sel})
	}
	return out, problems
}

// Problem is one compile problem, located in the manifests.
type Problem struct {
	// Source is the document of the object concerned (zero when the problem is not about one object).
	Source Source `json:"-"`
	// File, Document and Line locate the document.
	File     string `json:"file,omitempty"`
	Document int    `json:"document,omitempty"`
	Line     int    `json:"line,omitempty"`
	// Kind, Namespace and Name identify the object.
	Kind      string `json:"kind,omitempty"`
	Namespace string `json:"namespace"`
	Name      string `json:"name,omitempty"`
	// Path is the field path inside the object, e.g. spec.rules[2].when.
	Path string `json:"path"`
	// Message says what is wrong.
	Message string `json:"message"`
}

// String returns "file (document n, line l): Kind ns/name: path: message".
func (p Problem) String() string {
	var b strings.Builder
	if p.File != "" {
		b.WriteString(p.Source.String())
		b.WriteString(": ")
	}
	if p.Kind != "" {
		fmt.Fprintf(&b, "%s %s/%s: ", p.Kind, p.Namespace, p.Name)
	} else {
		fmt.Fprintf(&b, "namespace %s: ", p.Namespace)
	}
	if p.Path != "" {
		b.WriteString(p.Path)
		b.WriteString(": ")
	}
	b.WriteString(p.Message)
	return b.String()
}

// InvalidError lists the compile problems of the loaded objects.
type InvalidError struct {
	// Problems are in namespace, then bundle order.
	Problems []Problem
}

// Error lists the problems one per line.
func (e *InvalidError) Error() string {
	lines := make([]string, len(e.Problems))
	for i, p := range e.Problems {
		lines[i] = p.String()
	}
	return "invalid policies or passports:\n  " + strings.Join(lines, "\n  ")
}

// Compile builds (see Bundles) and compiles every namespace's bundle with opts. On failure the
// error is an *InvalidError whose problems name the file, document and field path of each mistake.
func (s *Set) Compile(opts ...policy.Option) (map[string]*policy.Snapshot, error) {
	built, err := s.build(opts...)
	if err != nil {
		return nil, err
	}
	snaps := make(map[string]*policy.Snapshot, len(built))
	for _, b := range built {
		snaps[b.Bundle.Namespace] = b.Snapshot
	}
	return snaps, nil
}
