// Package demo runs Tollgate end to end on one machine: an embedded control plane (the envtest
// kube-apiserver and etcd), the operator's controllers and a decision endpoint in-process, the
// sample policies and passports applied, and real decisions shown over HTTP.
package demo

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/duration"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	guardrailsv1alpha1 "github.com/tollgate-dev/tollgate/api/v1alpha1"
	"github.com/tollgate-dev/tollgate/config"
	"github.com/tollgate-dev/tollgate/internal/controller"
	"github.com/tollgate-dev/tollgate/internal/decider"
	"github.com/tollgate-dev/tollgate/internal/envtestsrc"
	"github.com/tollgate-dev/tollgate/internal/manifest"
	"github.com/tollgate-dev/tollgate/internal/policy"
	"github.com/tollgate-dev/tollgate/internal/testenv"
)

// Defaults of Options.
const (
	DefaultAddr              = "127.0.0.1:8080"
	DefaultNamespace         = "default"
	DefaultOperatorNamespace = "tollgate-system"
	// DefaultWaitTimeout bounds each wait for the controllers or the endpoint.
	DefaultWaitTimeout = 90 * time.Second
)

// Options configures Run.
type Options struct {
	// Out receives the demo's narrative; Progress receives build and start-up progress.
	Out, Progress io.Writer
	// Once runs the script and returns instead of serving until ctx is done.
	Once bool
	// Addr is the decision endpoint's listen address (DefaultAddr; port 0 picks a free port).
	Addr string
	// SamplesDir holds the manifests applied (default: config/samples, embedded in the binary).
	SamplesDir string
	// Kubeconfig is where the admin kubeconfig is written (default <tmp>/tollgate-demo/kubeconfig).
	Kubeconfig string
	// Logger receives the controllers' and endpoint's logs (default: discarded).
	Logger logr.Logger
	// WaitTimeout bounds each wait (DefaultWaitTimeout).
	WaitTimeout time.Duration
}

// StepError is a failed demo step.
type StepError struct {
	// Step names the step.
	Step string
	// Err is why it failed.
	Err error
}

// Error returns "step: cause".
func (e *StepError) Error() string { return e.Step + ": " + e.Err.Error() }

// Unwrap returns the cause.
func (e *StepError) Unwrap() error { return e.Err }

// Result is what the script measured, for tests and summaries.
type Result struct {
	// Decisions are the decisions shown, in order.
	Decisions []Shown
	// SuspendToDeny is the time from the suspend patch until the endpoint denied the passport.
	SuspendToDeny time.Duration
	// ResumeToAllow is the time from setting the passport active again until the endpoint allowed it.
	ResumeToAllow time.Duration
	// Endpoint is the endpoint's base URL.
	Endpoint string
	// Kubeconfig is the path of the written kubeconfig.
	Kubeconfig string
}

// Shown is one decision the demo asked for.
type Shown struct {
	// Title says what the call is.
	Title string
	// Decision is the endpoint's answer.
	Decision policy.Decision
	// Latency is the HTTP round trip.
	Latency time.Duration
}

// demo is the state of one run.
type demo struct {
	opts     Options
	out      io.Writer
	step     int
	steps    int
	started  time.Time
	k8s      client.Client
	cfg      *rest.Config
	endpoint string
	http     *http.Client
	wg       *sync.WaitGroup
}

const totalSteps = 8

// Run runs the demo script. With opts.Once it returns after the script; otherwise it keeps the
// control plane, controllers and endpoint running until ctx is done.
func Run(ctx context.Context, opts Options) (*Result, error) {
	if opts.Out == nil {
		opts.Out = io.Discard
	}
	if opts.Progress == nil {
		opts.Progress = io.Discard
	}
	if opts.Addr == "" {
		opts.Addr = DefaultAddr
	}
	if opts.Kubeconfig == "" {
		opts.Kubeconfig = filepath.Join(os.TempDir(), "tollgate-demo", "kubeconfig")
	}
	if opts.WaitTimeout <= 0 {
		opts.WaitTimeout = DefaultWaitTimeout
	}
	if opts.Logger.GetSink() == nil {
		opts.Logger = logr.Discard()
	}
	d := &demo{opts: opts, out: opts.Out, steps: totalSteps, started: time.Now(),
		http: &http.Client{Timeout: 5 * time.Second}}
	return d.run(ctx)
}

