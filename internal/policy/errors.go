package policy

import (
	"fmt"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"
)

// The engine reports its problems as apimachinery field errors, as the API server does: a missing
// field is field.ErrorTypeRequired, anything else field.ErrorTypeInvalid with the value omitted
// (values may be secrets or megabytes of CEL) and a detail saying what is wrong. Paths are relative
// to the object validated (spec.rules[2].when); a CompileError says which object of a bundle each
// problem concerns.

// Kinds of the objects of a bundle, as ObjectError names them.
const (
	// KindPolicy is a GuardrailPolicy (Bundle.Policies).
	KindPolicy = "policy"
	// KindPassport is an AgentPassport (Bundle.Passports).
	KindPassport = "passport"
)

// ObjectError is every problem of one object of a bundle.
type ObjectError struct {
	// Kind is KindPolicy or KindPassport.
	Kind string
	// Name is the object's name ("" when it has none).
	Name string
	// Index is the object's position in Bundle.Policies or Bundle.Passports.
	Index int
	// Errors are the problems, with paths inside the object (name, spec.rules[2].when).
	Errors field.ErrorList
}

// Path is the object's path in the bundle: policies[name], or passports[3] for an unnamed object.
func (o ObjectError) Path() string {
	root := "policies"
	if o.Kind == KindPassport {
		root = "passports"
	}
	if o.Name == "" {
		return root + "[" + strconv.Itoa(o.Index) + "]"
	}
	return root + "[" + o.Name + "]"
}

// CompileError is the error Compile returns: every problem of the bundle at once.
type CompileError struct {
	// Bundle are the problems of the bundle document itself (paths from its root: version).
	Bundle field.ErrorList
	// Objects are the problems of each object that has any, policies first, in bundle order.
	Objects []ObjectError
}

// Errors returns every problem with its path from the bundle's root
// (policies[shell-safety].spec.rules[2].when), in bundle order.
func (e *CompileError) Errors() field.ErrorList {
	out := append(field.ErrorList{}, e.Bundle...)
	for _, o := range e.Objects {
		prefix := o.Path() + "."
		for _, fe := range o.Errors {
			c := *fe
			c.Field = prefix + fe.Field
			out = append(out, &c)
		}
	}
	return out
}

// Error lists the problems one per line, each as "path: message".
func (e *CompileError) Error() string {
	return "compile bundle: " + JoinErrors(e.Errors(), "\n")
}

// ErrorMessage says what is wrong at e.Field, in the engine's words: its detail, or "required" for
// a missing field.
func ErrorMessage(e *field.Error) string {
	switch {
	case e.Detail != "":
		return e.Detail
	case e.Type == field.ErrorTypeRequired:
		return "required"
	}
	return strings.ToLower(e.Type.String())
}

// FormatError returns "path: message" (see ErrorMessage).
func FormatError(e *field.Error) string {
	return e.Field + ": " + ErrorMessage(e)
}

// JoinErrors formats each problem with FormatError and joins them with sep.
func JoinErrors(list field.ErrorList, sep string) string {
	parts := make([]string, len(list))
	for i, e := range list {
		parts[i] = FormatError(e)
	}
	return strings.Join(parts, sep)
}

// errs accumulates field errors with string paths.
type errs struct{ list field.ErrorList }

// add records an invalid value at path, saying what is wrong.
func (e *errs) add(path, format string, args ...any) {
	e.list = append(e.list, invalidField(path, fmt.Sprintf(format, args...)))
}

// required records a missing field at path.
func (e *errs) required(path string) {
	e.list = append(e.list, &field.Error{Type: field.ErrorTypeRequired, Field: path, BadValue: ""})
}

// invalidField is an Invalid field error whose value is omitted.
func invalidField(path, detail string) *field.Error {
	return &field.Error{Type: field.ErrorTypeInvalid, Field: path, BadValue: field.OmitValueType{}, Detail: detail}
}
