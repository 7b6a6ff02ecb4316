package main

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/tollgate-dev/tollgate/config"
	"github.com/tollgate-dev/tollgate/internal/testenv"
)

func TestVersion(t *testing.T) {
	res := runBin(t, "", "version")
	if res.code != 0 {
		t.Fatalf("exit %d: %s", res.code, res.stderr)
	}
	for _, want := range []string{"tollgate " + testVersion + "\n", "commit:   " + testCommit + "\n", "go:       go1.", "platform: "} {
		if !strings.Contains(res.stdout, want) {
			t.Errorf("version output lacks %q:\n%s", want, res.stdout)
		}
	}
	res = runBin(t, "", "version", "-o", "json")
	var info struct{ Version, Commit, GoVersion, Platform string }
	if err := json.Unmarshal([]byte(res.stdout), &info); err != nil || res.code != 0 {
		t.Fatalf("version -o json: exit %d, %v:\n%s", res.code, err, res.stdout)
	}
	if info.Version != testVersion || info.Commit != testCommit || !strings.HasPrefix(info.GoVersion, "go1.") {
		t.Errorf("version -o json = %+v", info)
	}
	if res := runBin(t, "", "version", "-o", "yaml"); res.code != exitUsage || !strings.Contains(res.stderr, `want text or json`) {
		t.Errorf("version -o yaml: exit %d, stderr %q; want a usage error", res.code, res.stderr)
	}
}

// TestCompletionBash sources the generated script in a real bash and asks it to complete.
func TestCompletionBash(t *testing.T) {
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Fatalf("bash is needed to test its completion: %v", err)
	}
	script := filepath.Join(t.TempDir(), "tollgate.bash")
	res := runBin(t, "", "completion", "bash")
	if res.code != 0 {
		t.Fatalf("completion bash: exit %d: %s", res.code, res.stderr)
	}
	if err := os.WriteFile(script, []byte(res.stdout), 0o644); err != nil {
		t.Fatal(err)
	}
	complete := func(words ...string) string {
		t.Helper()
		quoted := make([]string, len(words))
		for i, w := range words {
			quoted[i] = "'" + w + "'"
		}
		prog := "source " + script + "; COMP_WORDS=(" + strings.Join(quoted, " ") + "); COMP_CWORD=" +
			itoa(len(words)-1) + `; _tollgate; echo "${COMPREPLY[*]}"`
		out, err := exec.Command(bash, "-c", prog).CombinedOutput()
		if err != nil {
			t.Fatalf("bash: %v: %s", err, out)
		}
		return strings.TrimSpace(string(out))
	}
	tests := []struct {
		words []string
		want  string
	}{
		{[]string{"tollgate", "ver"}, "verify version"},
		{[]string{"tollgate", "m"}, "manager mcp-proxy"},
		{[]string{"tollgate", "install", "--pr"}, "--print"},
		{[]string{"tollgate", "serve", "--bind"}, "--bind-address"},
		{[]string{"tollgate", "test", "-"}, "-o"},
		{[]string{"tollgate", "help", "dem"}, "demo"},
		// Deprecated spellings are not offered.
		{[]string{"tollgate", "serve", "--add"}, ""},
	}
	for _, tt := range tests {
		if got := complete(tt.words...); got != tt.want {
			t.Errorf("completing %q = %q, want %q", tt.words, got, tt.want)
		}
	}
}

func TestCompletionScripts(t *testing.T) {
	fish := runBin(t, "", "completion", "fish")
	for _, want := range []string{
		"complete -c tollgate -n __fish_use_subcommand -a install -d 'apply the install manifest to a cluster, or print it (--print)'",
		"complete -c tollgate -n '__fish_seen_subcommand_from install' -l print -d ",
		"complete -c tollgate -n '__fish_seen_subcommand_from version' -s o -d 'output format: text or json'",
	} {
		if !strings.Contains(fish.stdout, want) {
			t.Errorf("fish completion lacks %q", want)
		}
	}
	if zsh := runBin(t, "", "completion", "zsh"); !strings.HasPrefix(zsh.stdout, "#compdef tollgate\n") || !strings.Contains(zsh.stdout, "bashcompinit") {
		t.Errorf("zsh completion does not start with #compdef and load bashcompinit:\n%.200s", zsh.stdout)
	}
	if res := runBin(t, "", "completion", "tcsh"); res.code != exitUsage {
		t.Errorf("completion tcsh: exit %d, want %d", res.code, exitUsage)
	}
}

