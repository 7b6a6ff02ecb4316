// Package chartrender renders Tollgate's Helm chart (charts/tollgate, embedded by package charts)
// with Helm's own Go packages, the way `helm template --include-crds` does: values coalesced with
// values.yaml and checked against values.schema.json, templates rendered by Helm's engine, the
// objects sorted in Helm's install order, the CRDs of crds/ first. It also lints a chart directory
// as `helm lint --strict` does.
package chartrender

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"strings"

	"helm.sh/helm/v4/pkg/chart/common"
	"helm.sh/helm/v4/pkg/chart/common/util"
	"helm.sh/helm/v4/pkg/chart/loader/archive"
	chartv2 "helm.sh/helm/v4/pkg/chart/v2"
	"helm.sh/helm/v4/pkg/chart/v2/lint"
	"helm.sh/helm/v4/pkg/chart/v2/lint/support"
	"helm.sh/helm/v4/pkg/chart/v2/loader"
	chartv2util "helm.sh/helm/v4/pkg/chart/v2/util"
	"helm.sh/helm/v4/pkg/engine"
	"helm.sh/helm/v4/pkg/ignore"
	releaseutil "helm.sh/helm/v4/pkg/release/v1/util"
	"helm.sh/helm/v4/pkg/strvals"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"

	"github.com/tollgate-dev/tollgate/charts"
)

const (
	// DefaultReleaseName is the release name Render uses when Options.ReleaseName is empty; with it
	// the objects have the names config/default gives them (prefix "tollgate-").
	DefaultReleaseName = "tollgate"
	// DefaultNamespace is the namespace Render uses when Options.Namespace is empty (config/default's).
	DefaultNamespace = "tollgate-system"
	// DefaultKubeVersion is the Kubernetes version Render and Lint assume (.Capabilities.KubeVersion):
	// the one of the k8s.io modules Tollgate builds with.
	DefaultKubeVersion = "v1.37.0"
)

// Options say what to render.
type Options struct {
	// ReleaseName is the Helm release name (default DefaultReleaseName).
	ReleaseName string
	// Namespace is the release namespace (default DefaultNamespace).
	Namespace string
	// Values override the chart's values.yaml, as `helm template -f` does.
	Values map[string]any
	// Set are applied after Values, as `helm template --set` does: "key.path=value" each.
	Set []string
	// SkipCRDs leaves out the CRDs of crds/ (`helm template` without --include-crds).
	SkipCRDs bool
	// KubeVersion is .Capabilities.KubeVersion (default DefaultKubeVersion); the chart's kubeVersion
	// constraint must accept it.
	KubeVersion string
	// APIVersions are added to .Capabilities.APIVersions (`helm template --api-versions`), e.g.
	// "monitoring.coreos.com/v1".
	APIVersions []string
}

// Load loads the embedded Tollgate chart, leaving out what its .helmignore names.
func Load() (*chartv2.Chart, error) {
	return LoadFS(charts.FS, charts.TollgateDir)
}

// LoadFS loads the chart in directory dir of fsys as Helm's directory loader does (.helmignore
// and Helm's default ignore rules apply).
func LoadFS(fsys fs.FS, dir string) (*chartv2.Chart, error) {
	rules := ignore.Empty()
	if data, err := fs.ReadFile(fsys, path.Join(dir, ignore.HelmIgnore)); err == nil {
		if rules, err = ignore.Parse(bytes.NewReader(data)); err != nil {
			return nil, fmt.Errorf("parsing the chart's %s: %w", ignore.HelmIgnore, err)
		}
	} else if !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("reading the chart's %s: %w", ignore.HelmIgnore, err)
	}
	rules.AddDefaults()

	var files []*archive.BufferedFile
	err := fs.WalkDir(fsys, dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := strings.TrimPrefix(strings.TrimPrefix(p, dir), "/")
		if name == "" {
			return nil
		}
		fi, err := d.Info()
		if err != nil {
			return fmt.Errorf("reading %s: %w", p, err)
		}
		if rules.Ignore(name, fi) {
			if d.IsDir() {
				return fs.SkipDir
			}
			return nil
		}
		if d.IsDir() {
			return nil
		}
		data, err := fs.ReadFile(fsys, p)
		if err != nil {
			return fmt.Errorf("reading %s: %w", p, err)
		}
		files = append(files, &archive.BufferedFile{Name: name, ModTime: fi.ModTime(), Data: data})
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("reading the chart %s: %w", dir, err)
	}
	ch, err := loader.LoadFiles(files)
	if err != nil {
		return nil, fmt.Errorf("loading the chart %s: %w", dir, err)
	}
	return ch, nil
}

