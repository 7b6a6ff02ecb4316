package pod

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	jsonpatch "github.com/evanphx/json-patch/v5"
	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	guardrailsv1alpha1 "github.com/tollgate-dev/tollgate/api/v1alpha1"
)

const testURL = "http://tollgate-decider.tollgate-system.svc:8080"

func testScheme(t *testing.T) *runtime.Scheme {
	t.Helper()
	s := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	if err := guardrailsv1alpha1.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	return s
}

func passport(name string, status guardrailsv1alpha1.PassportStatusValue, sas ...string) *guardrailsv1alpha1.AgentPassport {
	return &guardrailsv1alpha1.AgentPassport{
		ObjectMeta: metav1.ObjectMeta{Namespace: "agents", Name: name},
		Spec: guardrailsv1alpha1.AgentPassportSpec{
			Owner:    guardrailsv1alpha1.PassportOwner{ID: "team@example.com"},
			Status:   status,
			Subjects: guardrailsv1alpha1.PassportSubjects{ServiceAccounts: sas},
		},
	}
}

func newTestInjector(t *testing.T, objs ...*guardrailsv1alpha1.AgentPassport) *Injector {
	t.Helper()
	s := testScheme(t)
	b := fake.NewClientBuilder().WithScheme(s)
	for _, o := range objs {
		b = b.WithObjects(o)
	}
	inj, err := NewInjector(b.Build(), nil, admission.NewDecoder(s), Options{DeciderURL: testURL, TokenExpiration: 15 * time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	return inj
}

func agentPod(annotations map[string]string, sa string) *corev1.Pod {
	return &corev1.Pod{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: metav1.ObjectMeta{Namespace: "agents", Name: "agent", Annotations: annotations, Labels: map[string]string{"app": "agent"}},
		Spec: corev1.PodSpec{
			ServiceAccountName: sa,
			InitContainers:     []corev1.Container{{Name: "init", Image: "busybox"}},
			Containers: []corev1.Container{
				{Name: "app", Image: "agent:1", Env: []corev1.EnvVar{{Name: "A", Value: "1"}}},
				{Name: "sidecar", Image: "proxy:1"},
			},
		},
	}
}

func request(t *testing.T, pod *corev1.Pod) admission.Request {
	t.Helper()
	raw, err := json.Marshal(pod)
	if err != nil {
		t.Fatal(err)
	}
	return admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{
		Operation: admissionv1.Create,
		Namespace: "agents",
		Kind:      metav1.GroupVersionKind{Version: "v1", Kind: "Pod"},
		Object:    runtime.RawExtension{Raw: raw},
	}}
}

// admit runs the handler on raw and returns the pod after applying its patch, and the response.
func admit(t *testing.T, inj *Injector, raw []byte) ([]byte, admission.Response) {
	t.Helper()
	req := admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{
		Operation: admissionv1.Create, Namespace: "agents", Object: runtime.RawExtension{Raw: raw},
	}}
	resp := inj.Handle(context.Background(), req)
	if !resp.Allowed {
		t.Fatalf("denied: %v", resp.Result)
	}
	if len(resp.Patches) == 0 {
		return raw, resp
	}
	ops, err := json.Marshal(resp.Patches)
	if err != nil {
		t.Fatal(err)
	}
	patch, err := jsonpatch.DecodePatch(ops)
	if err != nil {
		t.Fatal(err)
	}
	out, err := patch.Apply(raw)
	if err != nil {
		t.Fatal(err)
	}
	return out, resp
}