func TestInstallPrint(t *testing.T) {
	want, err := os.ReadFile(filepath.Join(repoRoot, "config", "install.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	res := runBin(t, "", "install", "--print")
	if res.code != 0 || res.stdout != string(want) {
		t.Fatalf("install --print (exit %d) is not config/install.yaml (%d bytes, want %d)", res.code, len(res.stdout), len(want))
	}
	objs, err := decodeObjects([]byte(res.stdout))
	if err != nil {
		t.Fatal(err)
	}
	kinds := map[string]int{}
	for _, o := range objs {
		kinds[o.GetKind()]++
	}
	for kind, n := range map[string]int{"CustomResourceDefinition": 2, "Deployment": 2, "ValidatingWebhookConfiguration": 1, "MutatingWebhookConfiguration": 1, "Namespace": 1} {
		if kinds[kind] < n {
			t.Errorf("install manifest has %d %s, want at least %d", kinds[kind], kind, n)
		}
	}
	res = runBin(t, "", "install", "--print", "--image", "registry.example/tollgate:v9")
	if strings.Contains(res.stdout, config.DefaultImage) || strings.Count(res.stdout, "image: registry.example/tollgate:v9") != 2 {
		t.Errorf("--image did not replace the manager's and the deciders' image")
	}
}

// TestInstallApply applies the embedded manifest to a real API server: a missing prerequisite
// (cert-manager) applies nothing, a dry run changes nothing, and applying twice is idempotent.
func TestInstallApply(t *testing.T) {
	env, err := testenv.New()
	if err != nil {
		t.Fatal(err)
	}
	env.CRDDirectoryPaths = nil // a bare cluster: install brings Tollgate's CRDs itself
	cfg, err := env.Start()
	if err != nil {
		t.Fatalf("starting the control plane: %v", err)
	}
	t.Cleanup(func() { _ = env.Stop() })
	kubeconfig := writeKubeconfig(t, env)
	cl, err := client.New(cfg, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	nsGone := func() bool {
		err := cl.Get(ctx, client.ObjectKey{Name: "tollgate-system"}, &corev1.Namespace{})
		return apierrors.IsNotFound(err)
	}

	res := runBin(t, "", "install", "--kubeconfig", kubeconfig)
	if res.code != exitFailed || !strings.Contains(res.stderr, "cert-manager.io/v1 Certificate") || !strings.Contains(res.stderr, "nothing was applied") {
		t.Fatalf("install without cert-manager: exit %d, stderr:\n%s", res.code, res.stderr)
	}
	if !nsGone() {
		t.Fatal("a failed preflight applied the namespace")
	}

	installCertManagerCRDs(t, env)
	res = runBin(t, "", "install", "--kubeconfig", kubeconfig, "--dry-run")
	if res.code != 0 || !strings.Contains(res.stdout, "customresourcedefinition/guardrailpolicies.guardrails.tollgate.dev serverside-applied (server dry run)") ||
		!strings.Contains(res.stdout, "validatingwebhookconfiguration/tollgate-validating-webhook-configuration serverside-applied (server dry run)") ||
		!strings.Contains(res.stdout, "deployment/tollgate-decider skipped in the dry run: namespace tollgate-system does not exist yet") {
		t.Fatalf("install --dry-run: exit %d\nstdout:\n%s\nstderr:\n%s", res.code, res.stdout, res.stderr)
	}
	if !nsGone() {
		t.Fatal("--dry-run created the namespace")
	}

	for i := range 2 {
		res = runBin(t, "", "install", "--kubeconfig", kubeconfig, "--image", "registry.example/tollgate:v9")
		if res.code != 0 {
			t.Fatalf("install #%d: exit %d\nstderr:\n%s", i+1, res.code, res.stderr)
		}
	}
	dep := &appsv1.Deployment{}
	if err := cl.Get(ctx, client.ObjectKey{Namespace: "tollgate-system", Name: "tollgate-decider"}, dep); err != nil {
		t.Fatalf("the decider Deployment was not applied: %v", err)
	}
	if img := dep.Spec.Template.Spec.Containers[0].Image; img != "registry.example/tollgate:v9" {
		t.Errorf("decider image %q, want registry.example/tollgate:v9", img)
	}
	crd := &apiextensionsv1.CustomResourceDefinition{}
	if err := cl.Get(ctx, client.ObjectKey{Name: "guardrailpolicies.guardrails.tollgate.dev"}, crd); err != nil {
		t.Errorf("the GuardrailPolicy CRD was not applied: %v", err)
	}
	managed := false
	for _, m := range dep.ManagedFields {
		managed = managed || m.Manager == installFieldManager
	}
	if !managed {
		t.Errorf("the Deployment's fields are not owned by %s: %+v", installFieldManager, dep.ManagedFields)
	}
}

// installCertManagerCRDs serves cert-manager's Certificate and Issuer kinds (schemaless), which is
// all the install manifest needs of cert-manager to be applied.
func installCertManagerCRDs(t *testing.T, env *envtest.Environment) {
	t.Helper()
	var crds []*apiextensionsv1.CustomResourceDefinition
	for _, kind := range []string{"Certificate", "Issuer"} {
		plural := strings.ToLower(kind) + "s"
		preserve := true
		crds = append(crds, &apiextensionsv1.CustomResourceDefinition{
			ObjectMeta: metav1.ObjectMeta{Name: plural + ".cert-manager.io"},
			Spec: apiextensionsv1.CustomResourceDefinitionSpec{
				Group: "cert-manager.io", Scope: apiextensionsv1.NamespaceScoped,
				Names: apiextensionsv1.CustomResourceDefinitionNames{Kind: kind, Plural: plural, ListKind: kind + "List", Singular: strings.ToLower(kind)},
				Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{Name: "v1", Served: true, Storage: true,
					Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{
						Type: "object", XPreserveUnknownFields: &preserve}}}},
			},
		})
	}
	if _, err := envtest.InstallCRDs(env.Config, envtest.CRDInstallOptions{CRDs: crds}); err != nil {
		t.Fatalf("installing cert-manager's CRDs: %v", err)
	}
}

// writeKubeconfig writes an admin kubeconfig for env and returns its path.
func writeKubeconfig(t *testing.T, env *envtest.Environment) string {
	t.Helper()
	user, err := env.ControlPlane.AddUser(envtest.User{Name: "installer", Groups: []string{"system:masters"}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	data, err := user.KubeConfig()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := clientcmd.Load(data); err != nil {
		t.Fatalf("envtest kubeconfig: %v", err)
	}
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}