func (d *demo) begin(format string, args ...any) time.Time {
	d.step++
	fmt.Fprintf(d.out, "\n[%d/%d] %s\n", d.step, d.steps, fmt.Sprintf(format, args...))
	return time.Now()
}

func (d *demo) done(start time.Time, format string, args ...any) {
	fmt.Fprintf(d.out, "      %s (%s)\n", fmt.Sprintf(format, args...), round(time.Since(start)))
}

func (d *demo) run(ctx context.Context) (*Result, error) {
	res := &Result{}
	// Everything started below stops (and is waited for) before the control plane, so that the API
	// server shuts down without open watches.
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	defer cancel()
	d.wg = &wg

	// 1. Control plane binaries.
	start := d.begin("control plane binaries (kube-apiserver, etcd)")
	assets, built, err := ensureAssets(ctx, d.opts.Progress)
	if err != nil {
		return nil, &StepError{"building the control plane", err}
	}
	if built {
		d.done(start, "built into %s", assets)
	} else {
		d.done(start, "found in %s", assets)
	}

	// 2. Start it with the CRDs.
	start = d.begin("starting kube-apiserver and etcd, installing the CRDs")
	scheme, err := testenv.Scheme()
	if err != nil {
		return nil, &StepError{"starting the control plane", err}
	}
	crds, err := config.CRDs()
	if err != nil {
		return nil, &StepError{"starting the control plane", err}
	}
	env := &envtest.Environment{
		CRDs:                  crds,
		BinaryAssetsDirectory: assets,
		Scheme:                scheme,
	}
	cfg, err := env.Start()
	if err != nil {
		return nil, &StepError{"starting the control plane", fmt.Errorf("%w (binaries in %s; rebuild with `rm -r %s && make envtest`)", err, assets, assets)}
	}
	defer func() {
		cancel()
		wg.Wait()
		if err := env.Stop(); err != nil {
			fmt.Fprintf(d.opts.Progress, "stopping the control plane: %v\n", err)
		}
	}()
	d.done(start, "API server %s; CRDs %s", cfg.Host, strings.Join(crdNames(env), ", "))

	k8s, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		return nil, &StepError{"connecting to the API server", err}
	}
	d.k8s = k8s
	d.cfg = cfg

	// 3. Controllers and endpoint.
	start = d.begin("running the Tollgate controllers and a decision endpoint in-process")
	errc := make(chan error, 3)
	if err := d.startManager(ctx, cfg, scheme, errc); err != nil {
		return nil, &StepError{"starting the controllers", err}
	}
	ln, err := d.startDecider(ctx, cfg, errc)
	if err != nil {
		return nil, &StepError{"starting the decision endpoint", err}
	}
	d.endpoint = "http://" + ln.Addr().String()
	res.Endpoint = d.endpoint
	d.done(start, "controllers writing bundles to namespace %s; decision endpoint on %s", DefaultOperatorNamespace, d.endpoint)
	failed := func() error {
		select {
		case err := <-errc:
			return err
		default:
			return nil
		}
	}

	// 4. Apply the samples.
	start = d.begin("applying %s", d.samplesName())
	objs, err := d.apply(ctx)
	if err != nil {
		return nil, &StepError{"applying the samples", err}
	}
	d.done(start, "applied %d objects", len(objs))

	// 5. Wait for status and the endpoint's bundle, then print like kubectl get.
	start = d.begin("waiting until the controllers report status and the endpoint has the bundle")
	if err := d.waitReconciled(ctx, objs, failed); err != nil {
		return nil, &StepError{"waiting for the controllers", err}
	}
	if err := d.waitDecision(ctx, allowedCall, "allow", failed); err != nil {
		return nil, &StepError{"waiting for the decision endpoint", err}
	}
	d.done(start, "ready")
	if err := d.printStatus(ctx); err != nil {
		return nil, &StepError{"reading status", err}
	}

	// 6. Decisions.
	d.begin("real decisions over HTTP (POST %s/v1/decide)", d.endpoint)
	for _, c := range []struct {
		title string
		req   map[string]any
		want  string
		code  string
	}{
		{"allowed: coding-agent lists files", allowedCall, policy.DecisionAllow, policy.CodeAllowed},
		{"blocked: rm -rf", blockedCall, policy.DecisionDeny, policy.CodeBlockedPattern},
		{"modified: git gets --no-pager, env is dropped", modifiedCall, policy.DecisionModify, ""},
		{"suspended passport: research-agent", suspendedCall, policy.DecisionDeny, policy.CodePassportSuspended},
	} {
		dec, lat, err := d.decide(ctx, c.req)
		if err != nil {
			return nil, &StepError{"asking for a decision (" + c.title + ")", err}
		}
		d.printDecision(c.title, c.req, dec, lat)
		if dec.Decision != c.want || (c.code != "" && (len(dec.Reasons) == 0 || dec.Reasons[0].Code != c.code)) {
			return nil, &StepError{"checking a decision (" + c.title + ")",
				fmt.Errorf("got %s %v, want %s %s", dec.Decision, dec.Reasons, c.want, c.code)}
		}
		res.Decisions = append(res.Decisions, Shown{Title: c.title, Decision: dec, Latency: lat})
	}

	// 7. Kill switch, live.
	d.begin("kill switch: suspending passport coding-agent through the API server")
	fmt.Fprintf(d.out, "      kubectl patch agentpassport coding-agent --type merge -p '{\"spec\":{\"status\":\"suspended\"}}'\n")
	if res.SuspendToDeny, err = d.setStatusAndMeasure(ctx, policy.StatusSuspended, policy.DecisionDeny, failed); err != nil {
		return nil, &StepError{"suspending the passport", err}
	}
	fmt.Fprintf(d.out, "      the endpoint denied coding-agent (%s) %s after the patch\n", policy.CodePassportSuspended, round(res.SuspendToDeny))
	if res.ResumeToAllow, err = d.setStatusAndMeasure(ctx, policy.StatusActive, policy.DecisionAllow, failed); err != nil {
		return nil, &StepError{"re-activating the passport", err}
	}
	fmt.Fprintf(d.out, "      set active again: allowed %s after the patch\n", round(res.ResumeToAllow))

	// 8. Kubeconfig and how to continue.
	d.begin("writing a kubeconfig")
	if err := d.writeKubeconfig(env); err != nil {
		return nil, &StepError{"writing the kubeconfig", err}
	}
	res.Kubeconfig = d.opts.Kubeconfig
	d.printNext()
	fmt.Fprintf(d.out, "\nDemo script finished in %s.\n", round(time.Since(d.started)))
	if d.opts.Once {
		return res, nil
	}
	fmt.Fprintln(d.out, "Serving until Ctrl-C...")
	select {
	case <-ctx.Done():
		fmt.Fprintln(d.out, "\nStopping.")
		return res, nil
	case err := <-errc:
		return res, &StepError{"serving", err}
	}
}