func decodePod(t *testing.T, raw []byte) *corev1.Pod {
	t.Helper()
	p := &corev1.Pod{}
	if err := json.Unmarshal(raw, p); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestHandleWiresEveryContainerAndIsIdempotent(t *testing.T) {
	inj := newTestInjector(t, passport("coder", guardrailsv1alpha1.PassportActive, "coding-agent"))
	in := agentPod(map[string]string{guardrailsv1alpha1.AnnotationPassport: "coder"}, "coding-agent")
	raw, _ := json.Marshal(in)

	once, resp := admit(t, inj, raw)
	if len(resp.Patches) == 0 {
		t.Fatal("expected a patch for an opted-in pod")
	}
	got := decodePod(t, once)

	want := in.DeepCopy()
	want.Labels[guardrailsv1alpha1.LabelGuarded] = "true"
	exp := int64(900)
	want.Spec.Volumes = []corev1.Volume{{Name: VolumeName, VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{
		Sources: []corev1.VolumeProjection{{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{Audience: "tollgate", ExpirationSeconds: &exp, Path: "token"}}},
	}}}}
	for i := range want.Spec.Containers {
		c := &want.Spec.Containers[i]
		c.VolumeMounts = []corev1.VolumeMount{{Name: VolumeName, MountPath: TokenMountPath, ReadOnly: true}}
		c.Env = append(c.Env,
			corev1.EnvVar{Name: EnvURL, Value: testURL},
			corev1.EnvVar{Name: EnvPassport, Value: "agents/coder"},
			corev1.EnvVar{Name: EnvTokenFile, Value: TokenMountPath + "/token"})
	}
	if !equality.Semantic.DeepEqual(got, want) {
		t.Fatalf("mutated pod differs:\n got %+v\nwant %+v", got.Spec, want.Spec)
	}

	// Reinvocation (reinvocationPolicy IfNeeded): the handler on its own output adds nothing.
	twice, resp2 := admit(t, inj, once)
	if len(resp2.Patches) != 0 {
		t.Fatalf("second invocation patched again: %v", resp2.Patches)
	}
	if string(twice) != string(once) {
		t.Fatal("second invocation changed the pod")
	}
}

func TestHandleKeepsUserEnvAndVolumes(t *testing.T) {
	inj := newTestInjector(t, passport("coder", guardrailsv1alpha1.PassportActive, "default"))
	in := agentPod(map[string]string{guardrailsv1alpha1.AnnotationPassport: "coder"}, "")
	in.Spec.Containers[0].Env = append(in.Spec.Containers[0].Env, corev1.EnvVar{Name: EnvURL, Value: "http://mine:1"})
	in.Spec.Containers[1].VolumeMounts = []corev1.VolumeMount{{Name: VolumeName, MountPath: "/custom"}}
	in.Spec.Volumes = []corev1.Volume{{Name: VolumeName, VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}}
	raw, _ := json.Marshal(in)
	out, _ := admit(t, inj, raw)
	got := decodePod(t, out)

	if got.Spec.ServiceAccountName != DefaultServiceAccount {
		t.Fatalf("serviceAccountName %q, want %q (a projected token needs one)", got.Spec.ServiceAccountName, DefaultServiceAccount)
	}
	if len(got.Spec.Volumes) != 1 || got.Spec.Volumes[0].EmptyDir == nil {
		t.Fatalf("user volume replaced: %+v", got.Spec.Volumes)
	}
	if v := envValue(got.Spec.Containers[0], EnvURL); v != "http://mine:1" {
		t.Fatalf("user TOLLGATE_URL overwritten: %q", v)
	}
	if n := countEnv(got.Spec.Containers[0], EnvURL); n != 1 {
		t.Fatalf("TOLLGATE_URL appears %d times", n)
	}
	if v := envValue(got.Spec.Containers[1], EnvTokenFile); v != "/custom/token" {
		t.Fatalf("token file should follow the user's mount of the volume, got %q", v)
	}
	if len(got.Spec.Containers[1].VolumeMounts) != 1 {
		t.Fatalf("user mount duplicated: %+v", got.Spec.Containers[1].VolumeMounts)
	}
}

func TestHandleContainersAnnotation(t *testing.T) {
	inj := newTestInjector(t, passport("coder", guardrailsv1alpha1.PassportActive, "default"))
	in := agentPod(map[string]string{
		guardrailsv1alpha1.AnnotationPassport:   "coder",
		guardrailsv1alpha1.AnnotationContainers: " app , init",
	}, "")
	raw, _ := json.Marshal(in)
	out, _ := admit(t, inj, raw)
	got := decodePod(t, out)
	if envValue(got.Spec.Containers[0], EnvPassport) != "agents/coder" || envValue(got.Spec.InitContainers[0], EnvPassport) != "agents/coder" {
		t.Fatal("listed containers not wired")
	}
	if len(got.Spec.Containers[1].Env) != 0 || len(got.Spec.Containers[1].VolumeMounts) != 0 {
		t.Fatalf("unlisted container wired: %+v", got.Spec.Containers[1])
	}
}

