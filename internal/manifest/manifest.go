// Package manifest loads GuardrailPolicy and AgentPassport manifests from files and directories
// (YAML or JSON, several documents per file, `kind: List` included) with strict decoding, and groups
// them into one policy.Bundle per namespace.
//
// Every error names the file and the document it comes from, so that a typo in a GitOps repository
// points at the line to fix.
package manifest

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	sigsjson "sigs.k8s.io/json"
	"sigs.k8s.io/yaml"

	guardrailsv1alpha1 "github.com/tollgate-dev/tollgate/api/v1alpha1"
	"github.com/tollgate-dev/tollgate/internal/convert"
)

// DefaultNamespace is the namespace of objects whose metadata.namespace is empty.
const DefaultNamespace = "default"

// Kinds this package loads.
const (
	KindGuardrailPolicy        = "GuardrailPolicy"
	KindAgentPassport          = "AgentPassport"
	KindClusterGuardrailPolicy = "ClusterGuardrailPolicy"
)

// Source says where an object was read from.
type Source struct {
	// File is the path of the file.
	File string
	// Document is the 1-based index of the document in the file.
	Document int
	// Line is the 1-based line where the document starts (0 for JSON).
	Line int
	// Item is the index in a List's items, or -1.
	Item int
}

// String returns e.g. "policies.yaml (document 2, line 14)".
func (s Source) String() string {
	var b strings.Builder
	b.WriteString(s.File)
	b.WriteString(" (document ")
	fmt.Fprint(&b, s.Document)
	if s.Line > 0 {
		fmt.Fprintf(&b, ", line %d", s.Line)
	}
	if s.Item >= 0 {
		fmt.Fprintf(&b, ", items[%d]", s.Item)
	}
	b.WriteString(")")
	return b.String()
}

// Object is one GuardrailPolicy, AgentPassport or ClusterGuardrailPolicy read from a manifest.
// Exactly one of Policy, Passport and ClusterPolicy is set.
type Object struct {
	// Source is where the object was read from.
	Source Source
	// Policy is the decoded GuardrailPolicy.
	Policy *guardrailsv1alpha1.GuardrailPolicy
	// Passport is the decoded AgentPassport.
	Passport *guardrailsv1alpha1.AgentPassport
	// ClusterPolicy is the decoded ClusterGuardrailPolicy.
	ClusterPolicy *guardrailsv1alpha1.ClusterGuardrailPolicy
}

// Kind returns GuardrailPolicy, AgentPassport or ClusterGuardrailPolicy.
func (o Object) Kind() string {
	switch {
	case o.Policy != nil:
		return KindGuardrailPolicy
	case o.ClusterPolicy != nil:
		return KindClusterGuardrailPolicy
	}
	return KindAgentPassport
}

// Namespace returns the object's namespace (DefaultNamespace applied on load; "" for a
// ClusterGuardrailPolicy).
func (o Object) Namespace() string {
	switch {
	case o.Policy != nil:
		return o.Policy.Namespace
	case o.ClusterPolicy != nil:
		return ""
	}
	return o.Passport.Namespace
}

// Name returns the object's name.
func (o Object) Name() string {
	switch {
	case o.Policy != nil:
		return o.Policy.Name
	case o.ClusterPolicy != nil:
		return o.ClusterPolicy.Name
	}
	return o.Passport.Name
}

// Skipped is a document that was read but is not a Tollgate object (e.g. a Deployment beside the
// policies in a GitOps directory).
type Skipped struct {
	// Source is where the document was read from.
	Source Source
	// APIVersion and Kind are the document's type.
	APIVersion, Kind string
}

// Set is everything loaded from a list of paths.
type Set struct {
	// Objects are the policies and passports, in file order.
	Objects []Object
	// Skipped are documents of other kinds.
	Skipped []Skipped
	// NamespaceLabels are the labels of the Namespace objects among the skipped documents, by name:
	// the labels a ClusterGuardrailPolicy's namespaceSelector is matched against (besides
	// kubernetes.io/metadata.name, which every namespace carries).
	NamespaceLabels map[string]map[string]string
	// Files are the files read.
	Files []string
}