// The demo's requests.
var (
	allowedCall   = map[string]any{"passport": "coding-agent", "tool_name": "bash", "tool_input": map[string]any{"command": "ls -la"}}
	blockedCall   = map[string]any{"passport": "coding-agent", "tool_name": "bash", "tool_input": map[string]any{"command": "ls && rm -rf /"}}
	modifiedCall  = map[string]any{"passport": "coding-agent", "tool_name": "bash", "tool_input": map[string]any{"command": "git log -3", "env": map[string]any{"PAGER": "less"}}}
	suspendedCall = map[string]any{"passport": "research-agent", "tool_name": "web_search", "tool_input": map[string]any{"query": "tollgate"}}
)

// ensureAssets returns the control plane binaries' directory (see assetsDir), building them from
// Go module sources (progress on w) when missing.
func ensureAssets(ctx context.Context, w io.Writer) (string, bool, error) {
	dir, err := assetsDir()
	if err != nil {
		return "", false, err
	}
	if len(envtestsrc.Missing(dir)) == 0 {
		return dir, false, nil
	}
	if os.Getenv("KUBEBUILDER_ASSETS") != "" {
		return "", false, fmt.Errorf("KUBEBUILDER_ASSETS=%s lacks %s", dir, strings.Join(envtestsrc.Missing(dir), " and "))
	}
	fmt.Fprintf(w, "      kube-apiserver and etcd are missing: building them from Go module sources into %s (about 5 minutes the first time)\n", dir)
	if err := envtestsrc.Build(ctx, dir, w); err != nil {
		return "", false, err
	}
	return dir, true, nil
}

