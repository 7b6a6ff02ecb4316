package controller

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/tollgate-dev/tollgate/internal/testenv"
)

var (
	ctx       context.Context
	cancel    context.CancelFunc
	testEnv   *envtest.Environment
	cfg       *rest.Config
	k8sClient client.Client
	// ctrls are the reconcilers of the manager the suite runs.
	ctrls *Controllers
	// mgrDone receives the manager's exit error.
	mgrDone <-chan error
)

func TestControllers(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "Controller Suite")
}

var _ = BeforeSuite(func() {
	logf.SetLogger(zap.New(zap.WriteTo(GinkgoWriter), zap.UseDevMode(true)))
	ctx, cancel = context.WithCancel(context.TODO())

	By("starting the real kube-apiserver and etcd with Tollgate's CRDs")
	var err error
	testEnv, err = testenv.New()
	Expect(err).NotTo(HaveOccurred(), "the control plane must start; this suite never skips")
	cfg, err = testEnv.Start()
	Expect(err).NotTo(HaveOccurred(), "the control plane must start; this suite never skips")
	Expect(cfg).NotTo(BeNil())

	k8sClient, err = client.New(fastConfig(cfg), client.Options{Scheme: testEnv.Scheme})
	Expect(err).NotTo(HaveOccurred())

	By("running the manager with every Tollgate reconciler")
	ctrls, mgrDone, err = startControllers(ctx, cfg, testEnv.Scheme, DefaultBundleInterval)
	Expect(err).NotTo(HaveOccurred())
})

var _ = AfterSuite(func() {
	By("stopping the control plane")
	cancel()
	if mgrDone != nil {
		Eventually(mgrDone, 30*time.Second).Should(Receive(BeNil()), "the manager must shut down cleanly")
	}
	if testEnv != nil {
		Expect(testEnv.Stop()).To(Succeed())
	}
})
