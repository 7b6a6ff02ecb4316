package webhook_test

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/webhook"

	"github.com/tollgate-dev/tollgate/internal/testenv"
	tgwebhook "github.com/tollgate-dev/tollgate/internal/webhook"
	"github.com/tollgate-dev/tollgate/internal/webhook/pod"
)

// deciderURL is the TOLLGATE_URL the harness's injector writes.
const deciderURL = "http://tollgate-decider.tollgate-system.svc:8080"

// harness is a real kube-apiserver and etcd with Tollgate's CRDs and the generated webhook
// configurations (config/webhook/manifests.yaml) pointing at a manager serving Tollgate's webhooks.
type harness struct {
	env    *envtest.Environment
	cfg    *rest.Config
	client client.Client
	mgr    ctrl.Manager
	cancel context.CancelFunc
	done   chan error
}

// startHarness starts the control plane and the webhook server; it errors (never skips) when the
// control plane cannot start.
func startHarness(logger logr.Logger) (*harness, error) {
	logf.SetLogger(logger)
	env, err := testenv.New()
	if err != nil {
		return nil, fmt.Errorf("preparing envtest: %w", err)
	}
	env.WebhookInstallOptions = envtest.WebhookInstallOptions{
		Paths: []string{filepath.Join(testenv.RepoRoot(), "config", "webhook")},
	}
	cfg, err := env.Start()
	if err != nil {
		return nil, fmt.Errorf("starting the envtest control plane: %w", err)
	}
	h := &harness{env: env, cfg: cfg, done: make(chan error, 1)}
	if err := h.startManager(logger); err != nil {
		return nil, errors.Join(err, env.Stop())
	}
	return h, nil
}

func (h *harness) startManager(logger logr.Logger) error {
	wio := &h.env.WebhookInstallOptions
	mgr, err := ctrl.NewManager(h.cfg, ctrl.Options{
		Scheme:                 h.env.Scheme,
		Logger:                 logger,
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		WebhookServer: tgwebhook.InstrumentServer(webhook.NewServer(webhook.Options{
			Host:    wio.LocalServingHost,
			Port:    wio.LocalServingPort,
			CertDir: wio.LocalServingCertDir,
		})),
	})
	if err != nil {
		return fmt.Errorf("creating the manager: %w", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	h.cancel = cancel
	if err := tgwebhook.Setup(ctx, mgr, tgwebhook.Options{Pod: pod.Options{DeciderURL: deciderURL, TokenExpiration: pod.MinTokenExpiration, MCPProxyImage: mcpProxyImage}}); err != nil {
		cancel()
		return fmt.Errorf("registering webhooks: %w", err)
	}
	go func() { h.done <- mgr.Start(ctx) }()

	addr := net.JoinHostPort(wio.LocalServingHost, strconv.Itoa(wio.LocalServingPort))
	deadline := time.Now().Add(60 * time.Second)
	for {
		conn, err := tls.DialWithDialer(&net.Dialer{Timeout: time.Second}, "tcp", addr, &tls.Config{InsecureSkipVerify: true}) //nolint:gosec // readiness probe only
		if err == nil {
			_ = conn.Close()
			break
		}
		if time.Now().After(deadline) {
			return errors.Join(fmt.Errorf("webhook server at %s did not come up: %w", addr, err), h.stopManager())
		}
		time.Sleep(100 * time.Millisecond)
	}
	if !mgr.GetCache().WaitForCacheSync(ctx) {
		return errors.Join(errors.New("manager cache did not sync"), h.stopManager())
	}
	c, err := client.New(h.cfg, client.Options{Scheme: h.env.Scheme})
	if err != nil {
		return errors.Join(fmt.Errorf("creating a client: %w", err), h.stopManager())
	}
	h.client = c
	h.mgr = mgr
	return nil
}

// stopManager stops the manager and returns what its Start returned.
func (h *harness) stopManager() error {
	h.cancel()
	if err := <-h.done; err != nil {
		return fmt.Errorf("manager: %w", err)
	}
	return nil
}

// stop stops the manager and the control plane.
func (h *harness) stop() error {
	return errors.Join(h.stopManager(), h.env.Stop())
}

// warningClient returns a client whose API warnings are collected.
func (h *harness) warningClient() (client.Client, *warnings, error) {
	w := &warnings{}
	cfg := rest.CopyConfig(h.cfg)
	cfg.WarningHandlerWithContext = w
	c, err := client.New(cfg, client.Options{Scheme: h.env.Scheme})
	if err != nil {
		return nil, nil, fmt.Errorf("creating a client: %w", err)
	}
	return c, w, nil
}

// warnings collects the Warning headers of API responses.
type warnings struct {
	mu   sync.Mutex
	list []string
}

// HandleWarningHeaderWithContext records one warning.
func (w *warnings) HandleWarningHeaderWithContext(_ context.Context, _ int, _ string, text string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.list = append(w.list, text)
}

func (w *warnings) all() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]string(nil), w.list...)
}