// assetsDir is where the control plane binaries are: KUBEBUILDER_ASSETS when set; else bin/k8s of
// the source tree the binary was built from, when it is still there (make demo, go run); else
// Tollgate's directory in the user's cache, so an installed binary works from any directory.
func assetsDir() (string, error) {
	if dir := os.Getenv("KUBEBUILDER_ASSETS"); dir != "" {
		return dir, nil
	}
	if root := testenv.RepoRoot(); fileExists(filepath.Join(root, "internal", "envtestsrc", "envtestsrc.go")) {
		return filepath.Join(root, "bin", "k8s"), nil
	}
	cache, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("no KUBEBUILDER_ASSETS and no user cache directory for kube-apiserver and etcd: %w", err)
	}
	return filepath.Join(cache, "tollgate", "envtest-"+envtestsrc.KubernetesVersion), nil
}

func fileExists(name string) bool {
	_, err := os.Stat(name)
	return err == nil
}

// samples returns the manifests the demo applies: SamplesDir's, or the embedded config/samples.
func (d *demo) samples() (*manifest.Set, error) {
	if d.opts.SamplesDir != "" {
		return manifest.Load(d.opts.SamplesDir)
	}
	files, err := config.Samples()
	if err != nil {
		return nil, err
	}
	set := &manifest.Set{}
	var errs []error
	for _, f := range files {
		errs = append(errs, set.Add(f.Name, f.Data))
	}
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("embedded samples: %w", err)
	}
	return set, set.CheckDuplicates()
}

// samplesName names what samples applies, for the narrative.
func (d *demo) samplesName() string {
	if d.opts.SamplesDir != "" {
		return d.opts.SamplesDir
	}
	return "config/samples (embedded)"
}

func crdNames(env *envtest.Environment) []string {
	names := make([]string, 0, len(env.CRDs))
	for _, c := range env.CRDs {
		names = append(names, c.Name)
	}
	return names
}

func (d *demo) startManager(ctx context.Context, cfg *rest.Config, scheme *runtime.Scheme, errc chan<- error) error {
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:                 scheme,
		Logger:                 d.opts.Logger,
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
	})
	if err != nil {
		return fmt.Errorf("creating the manager: %w", err)
	}
	if err := controller.SetupWithManager(mgr, controller.Options{
		OperatorNamespace: DefaultOperatorNamespace, SkipNameValidation: true,
	}); err != nil {
		return err
	}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: DefaultOperatorNamespace}}
	if err := d.k8s.Create(ctx, ns); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating namespace %s: %w", DefaultOperatorNamespace, err)
	}
	d.wg.Go(func() {
		if err := mgr.Start(ctx); err != nil {
			errc <- fmt.Errorf("the controllers stopped: %w", err)
		}
	})
	return nil
}

func (d *demo) startDecider(ctx context.Context, cfg *rest.Config, errc chan<- error) (net.Listener, error) {
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("creating a clientset: %w", err)
	}
	log := slog.New(logr.ToSlogHandler(d.opts.Logger))
	store := decider.NewStore()
	d.wg.Go(func() {
		if err := decider.WatchBundlesWithLogger(ctx, cs, DefaultOperatorNamespace, store, log); err != nil {
			errc <- fmt.Errorf("the bundle watch stopped: %w", err)
		}
	})
	srv := decider.NewServer(store, decider.Options{DefaultNamespace: DefaultNamespace, Logger: log})
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp", d.opts.Addr)
	if err != nil {
		return nil, fmt.Errorf("listening on %s (choose another with --bind-address): %w", d.opts.Addr, err)
	}
	d.wg.Go(func() {
		if err := srv.Serve(ctx, ln); err != nil {
			errc <- fmt.Errorf("the decision endpoint stopped: %w", err)
		}
	})
	return ln, nil
}

// apply creates (or updates) the sample objects in DefaultNamespace and prints kubectl-like lines.
func (d *demo) apply(ctx context.Context) ([]client.Object, error) {
	set, err := d.samples()
	if err != nil {
		return nil, err
	}
	var objs []client.Object
	for _, o := range set.Objects {
		var obj client.Object
		var resource string
		switch {
		case o.Policy != nil:
			obj, resource = o.Policy.DeepCopy(), "guardrailpolicy.guardrails.tollgate.dev/"
		case o.ClusterPolicy != nil:
			obj, resource = o.ClusterPolicy.DeepCopy(), "clusterguardrailpolicy.guardrails.tollgate.dev/"
		default:
			obj, resource = o.Passport.DeepCopy(), "agentpassport.guardrails.tollgate.dev/"
		}
		verb := "created"
		if err := d.k8s.Create(ctx, obj); err != nil {
			if !apierrors.IsAlreadyExists(err) {
				return nil, fmt.Errorf("%s: %w", o.Source, err)
			}
			// Server-side apply would be nicer; an update of the spec is enough for the demo.
			if err := d.update(ctx, obj); err != nil {
				return nil, fmt.Errorf("%s: %w", o.Source, err)
			}
			verb = "configured"
		}
		fmt.Fprintf(d.out, "      %s%s %s\n", resource, obj.GetName(), verb)
		objs = append(objs, obj)
	}
	return objs, nil
}

