package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tollgate-dev/tollgate/config"
)

// installFieldManager owns the fields `tollgate install` applies.
const installFieldManager = "tollgate-install"

// installCommand writes or applies the install manifest embedded in the binary (config/install.yaml,
// that is `kustomize build config/default`: CRDs, RBAC, manager, deciders, webhooks with cert-manager
// certificates, network policies).
type installCommand struct {
	print  bool
	image  string
	dryRun bool
	kube   kubeOptions
}

func newInstallCommand() command { return &installCommand{image: config.DefaultImage} }

// BindFlags registers install's flags.
func (c *installCommand) BindFlags(fs *flag.FlagSet) {
	fs.BoolVar(&c.print, "print", c.print, "write the install manifest to stdout instead of applying it")
	fs.StringVar(&c.image, "image", c.image, "the Tollgate image the manager and deciders run")
	fs.BoolVar(&c.dryRun, "dry-run", c.dryRun, "apply with the API server's dry run: validate everything, change nothing")
	c.kube.BindFlags(fs, "kubeconfig file of the cluster to install into (default: $KUBECONFIG, ~/.kube/config)")
}

// Run prints the manifest, or applies it with server-side apply.
func (c *installCommand) Run(ctx context.Context, cio *cmdIO, args []string) error {
	if len(args) > 0 {
		return usageError("unexpected arguments %q", args)
	}
	manifest := config.InstallManifest(c.image)
	if c.print {
		if _, err := cio.stdout.Write(manifest); err != nil {
			return fmt.Errorf("writing the install manifest: %w", err)
		}
		return nil
	}
	objs, err := decodeObjects(manifest)
	if err != nil {
		return fmt.Errorf("decoding the embedded install manifest: %w", err)
	}
	cfg, err := c.kube.restConfig("tollgate-install")
	if err != nil {
		return err
	}
	cl, err := client.New(cfg, client.Options{})
	if err != nil {
		return fmt.Errorf("connecting to the API server: %w", err)
	}
	return applyObjects(ctx, cl, objs, c.dryRun, cio.stdout)
}

// decodeObjects splits a multi-document YAML manifest into objects.
func decodeObjects(data []byte) ([]*unstructured.Unstructured, error) {
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	var objs []*unstructured.Unstructured
	for {
		obj := &unstructured.Unstructured{}
		if err := dec.Decode(&obj.Object); err != nil {
			if errors.Is(err, io.EOF) {
				return objs, nil
			}
			return nil, fmt.Errorf("document %d: %w", len(objs)+1, err)
		}
		if len(obj.Object) == 0 {
			continue
		}
		objs = append(objs, obj)
	}
}

// applyObjects server-side applies objs in order. It first checks that the cluster serves every
// kind the manifest uses (cert-manager's, for instance), so that a missing prerequisite applies
// nothing rather than half an install.
func applyObjects(ctx context.Context, cl client.Client, objs []*unstructured.Unstructured, dryRun bool, out io.Writer) error {
	defined := map[schema.GroupKind]bool{}
	for _, o := range objs {
		if o.GetKind() == "CustomResourceDefinition" {
			group, _, _ := unstructured.NestedString(o.Object, "spec", "group")
			kind, _, _ := unstructured.NestedString(o.Object, "spec", "names", "kind")
			defined[schema.GroupKind{Group: group, Kind: kind}] = true
		}
	}
	var missing []string
	for _, o := range objs {
		gvk := o.GroupVersionKind()
		if defined[gvk.GroupKind()] {
			continue
		}
		if _, err := cl.RESTMapper().RESTMapping(gvk.GroupKind(), gvk.Version); err != nil {
			if !meta.IsNoMatchError(err) {
				return fmt.Errorf("looking up %s: %w", gvk, err)
			}
			missing = append(missing, fmt.Sprintf("%s %s", gvk.GroupVersion(), gvk.Kind))
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("the cluster does not serve %s: install its provider first (the webhooks' certificates come from cert-manager, https://cert-manager.io); nothing was applied",
			strings.Join(missing, ", "))
	}
	opts := []client.ApplyOption{client.FieldOwner(installFieldManager), client.ForceOwnership}
	suffix := ""
	if dryRun {
		opts = append(opts, client.DryRunAll)
		suffix = " (server dry run)"
	}
	created := map[string]bool{}
	for _, o := range objs {
		if o.GetKind() == "Namespace" && o.GetAPIVersion() == "v1" {
			created[o.GetName()] = true
		}
	}
	for _, o := range objs {
		if dryRun && created[o.GetNamespace()] && !namespaceExists(ctx, cl, o.GetNamespace()) {
			// The API server cannot dry-run an object into a namespace that only the dry run created.
			fmt.Fprintf(out, "%s/%s skipped in the dry run: namespace %s does not exist yet\n", strings.ToLower(o.GetKind()), o.GetName(), o.GetNamespace())
			continue
		}
		if err := cl.Apply(ctx, client.ApplyConfigurationFromUnstructured(o), opts...); err != nil {
			return fmt.Errorf("applying %s %s: %w", o.GetKind(), objectName(o), err)
		}
		fmt.Fprintf(out, "%s/%s serverside-applied%s\n", strings.ToLower(o.GetKind()), o.GetName(), suffix)
	}
	return nil
}

func namespaceExists(ctx context.Context, cl client.Client, name string) bool {
	ns := &unstructured.Unstructured{}
	ns.SetAPIVersion("v1")
	ns.SetKind("Namespace")
	return cl.Get(ctx, client.ObjectKey{Name: name}, ns) == nil
}

func objectName(o *unstructured.Unstructured) string {
	if ns := o.GetNamespace(); ns != "" {
		return ns + "/" + o.GetName()
	}
	return o.GetName()
}