// Render renders the embedded Tollgate chart with opts and returns its objects in Helm's install
// order, the CRDs first (unless opts.SkipCRDs). Values that values.schema.json rejects are an error.
func Render(opts Options) ([]*unstructured.Unstructured, error) {
	ch, err := Load()
	if err != nil {
		return nil, err
	}
	return RenderChart(ch, opts)
}

// RenderChart renders ch with opts (see Render).
func RenderChart(ch *chartv2.Chart, opts Options) ([]*unstructured.Unstructured, error) {
	docs, err := renderDocs(ch, opts)
	if err != nil {
		return nil, err
	}
	var objs []*unstructured.Unstructured
	for _, d := range docs {
		parsed, err := Parse(d.content)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", d.source, err)
		}
		objs = append(objs, parsed...)
	}
	return objs, nil
}

// Manifest renders the embedded Tollgate chart with opts as one YAML stream, as `helm template
// --include-crds` prints it: each document preceded by a "# Source:" comment.
func Manifest(opts Options) (string, error) {
	ch, err := Load()
	if err != nil {
		return "", err
	}
	docs, err := renderDocs(ch, opts)
	if err != nil {
		return "", err
	}
	var b strings.Builder
	for _, d := range docs {
		fmt.Fprintf(&b, "---\n# Source: %s\n%s\n", d.source, strings.TrimSpace(d.content))
	}
	return b.String(), nil
}

// doc is one rendered YAML document and the chart file it came from.
type doc struct {
	source, content string
}

// renderDocs renders ch: the CRD files first, then every template's documents in install order.
func renderDocs(ch *chartv2.Chart, opts Options) ([]doc, error) {
	if opts.ReleaseName == "" {
		opts.ReleaseName = DefaultReleaseName
	}
	if opts.Namespace == "" {
		opts.Namespace = DefaultNamespace
	}
	caps, err := capabilities(opts.KubeVersion, opts.APIVersions)
	if err != nil {
		return nil, err
	}
	if kv := ch.Metadata.KubeVersion; kv != "" && !chartv2util.IsCompatibleRange(kv, caps.KubeVersion.String()) {
		return nil, fmt.Errorf("chart %s needs Kubernetes %s, not %s", ch.Name(), kv, caps.KubeVersion.String())
	}
	vals, err := values(opts)
	if err != nil {
		return nil, err
	}
	top, err := util.ToRenderValuesWithSchemaValidation(ch, vals, common.ReleaseOptions{
		Name: opts.ReleaseName, Namespace: opts.Namespace, Revision: 1, IsInstall: true,
	}, caps, false)
	if err != nil {
		return nil, fmt.Errorf("chart values: %w", err)
	}
	files, err := engine.Render(ch, top)
	if err != nil {
		return nil, fmt.Errorf("rendering the chart: %w", err)
	}
	for name := range files {
		if strings.HasSuffix(name, "NOTES.txt") {
			delete(files, name)
		}
	}
	hooks, manifests, err := releaseutil.SortManifests(files, caps.APIVersions, releaseutil.InstallOrder)
	if err != nil {
		return nil, fmt.Errorf("sorting the rendered objects: %w", err)
	}
	if len(hooks) > 0 {
		return nil, fmt.Errorf("the chart renders %d hooks (%s first); Render does not run hooks", len(hooks), hooks[0].Path)
	}
	var docs []doc
	if !opts.SkipCRDs {
		for _, crd := range ch.CRDObjects() {
			docs = append(docs, doc{source: path.Join(ch.Name(), crd.Name), content: string(crd.File.Data)})
		}
	}
	for _, m := range manifests {
		docs = append(docs, doc{source: m.Name, content: m.Content})
	}
	return docs, nil
}