func (d *demo) update(ctx context.Context, obj client.Object) error {
	return d.k8s.Patch(ctx, obj, client.Merge)
}

// waitReconciled waits until every object's status reports its current generation with a Ready
// condition.
func (d *demo) waitReconciled(ctx context.Context, objs []client.Object, failed func() error) error {
	return d.poll(ctx, 50*time.Millisecond, failed, func() (bool, string, error) {
		for _, o := range objs {
			fresh := o.DeepCopyObject().(client.Object)
			if err := d.k8s.Get(ctx, client.ObjectKeyFromObject(o), fresh); err != nil {
				return false, "", err
			}
			observed, conds := statusOf(fresh)
			ready := apimeta.FindStatusCondition(conds, guardrailsv1alpha1.ConditionReady)
			if observed != fresh.GetGeneration() || ready == nil || ready.Status == metav1.ConditionUnknown {
				return false, fmt.Sprintf("%s %s has no status for generation %d yet", kindOf(fresh), fresh.GetName(), fresh.GetGeneration()), nil
			}
		}
		return true, "", nil
	})
}

func statusOf(o client.Object) (int64, []metav1.Condition) {
	switch v := o.(type) {
	case *guardrailsv1alpha1.GuardrailPolicy:
		return v.Status.ObservedGeneration, v.Status.Conditions
	case *guardrailsv1alpha1.AgentPassport:
		return v.Status.ObservedGeneration, v.Status.Conditions
	case *guardrailsv1alpha1.ClusterGuardrailPolicy:
		return v.Status.ObservedGeneration, v.Status.Conditions
	}
	return 0, nil
}

func kindOf(o client.Object) string {
	switch o.(type) {
	case *guardrailsv1alpha1.GuardrailPolicy:
		return manifest.KindGuardrailPolicy
	case *guardrailsv1alpha1.ClusterGuardrailPolicy:
		return manifest.KindClusterGuardrailPolicy
	}
	return manifest.KindAgentPassport
}

// waitDecision waits until the endpoint answers req with the wanted decision.
func (d *demo) waitDecision(ctx context.Context, req map[string]any, want string, failed func() error) error {
	return d.poll(ctx, 20*time.Millisecond, failed, func() (bool, string, error) {
		dec, _, err := d.decide(ctx, req)
		if err != nil {
			return false, err.Error(), nil
		}
		if dec.Decision != want {
			return false, fmt.Sprintf("endpoint answers %s %v", dec.Decision, dec.Reasons), nil
		}
		return true, "", nil
	})
}

// poll calls check every interval until it is done, fails, or the wait times out.
func (d *demo) poll(ctx context.Context, interval time.Duration, failed func() error, check func() (bool, string, error)) error {
	deadline := time.Now().Add(d.opts.WaitTimeout)
	last := ""
	for {
		if err := failed(); err != nil {
			return err
		}
		ok, why, err := check()
		if err != nil {
			return err
		}
		if ok {
			return nil
		}
		last = why
		if time.Now().After(deadline) {
			return fmt.Errorf("timed out after %s: %s", d.opts.WaitTimeout, last)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("interrupted: %w", ctx.Err())
		case <-time.After(interval):
		}
	}
}

// decide POSTs req to the endpoint.
func (d *demo) decide(ctx context.Context, req map[string]any) (policy.Decision, time.Duration, error) {
	body, err := json.Marshal(req)
	if err != nil {
		return policy.Decision{}, 0, fmt.Errorf("encoding the request: %w", err)
	}
	hreq, err := http.NewRequestWithContext(ctx, http.MethodPost, d.endpoint+"/v1/decide", bytes.NewReader(body))
	if err != nil {
		return policy.Decision{}, 0, fmt.Errorf("building the request: %w", err)
	}
	hreq.Header.Set("Content-Type", "application/json")
	start := time.Now()
	resp, err := d.http.Do(hreq)
	if err != nil {
		return policy.Decision{}, 0, fmt.Errorf("POST /v1/decide: %w", err)
	}
	defer func() { _ = resp.Body.Close() }()
	data, err := io.ReadAll(resp.Body)
	lat := time.Since(start)
	if err != nil {
		return policy.Decision{}, lat, fmt.Errorf("reading the decision: %w", err)
	}
	if resp.StatusCode != http.StatusOK {
		return policy.Decision{}, lat, fmt.Errorf("POST /v1/decide: HTTP %d: %s", resp.StatusCode, strings.TrimSpace(string(data)))
	}
	var dec policy.Decision
	if err := json.Unmarshal(data, &dec); err != nil {
		return policy.Decision{}, lat, fmt.Errorf("decoding the decision: %w", err)
	}
	return dec, lat, nil
}

