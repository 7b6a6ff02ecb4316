package manifest

import (
	"errors"
	"fmt"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/tollgate-dev/tollgate/internal/convert"
	"github.com/tollgate-dev/tollgate/internal/policy"
)

// Namespaces returns the namespaces of the loaded objects, sorted.
func (s *Set) Namespaces() []string {
	seen := map[string]bool{}
	var out []string
	for _, o := range s.Objects {
		if ns := o.Namespace(); !seen[ns] {
			seen[ns] = true
			out = append(out, ns)
		}
	}
	sort.Strings(out)
	return out
}

// Bundles groups the objects into one bundle per namespace, sorted by namespace; objects keep their
// file order inside a bundle.
func (s *Set) Bundles() ([]policy.Bundle, error) {
	byNS := map[string]*policy.Bundle{}
	var errs []error
	for _, o := range s.Objects {
		ns := o.Namespace()
		b := byNS[ns]
		if b == nil {
			b = &policy.Bundle{Version: policy.BundleVersion, Namespace: ns, Passports: []policy.Passport{}, Policies: []policy.Policy{}}
			byNS[ns] = b
		}
		switch {
		case o.Policy != nil:
			p, err := convert.Policy(o.Policy)
			if err != nil {
				errs = append(errs, &Error{Source: o.Source, Err: err})
				continue
			}
			b.Policies = append(b.Policies, p)
		case o.Passport != nil:
			p, err := convert.Passport(o.Passport)
			if err != nil {
				errs = append(errs, &Error{Source: o.Source, Err: err})
				continue
			}
			b.Passports = append(b.Passports, p)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	out := make([]policy.Bundle, 0, len(byNS))
	for _, ns := range s.Namespaces() {
		out = append(out, *byNS[ns])
	}
	return out, nil
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

// Compile compiles every namespace's bundle. On failure the error is an *InvalidError whose
// problems name the file, document and field path of each mistake.
func (s *Set) Compile(opts ...policy.Option) (map[string]*policy.Snapshot, error) {
	bundles, err := s.Bundles()
	if err != nil {
		return nil, err
	}
	snaps := make(map[string]*policy.Snapshot, len(bundles))
	var problems []Problem
	for _, b := range bundles {
		snap, err := policy.Compile(b, opts...)
		if err != nil {
			var ce *policy.CompileError
			if !errors.As(err, &ce) {
				return nil, fmt.Errorf("namespace %s: %w", b.Namespace, err)
			}
			for _, fe := range ce.Bundle {
				problems = append(problems, Problem{Namespace: b.Namespace, Path: fe.Field, Message: policy.ErrorMessage(fe)})
			}
			for _, oe := range ce.Objects {
				for _, fe := range oe.Errors {
					problems = append(problems, s.locate(b.Namespace, oe, fe))
				}
			}
			continue
		}
		snaps[b.Namespace] = snap
	}
	if len(problems) > 0 {
		return nil, &InvalidError{Problems: problems}
	}
	return snaps, nil
}

// locate finds the manifest of the bundle object oe names (the index-th policy or passport of
// namespace ns, as Bundles ordered them) and places the problem fe there.
func (s *Set) locate(ns string, oe policy.ObjectError, fe *field.Error) Problem {
	kind := KindGuardrailPolicy
	if oe.Kind == policy.KindPassport {
		kind = KindAgentPassport
	}
	p := Problem{Namespace: ns, Kind: kind, Name: oe.Name, Path: fe.Field, Message: policy.ErrorMessage(fe)}
	i := 0
	for _, o := range s.Objects {
		if o.Namespace() != ns || o.Kind() != kind {
			continue
		}
		if i == oe.Index {
			p.Source, p.File, p.Document, p.Line = o.Source, o.Source.File, o.Source.Document, o.Source.Line
			p.Name = o.Name()
			return p
		}
		i++
	}
	return p
}