func TestHandleRejections(t *testing.T) {
	inj := newTestInjector(t,
		passport("coder", guardrailsv1alpha1.PassportActive, "coding-agent"),
		passport("gone", guardrailsv1alpha1.PassportRevoked, "coding-agent", "default"),
	)
	for name, tc := range map[string]struct {
		annotations map[string]string
		sa          string
		want        string
	}{
		"missing passport":           {map[string]string{guardrailsv1alpha1.AnnotationPassport: "nope"}, "coding-agent", "AgentPassport agents/nope does not exist"},
		"revoked passport":           {map[string]string{guardrailsv1alpha1.AnnotationPassport: "gone"}, "coding-agent", "AgentPassport agents/gone is revoked"},
		"service account not listed": {map[string]string{guardrailsv1alpha1.AnnotationPassport: "coder"}, "other", `service account "other" may not present AgentPassport agents/coder`},
		"default service account":    {map[string]string{guardrailsv1alpha1.AnnotationPassport: "coder"}, "", `service account "default" may not present`},
		"empty annotation":           {map[string]string{guardrailsv1alpha1.AnnotationPassport: ""}, "coding-agent", "annotation tollgate.dev/passport is empty"},
		"invalid name":               {map[string]string{guardrailsv1alpha1.AnnotationPassport: "Bad/Name"}, "coding-agent", "is not a valid AgentPassport name"},
		"unknown container": {map[string]string{guardrailsv1alpha1.AnnotationPassport: "coder", guardrailsv1alpha1.AnnotationContainers: "app,ghost"},
			"coding-agent", "names no container of the pod: ghost"},
	} {
		t.Run(name, func(t *testing.T) {
			resp := inj.Handle(context.Background(), request(t, agentPod(tc.annotations, tc.sa)))
			if resp.Allowed {
				t.Fatal("allowed")
			}
			if resp.Result == nil || !strings.Contains(resp.Result.Message, tc.want) {
				t.Fatalf("message %q does not contain %q", resp.Result.Message, tc.want)
			}
			if resp.Result.Code != 403 {
				t.Fatalf("code %d, want 403", resp.Result.Code)
			}
		})
	}
}

func TestHandleIgnoresPodsWithoutAnnotation(t *testing.T) {
	inj := newTestInjector(t)
	resp := inj.Handle(context.Background(), request(t, agentPod(map[string]string{"other": "x"}, "")))
	if !resp.Allowed || len(resp.Patches) != 0 || resp.PatchType != nil {
		t.Fatalf("pod without the annotation was not passed through untouched: %+v", resp)
	}
}

func TestHandleWarnsOnSuspendedPassport(t *testing.T) {
	inj := newTestInjector(t, passport("paused", guardrailsv1alpha1.PassportSuspended, "default"))
	resp := inj.Handle(context.Background(), request(t, agentPod(map[string]string{guardrailsv1alpha1.AnnotationPassport: "paused"}, "")))
	if !resp.Allowed || len(resp.Warnings) != 1 || !strings.Contains(resp.Warnings[0], "suspended") {
		t.Fatalf("want an allowed response with a suspension warning, got %+v", resp)
	}
}

func TestOptionsValidate(t *testing.T) {
	if err := (Options{DeciderURL: testURL, TokenExpiration: time.Minute}).Validate(); err == nil {
		t.Fatal("a token expiration under 10m must be rejected")
	}
	if err := (Options{TokenExpiration: time.Hour}).Validate(); err == nil {
		t.Fatal("an empty decider URL must be rejected")
	}
}

func envValue(c corev1.Container, name string) string {
	for _, e := range c.Env {
		if e.Name == name {
			return e.Value
		}
	}
	return ""
}

func countEnv(c corev1.Container, name string) int {
	n := 0
	for _, e := range c.Env {
		if e.Name == name {
			n++
		}
	}
	return n
}