func (d *demo) printDecision(title string, req map[string]any, dec policy.Decision, lat time.Duration) {
	fmt.Fprintf(d.out, "\n    %s\n      request:  %s %s %s\n", title, req["passport"], req["tool_name"], compactJSON(req["tool_input"]))
	code, msg := "", ""
	if len(dec.Reasons) > 0 {
		code, msg = dec.Reasons[0].Code, dec.Reasons[0].Message
	}
	fmt.Fprintf(d.out, "      decision: %s  %s  %q", strings.ToUpper(dec.Decision), code, msg)
	if dec.PolicyID != "" {
		fmt.Fprintf(d.out, "  policy %s", dec.PolicyID)
	}
	fmt.Fprintf(d.out, "  (%s)\n", round(lat))
	if dec.ModifiedInput != nil {
		fmt.Fprintf(d.out, "      modified_input: %s\n", compactJSON(dec.ModifiedInput))
	}
}

// setStatusAndMeasure patches coding-agent's spec.status and measures until the endpoint's decision
// for the allowed call becomes want.
func (d *demo) setStatusAndMeasure(ctx context.Context, status, want string, failed func() error) (time.Duration, error) {
	p := &guardrailsv1alpha1.AgentPassport{ObjectMeta: metav1.ObjectMeta{Name: "coding-agent", Namespace: DefaultNamespace}}
	patch := []byte(fmt.Sprintf(`{"spec":{"status":%q}}`, status))
	start := time.Now()
	if err := d.k8s.Patch(ctx, p, client.RawPatch(types.MergePatchType, patch)); err != nil {
		return 0, fmt.Errorf("patching spec.status to %s: %w", status, err)
	}
	var last policy.Decision
	err := d.poll(ctx, 2*time.Millisecond, failed, func() (bool, string, error) {
		dec, _, err := d.decide(ctx, allowedCall)
		if err != nil {
			return false, err.Error(), nil
		}
		last = dec
		return dec.Decision == want, fmt.Sprintf("endpoint still answers %s", dec.Decision), nil
	})
	if err != nil {
		return 0, err
	}
	elapsed := time.Since(start)
	if want == policy.DecisionDeny && (len(last.Reasons) == 0 || last.Reasons[0].Code != policy.CodePassportSuspended) {
		return 0, fmt.Errorf("denied with %v, want %s", last.Reasons, policy.CodePassportSuspended)
	}
	return elapsed, nil
}

// printStatus prints the objects as `kubectl get gp,ap` does: from the API server's own table
// rendering, so the columns are the CRDs' printer columns.
func (d *demo) printStatus(ctx context.Context) error {
	fmt.Fprintf(d.out, "\n    $ kubectl get gp,ap\n")
	// Listing several kinds, kubectl prefixes each name with its kind and group.
	for i, kind := range []struct{ resource, prefix string }{
		{"guardrailpolicies", "guardrailpolicy.guardrails.tollgate.dev/"},
		{"agentpassports", "agentpassport.guardrails.tollgate.dev/"},
	} {
		table, err := d.serverTable(ctx, kind.resource)
		if err != nil {
			return err
		}
		if i > 0 {
			fmt.Fprintln(d.out)
		}
		if err := writeTable(d.out, table, kind.prefix, time.Now()); err != nil {
			return fmt.Errorf("writing status: %w", err)
		}
	}
	return nil
}