// Error is a problem with one document.
type Error struct {
	// Source is the document.
	Source Source
	// Err is the problem.
	Err error
}

// Error returns "source: problem".
func (e *Error) Error() string { return e.Source.String() + ": " + e.Err.Error() }

// Unwrap returns the problem.
func (e *Error) Unwrap() error { return e.Err }

// Load reads the files and directories (recursively: *.yaml, *.yml and *.json, sorted, skipping
// kustomization files and hidden entries) and decodes every document. It returns every problem at
// once, joined.
func Load(paths ...string) (*Set, error) {
	if len(paths) == 0 {
		return nil, errors.New("no manifest paths given")
	}
	files, err := ExpandPaths(paths...)
	if err != nil {
		return nil, err
	}
	set := &Set{}
	var errs []error
	for _, file := range files {
		data, err := os.ReadFile(file)
		if err != nil {
			errs = append(errs, fmt.Errorf("reading manifest: %w", err))
			continue
		}
		set.Files = append(set.Files, file)
		if err := set.Add(file, data); err != nil {
			errs = append(errs, err)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	if err := set.CheckDuplicates(); err != nil {
		return nil, err
	}
	return set, nil
}

// Parse decodes the documents of one file's content; name is used in errors.
func Parse(name string, data []byte) (*Set, error) {
	set := &Set{Files: []string{name}}
	if err := set.Add(name, data); err != nil {
		return nil, err
	}
	if err := set.CheckDuplicates(); err != nil {
		return nil, err
	}
	return set, nil
}

// ExpandPaths returns the manifest files named by paths: files as given (any extension), and the
// *.yaml, *.yml and *.json files under directories, recursively and sorted. Hidden entries and
// kustomization files inside directories are skipped.
func ExpandPaths(paths ...string) ([]string, error) {
	var files []string
	seen := map[string]bool{}
	add := func(f string) {
		if !seen[f] {
			seen[f] = true
			files = append(files, f)
		}
	}
	for _, p := range paths {
		info, err := os.Stat(p)
		if err != nil {
			return nil, fmt.Errorf("manifest path: %w", err)
		}
		if !info.IsDir() {
			add(p)
			continue
		}
		var found []string
		err = filepath.WalkDir(p, func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			name := d.Name()
			if path != p && strings.HasPrefix(name, ".") {
				if d.IsDir() {
					return filepath.SkipDir
				}
				return nil
			}
			if d.IsDir() || !IsManifestFile(name) {
				return nil
			}
			found = append(found, path)
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("walking %s: %w", p, err)
		}
		sort.Strings(found)
		for _, f := range found {
			add(f)
		}
	}
	return files, nil
}

// IsManifestFile reports whether a file found in a directory is read: YAML or JSON, and not a
// kustomization file.
func IsManifestFile(name string) bool {
	switch strings.ToLower(name) {
	case "kustomization.yaml", "kustomization.yml", "kustomization":
		return false
	}
	switch strings.ToLower(filepath.Ext(name)) {
	case ".yaml", ".yml", ".json":
		return true
	}
	return false
}

// Document is one raw document of a file, converted to JSON.
type Document struct {
	// Source is where the document starts.
	Source Source
	// JSON is the document as JSON (nil for an empty document).
	JSON []byte
}

// Documents splits data into documents: a YAML stream separated by `---` lines, or a stream of JSON
// values when the content starts with `{` or `[` (a top-level JSON array contributes its elements).
// Empty documents are dropped. Every document is converted to JSON; duplicate keys are errors.
func Documents(name string, data []byte) ([]Document, error) {
	trimmed := bytes.TrimLeft(data, " \t\r\n\ufeff")
	if len(trimmed) > 0 && (trimmed[0] == '{' || trimmed[0] == '[') {
		return jsonDocuments(name, trimmed)
	}
	var docs []Document
	var errs []error
	for i, chunk := range splitYAML(data) {
		if isBlankYAML(chunk.data) {
			continue
		}
		src := Source{File: name, Document: i + 1, Line: chunk.line + leadingBlankLines(chunk.data), Item: -1}
		j, err := yaml.YAMLToJSONStrict(chunk.data)
		if err != nil {
			errs = append(errs, &Error{Source: src, Err: fmt.Errorf("invalid YAML: %w", err)})
			continue
		}
		if bytes.Equal(bytes.TrimSpace(j), []byte("null")) {
			continue
		}
		docs = append(docs, Document{Source: src, JSON: j})
	}
	return docs, errors.Join(errs...)
}

func jsonDocuments(name string, data []byte) ([]Document, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	var docs []Document
	for n := 1; ; n++ {
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			if errors.Is(err, io.EOF) {
				return docs, nil
			}
			return docs, &Error{Source: Source{File: name, Document: n, Item: -1}, Err: fmt.Errorf("invalid JSON: %w", err)}
		}
		src := Source{File: name, Document: n, Item: -1}
		if len(raw) > 0 && raw[0] == '[' {
			var elems []json.RawMessage
			if err := json.Unmarshal(raw, &elems); err != nil {
				return docs, &Error{Source: src, Err: fmt.Errorf("invalid JSON: %w", err)}
			}
			for i, e := range elems {
				s := src
				s.Item = i
				docs = append(docs, Document{Source: s, JSON: e})
			}
			continue
		}
		if string(raw) == "null" {
			continue
		}
		docs = append(docs, Document{Source: src, JSON: raw})
	}
}

// yamlChunk is one document of a YAML stream and its first line.
type yamlChunk struct {
	data []byte
	line int
}

// splitYAML splits a YAML stream on document-start (`---`) and document-end (`...`) marker lines.
func splitYAML(data []byte) []yamlChunk {
	var chunks []yamlChunk
	start, startLine := 0, 1
	line := 1
	for pos := 0; pos <= len(data); {
		end := bytes.IndexByte(data[pos:], '\n')
		var l []byte
		next := len(data) + 1
		if end >= 0 {
			l = data[pos : pos+end]
			next = pos + end + 1
		} else {
			l = data[pos:]
		}
		l = bytes.TrimRight(l, "\r")
		if isMarker(l, "---") || isMarker(l, "...") {
			chunks = append(chunks, yamlChunk{data: data[start:pos], line: startLine})
			start, startLine = min(next, len(data)), line+1
			if isMarker(l, "---") && len(bytes.TrimSpace(l[3:])) > 0 && !bytes.HasPrefix(bytes.TrimSpace(l[3:]), []byte("#")) {
				// "--- value": content on the marker line belongs to the new document.
				start, startLine = pos+3, line
			}
		}
		pos = next
		line++
	}
	if start < len(data) {
		chunks = append(chunks, yamlChunk{data: data[start:], line: startLine})
	}
	return chunks
}

func isMarker(l []byte, marker string) bool {
	if !bytes.HasPrefix(l, []byte(marker)) {
		return false
	}
	rest := l[len(marker):]
	return len(rest) == 0 || rest[0] == ' ' || rest[0] == '\t'
}

// leadingBlankLines counts the blank and comment lines before a document's content.
func leadingBlankLines(data []byte) int {
	n := 0
	for _, l := range bytes.Split(data, []byte("\n")) {
		l = bytes.TrimSpace(l)
		if len(l) > 0 && l[0] != '#' {
			break
		}
		n++
	}
	return n
}

// isBlankYAML reports whether a document holds only whitespace, comments and directives.
func isBlankYAML(data []byte) bool {
	for _, l := range bytes.Split(data, []byte("\n")) {
		l = bytes.TrimSpace(l)
		if len(l) == 0 || l[0] == '#' || l[0] == '%' {
			continue
		}
		return false
	}
	return true
}

// typeMeta is the part of every document read before choosing a type.
type typeMeta struct {
	APIVersion string            `json:"apiVersion"`
	Kind       string            `json:"kind"`
	Items      []json.RawMessage `json:"items"`
}

// Add decodes the documents of one file into the set.
func (s *Set) Add(name string, data []byte) error {
	docs, err := Documents(name, data)
	errs := []error{err}
	for _, d := range docs {
		errs = append(errs, s.addDocument(d.Source, d.JSON, true))
	}
	return errors.Join(errs...)
}

func (s *Set) addDocument(src Source, data []byte, allowList bool) error {
	var tm typeMeta
	if err := json.Unmarshal(data, &tm); err != nil {
		return &Error{Source: src, Err: fmt.Errorf("not an object: %w", err)}
	}
	group, version := splitAPIVersion(tm.APIVersion)
	switch {
	case tm.APIVersion == "" && tm.Kind == "":
		return &Error{Source: src, Err: errors.New("not a Kubernetes object: apiVersion and kind are missing")}
	case tm.Kind == "":
		return &Error{Source: src, Err: errors.New("kind is missing")}
	case tm.APIVersion == "":
		return &Error{Source: src, Err: fmt.Errorf("apiVersion is missing (kind %s)", tm.Kind)}
	case tm.Kind == "List" || (strings.HasSuffix(tm.Kind, "List") && group == guardrailsv1alpha1.GroupVersion.Group):
		if !allowList {
			return &Error{Source: src, Err: errors.New("a List inside a List is not supported")}
		}
		var errs []error
		for i, item := range tm.Items {
			is := src
			is.Item = i
			errs = append(errs, s.addDocument(is, item, false))
		}
		return errors.Join(errs...)
	case group != guardrailsv1alpha1.GroupVersion.Group:
		if tm.APIVersion == "v1" && tm.Kind == "Namespace" {
			s.addNamespace(data)
		}
		s.Skipped = append(s.Skipped, Skipped{Source: src, APIVersion: tm.APIVersion, Kind: tm.Kind})
		return nil
	case version != guardrailsv1alpha1.GroupVersion.Version:
		return &Error{Source: src, Err: fmt.Errorf("unsupported apiVersion %q: want %s", tm.APIVersion, guardrailsv1alpha1.GroupVersion)}
	}
	obj := Object{Source: src}
	var target any
	switch tm.Kind {
	case KindGuardrailPolicy:
		obj.Policy = &guardrailsv1alpha1.GuardrailPolicy{}
		target = obj.Policy
	case KindAgentPassport:
		obj.Passport = &guardrailsv1alpha1.AgentPassport{}
		target = obj.Passport
	case KindClusterGuardrailPolicy:
		obj.ClusterPolicy = &guardrailsv1alpha1.ClusterGuardrailPolicy{}
		target = obj.ClusterPolicy
	default:
		return &Error{Source: src, Err: fmt.Errorf("unknown kind %q in %s: want %s, %s or %s",
			tm.Kind, tm.APIVersion, KindGuardrailPolicy, KindAgentPassport, KindClusterGuardrailPolicy)}
	}
	strict, err := sigsjson.UnmarshalStrict(data, target)
	if err != nil {
		return &Error{Source: src, Err: fmt.Errorf("decoding %s: %w", tm.Kind, cleanJSONError(err))}
	}
	if len(strict) > 0 {
		msgs := make([]string, len(strict))
		for i, e := range strict {
			msgs[i] = e.Error()
		}
		return &Error{Source: src, Err: fmt.Errorf("decoding %s: %s", tm.Kind, strings.Join(msgs, "; "))}
	}
	if err := normalize(&obj); err != nil {
		return &Error{Source: src, Err: err}
	}
	s.Objects = append(s.Objects, obj)
	return nil
}

// normalize applies the default namespace and checks the object metadata.
func normalize(o *Object) error {
	var meta *metav1.ObjectMeta
	switch {
	case o.Policy != nil:
		meta = &o.Policy.ObjectMeta
	case o.ClusterPolicy != nil:
		meta = &o.ClusterPolicy.ObjectMeta
		meta.Namespace = "" // cluster-scoped: the API server ignores it too
	default:
		meta = &o.Passport.ObjectMeta
	}
	if meta.Namespace == "" && o.ClusterPolicy == nil {
		meta.Namespace = DefaultNamespace
	}
	var problems []string
	if meta.Name == "" {
		problems = append(problems, "metadata.name: required")
	} else {
		for _, m := range validation.IsDNS1123Subdomain(meta.Name) {
			problems = append(problems, fmt.Sprintf("metadata.name %q: %s", meta.Name, m))
		}
	}
	if o.ClusterPolicy == nil {
		for _, m := range validation.IsDNS1123Label(meta.Namespace) {
			problems = append(problems, fmt.Sprintf("metadata.namespace %q: %s", meta.Namespace, m))
		}
	}
	if o.Passport != nil {
		spec := o.Passport.Spec
		for i, c := range spec.Capabilities {
			if c.Params != nil && !isJSONObject(c.Params.Raw) {
				problems = append(problems, fmt.Sprintf("spec.capabilities[%d].params: must be an object", i))
			}
		}
		if spec.Limits != nil && !isJSONObject(spec.Limits.Raw) {
			problems = append(problems, "spec.limits: must be an object")
		}
	}
	if len(problems) > 0 {
		return fmt.Errorf("%s %s: %s", o.Kind(), meta.Name, strings.Join(problems, "; "))
	}
	// The conversion into engine structs must succeed for every loaded object.
	var err error
	switch {
	case o.Policy != nil:
		_, err = convert.Policy(o.Policy)
	case o.ClusterPolicy != nil:
		_, err = convert.ClusterPolicy(o.ClusterPolicy)
	default:
		_, err = convert.Passport(o.Passport)
	}
	return err
}

// addNamespace records the labels of a Namespace document (one that does not decode is left to
// the tools that own it).
func (s *Set) addNamespace(data []byte) {
	var ns struct {
		Metadata struct {
			Name   string            `json:"name"`
			Labels map[string]string `json:"labels"`
		} `json:"metadata"`
	}
	if json.Unmarshal(data, &ns) != nil || ns.Metadata.Name == "" {
		return
	}
	if s.NamespaceLabels == nil {
		s.NamespaceLabels = map[string]map[string]string{}
	}
	s.NamespaceLabels[ns.Metadata.Name] = ns.Metadata.Labels
}

// isJSONObject reports whether raw is a JSON object (or null).
func isJSONObject(raw []byte) bool {
	raw = bytes.TrimSpace(raw)
	return len(raw) == 0 || raw[0] == '{' || string(raw) == "null"
}

// CheckDuplicates reports objects of the same kind, namespace and name defined twice.
func (s *Set) CheckDuplicates() error {
	first := map[string]Source{}
	var errs []error
	for _, o := range s.Objects {
		key := o.Kind() + " " + o.Namespace() + "/" + o.Name()
		if prev, dup := first[key]; dup {
			errs = append(errs, &Error{Source: o.Source, Err: fmt.Errorf("%s is also defined in %s", key, prev)})
			continue
		}
		first[key] = o.Source
	}
	return errors.Join(errs...)
}

func splitAPIVersion(apiVersion string) (group, version string) {
	if i := strings.LastIndexByte(apiVersion, '/'); i >= 0 {
		return apiVersion[:i], apiVersion[i+1:]
	}
	return "", apiVersion
}

// cleanJSONError drops the decoder's Go type names where a field path says enough.
func cleanJSONError(err error) error {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) && te.Field != "" {
		return fmt.Errorf("%s: cannot use a JSON %s here (want %s)", te.Field, te.Value, te.Type)
	}
	return err
}
