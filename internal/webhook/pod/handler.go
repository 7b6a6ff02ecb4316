package pod

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	guardrailsv1alpha1 "github.com/tollgate-dev/tollgate/api/v1alpha1"
)

// Path is the URL path the injector is served on.
const Path = "/mutate-v1-pod"

// MinTokenExpiration is the shortest expiry the API server accepts for a projected token.
const MinTokenExpiration = 10 * time.Minute

// Options configure the injector.
type Options struct {
	// DeciderURL is the decision endpoint's base URL written to TOLLGATE_URL.
	DeciderURL string
	// TokenExpiration is the requested lifetime of the projected token (at least MinTokenExpiration;
	// the kubelet refreshes it at 80% of its life).
	TokenExpiration time.Duration
	// Now is the clock used to warn about expired passports (time.Now when nil).
	Now func() time.Time
	// MCPProxyImage is the image of the MCP gateway sidecar (the tollgate image) added to pods
	// annotated tollgate.dev/mcp-upstreams; empty refuses such pods, saying why.
	MCPProxyImage string
	// MCPProxyPort is the sidecar's loopback port (default DefaultMCPProxyPort).
	MCPProxyPort int32
}

// Validate reports an unusable option.
func (o Options) Validate() error {
	if o.DeciderURL == "" {
		return fmt.Errorf("the decision endpoint URL is required")
	}
	if o.TokenExpiration < MinTokenExpiration {
		return fmt.Errorf("token expiration %s is shorter than the API server's minimum %s", o.TokenExpiration, MinTokenExpiration)
	}
	return nil
}

// +kubebuilder:webhook:path=/mutate-v1-pod,mutating=true,failurePolicy=fail,sideEffects=None,groups="",resources=pods,verbs=create,versions=v1,name=mpod.tollgate.dev,admissionReviewVersions=v1,reinvocationPolicy=IfNeeded,timeoutSeconds=5,patch=`{"namespaceSelector":{"matchExpressions":[{"key":"kubernetes.io/metadata.name","operator":"NotIn","values":["kube-system","tollgate-system"]},{"key":"tollgate.dev/webhook","operator":"NotIn","values":["ignore"]}]},"matchConditions":[{"name":"opted-in","expression":"has(object.metadata.annotations) && 'tollgate.dev/passport' in object.metadata.annotations"}]}`
// +kubebuilder:rbac:groups=guardrails.tollgate.dev,resources=agentpassports,verbs=get;list;watch

// Injector is the admission handler that wires opted-in pods to the decision endpoint.
type Injector struct {
	cached  client.Reader
	live    client.Reader
	decoder admission.Decoder
	opts    Options
}

var _ admission.Handler = (*Injector)(nil)