// serverTable lists resource in the demo namespace as a meta.k8s.io Table, as kubectl asks for it.
func (d *demo) serverTable(ctx context.Context, resource string) (*metav1.Table, error) {
	hc, err := rest.HTTPClientFor(d.cfg)
	if err != nil {
		return nil, fmt.Errorf("building an API client: %w", err)
	}
	url := strings.TrimSuffix(d.cfg.Host, "/") + "/apis/" + guardrailsv1alpha1.GroupVersion.String() +
		"/namespaces/" + DefaultNamespace + "/" + resource
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, fmt.Errorf("listing %s: %w", resource, err)
	}
	req.Header.Set("Accept", "application/json;as=Table;v=v1;g=meta.k8s.io")
	resp, err := hc.Do(req)
	if err != nil {
		return nil, fmt.Errorf("listing %s: %w", resource, err)
	}
	defer func() { _ = resp.Body.Close() }()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("listing %s: %s", resource, resp.Status)
	}
	var table metav1.Table
	if err := json.NewDecoder(resp.Body).Decode(&table); err != nil {
		return nil, fmt.Errorf("decoding the %s table: %w", resource, err)
	}
	return &table, nil
}

// writeTable prints a server-side table the way kubectl does: columns of priority 0, dates as ages,
// names prefixed with namePrefix.
func writeTable(w io.Writer, table *metav1.Table, namePrefix string, now time.Time) error {
	tw := tabwriter.NewWriter(w, 0, 4, 3, ' ', 0)
	var cols []int
	var header []string
	for i, c := range table.ColumnDefinitions {
		if c.Priority == 0 {
			cols = append(cols, i)
			header = append(header, strings.ToUpper(c.Name))
		}
	}
	fmt.Fprintln(tw, "    "+strings.Join(header, "\t"))
	for _, row := range table.Rows {
		cells := make([]string, 0, len(cols))
		for _, i := range cols {
			var v any
			if i < len(row.Cells) {
				v = row.Cells[i]
			}
			cells = append(cells, formatCell(table.ColumnDefinitions[i], v, now))
		}
		if len(cells) > 0 && table.ColumnDefinitions[cols[0]].Format == "name" {
			cells[0] = namePrefix + cells[0]
		}
		fmt.Fprintln(tw, "    "+strings.Join(cells, "\t"))
	}
	return tw.Flush()
}

func formatCell(col metav1.TableColumnDefinition, v any, now time.Time) string {
	if v == nil {
		return "<none>"
	}
	s := fmt.Sprint(v)
	if col.Type == "date" {
		if t, err := time.Parse(time.RFC3339, s); err == nil {
			return duration.HumanDuration(now.Sub(t))
		}
	}
	return s
}

func (d *demo) writeKubeconfig(env *envtest.Environment) error {
	user, err := env.AddUser(envtest.User{Name: "tollgate-demo", Groups: []string{"system:masters"}}, nil)
	if err != nil {
		return fmt.Errorf("adding an admin user: %w", err)
	}
	data, err := user.KubeConfig()
	if err != nil {
		return fmt.Errorf("rendering the kubeconfig: %w", err)
	}
	if err := os.MkdirAll(filepath.Dir(d.opts.Kubeconfig), 0o700); err != nil {
		return fmt.Errorf("creating the kubeconfig directory: %w", err)
	}
	if err := os.WriteFile(d.opts.Kubeconfig, data, 0o600); err != nil {
		return fmt.Errorf("writing %s: %w", d.opts.Kubeconfig, err)
	}
	fmt.Fprintf(d.out, "      wrote %s\n", d.opts.Kubeconfig)
	return nil
}

func (d *demo) printNext() {
	fmt.Fprintf(d.out, `
Try it (in another terminal, while the demo runs):

  export KUBECONFIG=%s
  kubectl get gp,ap
  kubectl apply -f config/samples/
  kubectl patch agentpassport coding-agent --type merge -p '{"spec":{"status":"suspended"}}'

  curl -s %s/v1/decide -H 'Content-Type: application/json' \
    -d '{"passport":"coding-agent","tool_name":"bash","tool_input":{"command":"ls && rm -rf /"}}'
  curl -s %s/v1/status
`, d.opts.Kubeconfig, d.endpoint, d.endpoint)
}

// compactJSON renders v as one line of JSON without HTML escaping (so `&&` stays readable).
func compactJSON(v any) string {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return fmt.Sprint(v)
	}
	return strings.TrimSpace(b.String())
}

// round shortens a duration for display.
func round(d time.Duration) time.Duration {
	switch {
	case d >= time.Second:
		return d.Round(10 * time.Millisecond)
	case d >= time.Millisecond:
		return d.Round(100 * time.Microsecond)
	}
	return d.Round(time.Microsecond)
}
