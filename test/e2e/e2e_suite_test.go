package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/tollgate-dev/tollgate/internal/testenv"
)

// TestE2E runs the end-to-end suite (make e2e; go test ./... runs it too). It always prints each
// step (verbose reporter).
func TestE2E(t *testing.T) {
	RegisterFailHandler(Fail)
	logf.SetLogger(zap.New(zap.WriteTo(GinkgoWriter)))
	suiteConfig, reporterConfig := GinkgoConfiguration()
	reporterConfig.Verbose = true
	RunSpecs(t, "Tollgate end-to-end suite (RBAC on, separate processes)", suiteConfig, reporterConfig)
}

// suite is what BeforeSuite sets up.
var suite struct {
	started  time.Time
	root     string
	dir      string
	bin      string
	env      *envtest.Environment
	admin    *rest.Config
	c        client.Client
	cs       kubernetes.Interface
	objects  []*unstructured.Unstructured // every install object, as rendered
	caPEM    []byte
	certDir  string
	webhook  string // host:port of the webhook server
	decider  component
	manager  component
	webhooks component
	procs    []*process
	files    []*os.File
	failed   bool // a spec failed: keep the work directory (logs, kubeconfigs)
}

// component is how one tollgate process is run: its arguments, kubeconfig and probe.
type component struct {
	name           string
	serviceAccount string
	kubeconfig     string
	args           []string
	probe          string // URL answering 200 once ready
	addr           string // the decider's host:port
	metrics        string // the manager's secure metrics URL
	env            []string
	proc           *process
}

var _ = BeforeSuite(func(ctx SpecContext) {
	suite.started = time.Now()
	suite.root = testenv.RepoRoot()
	var err error
	suite.dir, err = os.MkdirTemp("", "tollgate-e2e-")
	Expect(err).NotTo(HaveOccurred())

	By("rendering the install objects: " + installSource)
	suite.objects, err = installObjects()
	Expect(err).NotTo(HaveOccurred())

	By("building bin/tollgate (go build ./cmd/tollgate)")
	suite.bin, err = buildTollgate(suite.root, suite.dir)
	Expect(err).NotTo(HaveOccurred())

	By("starting kube-apiserver and etcd with --authorization-mode=RBAC")
	suite.env, suite.admin, err = startControlPlane()
	Expect(err).NotTo(HaveOccurred(), "the envtest control plane must start (this suite never skips)")
	suite.c, err = client.New(suite.admin, client.Options{Scheme: suite.env.Scheme})
	Expect(err).NotTo(HaveOccurred())
	suite.cs, err = kubernetes.NewForConfig(suite.admin)
	Expect(err).NotTo(HaveOccurred())

	By("generating a CA and the webhook serving certificate for 127.0.0.1")
	suite.certDir = filepath.Join(suite.dir, "webhook-certs")
	Expect(os.MkdirAll(suite.certDir, 0o700)).To(Succeed())
	suite.caPEM, err = webhookCerts(suite.certDir)
	Expect(err).NotTo(HaveOccurred())
	suite.webhook, err = freeAddr()
	Expect(err).NotTo(HaveOccurred())

	apply, skipped := applicable(suite.objects)
	for _, o := range apply {
		if k := o.GetKind(); k == "MutatingWebhookConfiguration" || k == "ValidatingWebhookConfiguration" {
			Expect(callWebhooksByURL(o, suite.webhook, suite.caPEM)).To(Succeed())
		}
	}
	By(fmt.Sprintf("applying %d install objects (webhooks called by URL on %s); not applied: %s",
		len(apply), suite.webhook, describe(skipped)))
	if findObject(apply, "Namespace", operatorNamespace) == nil {
		By("creating namespace " + operatorNamespace + " (the install objects hold none, as helm install --create-namespace)")
		Expect(suite.c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: operatorNamespace}})).To(Succeed())
	}
	Expect(applyObjects(ctx, suite.c, apply)).To(Succeed())

	By("preparing the decider, the manager (controllers) and the webhooks as separate processes")
	suite.decider = deciderComponent("decider")
	suite.manager = managerComponent()
	suite.webhooks = webhooksComponent()
	for _, comp := range []*component{&suite.decider, &suite.manager, &suite.webhooks} {
		By(fmt.Sprintf("starting %s as %s", comp.name, serviceAccountUser(operatorNamespace, comp.serviceAccount)))
		startComponent(ctx, comp)
	}
}, NodeTimeout(4*time.Minute))

var _ = AfterSuite(func() {
	for _, p := range suite.procs {
		if err := p.stop(); err != nil {
			fmt.Fprintln(GinkgoWriter, err)
		}
	}
	for _, f := range suite.files {
		_ = f.Close()
	}
	if suite.env != nil {
		Expect(suite.env.Stop()).To(Succeed())
	}
	switch {
	case suite.dir == "":
	case suite.failed:
		fmt.Fprintf(os.Stdout, "e2e: process logs and kubeconfigs kept in %s\n", suite.dir)
	default:
		_ = os.RemoveAll(suite.dir)
	}
	if !suite.started.IsZero() {
		fmt.Fprintf(os.Stdout, "e2e: wall time %s\n", time.Since(suite.started).Round(100*time.Millisecond))
	}
})

// On failure, attach the tail of every process's output to the report.
var _ = JustAfterEach(func() {
	if !CurrentSpecReport().Failed() {
		return
	}
	suite.failed = true
	for _, p := range suite.procs {
		AddReportEntry("output of "+p.name, tail(p.log.String(), 60))
	}
})

// describe lists objects as Kind/name.
func describe(objs []*unstructured.Unstructured) string {
	var parts []string
	for _, o := range objs {
		parts = append(parts, o.GetKind()+"/"+o.GetName())
	}
	return strings.Join(parts, ", ")
}

// tail returns the last n lines of s.
func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