// values merges opts.Values and opts.Set.
func values(opts Options) (map[string]any, error) {
	// A deep copy, so that Set never changes the caller's map.
	vals := deepCopy(opts.Values)
	for _, s := range opts.Set {
		if err := strvals.ParseInto(s, vals); err != nil {
			return nil, fmt.Errorf("--set %s: %w", s, err)
		}
	}
	return vals, nil
}

// deepCopy copies nested maps and slices of a values tree.
func deepCopy(m map[string]any) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		out[k] = deepCopyValue(v)
	}
	return out
}

func deepCopyValue(v any) any {
	switch t := v.(type) {
	case map[string]any:
		return deepCopy(t)
	case []any:
		s := make([]any, len(t))
		for i := range t {
			s[i] = deepCopyValue(t[i])
		}
		return s
	default:
		return v
	}
}

// capabilities are Helm's default capabilities at kubeVersion (default DefaultKubeVersion) with
// apiVersions added.
func capabilities(kubeVersion string, apiVersions []string) (*common.Capabilities, error) {
	if kubeVersion == "" {
		kubeVersion = DefaultKubeVersion
	}
	kv, err := common.ParseKubeVersion(kubeVersion)
	if err != nil {
		return nil, fmt.Errorf("kube version %q: %w", kubeVersion, err)
	}
	caps := common.DefaultCapabilities.Copy()
	caps.KubeVersion = *kv
	caps.APIVersions = append(append(common.VersionSet{}, caps.APIVersions...), apiVersions...)
	return caps, nil
}

// Parse decodes a YAML stream into objects (integers as int64, as the API machinery has them),
// skipping empty documents; a document without apiVersion or kind is an error.
func Parse(manifest string) ([]*unstructured.Unstructured, error) {
	dec := utilyaml.NewYAMLOrJSONDecoder(strings.NewReader(manifest), 4096)
	var out []*unstructured.Unstructured
	for {
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			if errors.Is(err, io.EOF) {
				return out, nil
			}
			return nil, fmt.Errorf("decoding YAML: %w", err)
		}
		if t := bytes.TrimSpace(raw); len(t) == 0 || bytes.Equal(t, []byte("null")) || bytes.Equal(t, []byte("{}")) {
			continue
		}
		u := &unstructured.Unstructured{}
		if err := u.UnmarshalJSON(raw); err != nil {
			return nil, fmt.Errorf("decoding an object: %w", err)
		}
		out = append(out, u)
	}
}

// Lint lints the chart directory dir with values as `helm lint --strict --namespace namespace`
// does (Chart.yaml, values and their schema, every template rendered at DefaultKubeVersion, the
// CRDs) and returns every message. err reports the messages of severity warning or higher, each
// on a line.
func Lint(dir, namespace string, values map[string]any) (msgs []support.Message, err error) {
	if _, statErr := os.Stat(path.Join(dir, "Chart.yaml")); statErr != nil {
		return nil, fmt.Errorf("linting %s: %w", dir, statErr)
	}
	kv, err := common.ParseKubeVersion(DefaultKubeVersion)
	if err != nil {
		return nil, fmt.Errorf("kube version: %w", err)
	}
	if namespace == "" {
		namespace = DefaultNamespace
	}
	res := lint.RunAll(dir, values, namespace, lint.WithKubeVersion(kv))
	var problems []string
	for _, m := range res.Messages {
		if m.Severity >= support.WarningSev {
			problems = append(problems, m.Error())
		}
	}
	if len(problems) > 0 {
		return res.Messages, fmt.Errorf("helm lint %s: %d problems:\n%s", dir, len(problems), strings.Join(problems, "\n"))
	}
	return res.Messages, nil
}