// NewInjector returns an injector reading passports from cached (an informer-backed client) and,
// when cached misses or fails, from live (the API server; may be nil).
func NewInjector(cached, live client.Reader, decoder admission.Decoder, opts Options) (*Injector, error) {
	if err := opts.Validate(); err != nil {
		return nil, fmt.Errorf("pod injector: %w", err)
	}
	if cached == nil || decoder == nil {
		return nil, fmt.Errorf("pod injector: a client and a decoder are required")
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	return &Injector{cached: cached, live: live, decoder: decoder, opts: opts}, nil
}

// SetupWithManager registers the injector on mgr's webhook server at Path.
func SetupWithManager(mgr ctrl.Manager, opts Options) error {
	inj, err := NewInjector(mgr.GetClient(), mgr.GetAPIReader(), admission.NewDecoder(mgr.GetScheme()), opts)
	if err != nil {
		return err
	}
	mgr.GetWebhookServer().Register(Path, &webhook.Admission{Handler: inj})
	return nil
}

// Handle admits a pod: pods without tollgate.dev/passport pass untouched; opted-in pods are
// rejected when they may not present the passport, and otherwise wired to the decision endpoint
// (and, with tollgate.dev/mcp-upstreams, given the MCP gateway sidecar: mcp.go).
func (i *Injector) Handle(ctx context.Context, req admission.Request) admission.Response {
	if req.Operation != admissionv1.Create {
		return admission.Allowed("only pod creation is wired")
	}
	pod := &corev1.Pod{}
	if err := i.decoder.Decode(req, pod); err != nil {
		return admission.Errored(http.StatusBadRequest, fmt.Errorf("decoding pod: %w", err))
	}
	name, ok := pod.Annotations[guardrailsv1alpha1.AnnotationPassport]
	if !ok {
		return admission.Allowed("pod does not opt in to Tollgate")
	}
	namespace := req.Namespace
	if namespace == "" {
		namespace = pod.Namespace
	}
	warnings, denial, err := i.bind(ctx, namespace, name, pod)
	if err != nil {
		return admission.Errored(http.StatusInternalServerError, err)
	}
	if denial != "" {
		return admission.Denied(denial)
	}
	original, err := json.Marshal(pod)
	if err != nil {
		return admission.Errored(http.StatusInternalServerError, fmt.Errorf("encoding pod: %w", err))
	}
	w := wiring{url: i.opts.DeciderURL, passport: namespace + "/" + name, expirationSeconds: int64(i.opts.TokenExpiration / time.Second)}
	mcp, wantsMCP, err := parseMCP(pod, i.opts.MCPProxyImage, i.opts.MCPProxyPort)
	if err != nil {
		return admission.Denied("tollgate: " + err.Error())
	}
	if err := inject(pod, w); err != nil {
		return admission.Denied("tollgate: " + err.Error())
	}
	if wantsMCP {
		if err := injectMCP(pod, w, mcp); err != nil {
			return admission.Denied("tollgate: " + err.Error())
		}
	}
	mutated, err := json.Marshal(pod)
	if err != nil {
		return admission.Errored(http.StatusInternalServerError, fmt.Errorf("encoding pod: %w", err))
	}
	// Both sides went through the same struct, so the patch holds only what inject added and is
	// applied by the API server to the pod exactly as submitted.
	return admission.PatchResponseFromRaw(original, mutated).WithWarnings(warnings...)
}

// bind checks that pod may present the passport namespace/name. It returns a denial message when it
// may not, and an error when the passport could not be read.
func (i *Injector) bind(ctx context.Context, namespace, name string, pod *corev1.Pod) (warnings []string, denial string, err error) {
	ref := namespace + "/" + name
	if name == "" {
		return nil, fmt.Sprintf("tollgate: annotation %s is empty; set it to the name of an AgentPassport in namespace %s",
			guardrailsv1alpha1.AnnotationPassport, namespace), nil
	}
	if errs := validation.IsDNS1123Subdomain(name); len(errs) > 0 {
		return nil, fmt.Sprintf("tollgate: annotation %s=%q is not a valid AgentPassport name: %s",
			guardrailsv1alpha1.AnnotationPassport, name, strings.Join(errs, "; ")), nil
	}
	pp, err := i.passport(ctx, types.NamespacedName{Namespace: namespace, Name: name})
	if err != nil {
		return nil, "", err
	}
	if pp == nil {
		return nil, fmt.Sprintf("tollgate: AgentPassport %s does not exist (annotation %s); create it before the pod, or fix the annotation",
			ref, guardrailsv1alpha1.AnnotationPassport), nil
	}
	if pp.Spec.Status == guardrailsv1alpha1.PassportRevoked {
		return nil, fmt.Sprintf("tollgate: AgentPassport %s is revoked; revocation is terminal, so issue a new passport and annotate the pod with it", ref), nil
	}
	sa := serviceAccount(pod)
	if !slices.Contains(pp.Spec.Subjects.ServiceAccounts, sa) {
		listed := "none"
		if len(pp.Spec.Subjects.ServiceAccounts) > 0 {
			listed = strings.Join(pp.Spec.Subjects.ServiceAccounts, ", ")
		}
		return nil, fmt.Sprintf("tollgate: service account %q may not present AgentPassport %s (its spec.subjects.serviceAccounts lists: %s); "+
			"add the service account there or run the pod as a listed one", sa, ref, listed), nil
	}
	if pp.Spec.Status == guardrailsv1alpha1.PassportSuspended {
		warnings = append(warnings, fmt.Sprintf("tollgate: AgentPassport %s is suspended; every call the pod makes is denied until it is active again", ref))
	}
	if pp.Spec.ExpiresAt != nil && !pp.Spec.ExpiresAt.After(i.opts.Now()) {
		warnings = append(warnings, fmt.Sprintf("tollgate: AgentPassport %s expired at %s; every call the pod makes is denied",
			ref, pp.Spec.ExpiresAt.UTC().Format(time.RFC3339)))
	}
	return warnings, "", nil
}

// passport reads the passport from the cache, confirming a miss (or a cache error) against the API
// server so that a passport created just before its pod is found. It returns nil when it does not exist.
func (i *Injector) passport(ctx context.Context, key types.NamespacedName) (*guardrailsv1alpha1.AgentPassport, error) {
	pp := &guardrailsv1alpha1.AgentPassport{}
	err := i.cached.Get(ctx, key, pp)
	if err != nil && i.live != nil {
		err = i.live.Get(ctx, key, pp)
	}
	switch {
	case apierrors.IsNotFound(err):
		return nil, nil
	case err != nil:
		return nil, fmt.Errorf("reading AgentPassport %s: %w", key, err)
	}
	return pp, nil
}

func serviceAccount(pod *corev1.Pod) string {
	switch {
	case pod.Spec.ServiceAccountName != "":
		return pod.Spec.ServiceAccountName
	case pod.Spec.DeprecatedServiceAccount != "":
		return pod.Spec.DeprecatedServiceAccount
	}
	return DefaultServiceAccount
}
