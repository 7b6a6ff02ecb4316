// Package reports is the acceptance suite of decider reports: a manager and two decision-endpoint
// replicas (the decider's own code paths: bundle watch, Store, HTTP Server, Reporter, Signer) on a
// real kube-apiserver and etcd, over loopback HTTP.
package reports

import (
	"context"
	"io"
	"log/slog"
	"net/http/httptest"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/tollgate-dev/tollgate/internal/controller"
	"github.com/tollgate-dev/tollgate/internal/decider"
	"github.com/tollgate-dev/tollgate/internal/testenv"
)

const (
	operatorNS = "tollgate-system"
	teamNS     = "team-r"
)

var (
	ctx       context.Context
	cancel    context.CancelFunc
	testEnv   *envtest.Environment
	cfg       *rest.Config
	k8sClient client.Client
	clientset kubernetes.Interface
	mgrDone   chan error
	replicas  []*replica
	signKeys  decider.JWKS
)

// replica is one decision endpoint: its store fed by its own bundle watch (which the suite can
// pause), its reporter and its HTTP server.
type replica struct {
	name      string
	store     *decider.Store
	reporter  *decider.Reporter
	server    *httptest.Server
	stopWatch context.CancelFunc
	watchDone chan struct{}
}

func TestReports(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "Decider reports suite")
}

func quietLog() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// watch starts (again) the replica's bundle watch.
func (r *replica) watch() {
	wctx, stop := context.WithCancel(ctx)
	done := make(chan struct{})
	r.stopWatch, r.watchDone = stop, done
	go func() {
		defer close(done)
		defer GinkgoRecover()
		Expect(decider.WatchBundlesWithLogger(wctx, clientset, operatorNS, r.store, quietLog())).To(Succeed())
	}()
}

// pause stops the replica's bundle watch: it keeps serving the bundle it holds.
func (r *replica) pause() {
	r.stopWatch()
	Eventually(r.watchDone, 10*time.Second).Should(BeClosed())
}

var _ = BeforeSuite(func() {
	logf.SetLogger(zap.New(zap.WriteTo(GinkgoWriter), zap.UseDevMode(true)))
	ctx, cancel = context.WithCancel(context.Background())

	By("starting the real kube-apiserver and etcd with Tollgate's CRDs")
	var err error
	testEnv, err = testenv.New()
	Expect(err).NotTo(HaveOccurred(), "the control plane must start; this suite never skips")
	cfg, err = testEnv.Start()
	Expect(err).NotTo(HaveOccurred(), "the control plane must start; this suite never skips")
	fast := rest.CopyConfig(cfg)
	fast.QPS, fast.Burst = 1000, 2000
	k8sClient, err = client.New(fast, client.Options{Scheme: testEnv.Scheme})
	Expect(err).NotTo(HaveOccurred())
	clientset, err = kubernetes.NewForConfig(fast)
	Expect(err).NotTo(HaveOccurred())
	for _, ns := range []string{operatorNS, teamNS} {
		Expect(k8sClient.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})).To(Succeed())
	}

	By("running the manager with decider reports on")
	mgr, err := ctrl.NewManager(fast, ctrl.Options{Scheme: testEnv.Scheme,
		Metrics: metricsserver.Options{BindAddress: "0"}, HealthProbeBindAddress: "0"})
	Expect(err).NotTo(HaveOccurred())
	_, err = controller.Setup(mgr, controller.Options{OperatorNamespace: operatorNS, DeciderReports: true,
		MaxConcurrentReconciles: 4, SkipNameValidation: true})
	Expect(err).NotTo(HaveOccurred())
	mgrDone = make(chan error, 1)
	go func() { mgrDone <- mgr.Start(ctx) }()

	By("running two decider replicas on loopback, both signing with one key set")
	key, err := decider.GenerateKey("2026-11")
	Expect(err).NotTo(HaveOccurred())
	signKeys = decider.JWKS{Keys: []decider.JWK{key}}
	for _, name := range []string{"decider-a", "decider-b"} {
		r := &replica{name: name, store: decider.NewStore()}
		signer, err := decider.NewSigner(signKeys)
		Expect(err).NotTo(HaveOccurred())
		r.reporter = decider.NewReporter(r.store, decider.ReporterOptions{Client: k8sClient, Namespace: operatorNS, Name: name,
			Interval: time.Second, MinGap: 100 * time.Millisecond, Logger: quietLog()})
		srv := decider.NewServer(r.store, decider.Options{Reporter: r.reporter, Signer: signer, Logger: quietLog()})
		r.server = httptest.NewServer(srv)
		r.watch()
		go func() {
			defer GinkgoRecover()
			Expect(r.reporter.Run(ctx)).To(Succeed())
		}()
		replicas = append(replicas, r)
	}
})

var _ = AfterSuite(func() {
	for _, r := range replicas {
		r.server.Close()
	}
	if cancel != nil {
		cancel()
	}
	if mgrDone != nil {
		Eventually(mgrDone, 30*time.Second).Should(Receive(BeNil()), "the manager must shut down cleanly")
	}
	if testEnv != nil {
		Expect(testEnv.Stop()).To(Succeed())
	}
})
