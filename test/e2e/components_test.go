package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// workload is what a Deployment of the install objects runs: its ServiceAccount, namespace and the
// tollgate arguments of its first container, with $(POD_NAMESPACE) expanded as the kubelet would.
type workload struct {
	serviceAccount string
	namespace      string
	args           []string
}

// deploymentWorkload reads the workload of the Deployment of the install objects that runs
// `tollgate <subcommand>`.
func deploymentWorkload(objs []*unstructured.Unstructured, subcommand string) (workload, error) {
	var d *unstructured.Unstructured
	for _, o := range objs {
		if o.GetKind() != "Deployment" {
			continue
		}
		containers, _, _ := unstructured.NestedSlice(o.Object, "spec", "template", "spec", "containers")
		if len(containers) == 0 {
			continue
		}
		if c, ok := containers[0].(map[string]any); ok {
			if args, _, _ := unstructured.NestedStringSlice(c, "args"); len(args) > 0 && args[0] == subcommand {
				d = o
				break
			}
		}
	}
	if d == nil {
		return workload{}, fmt.Errorf("no Deployment of the install objects runs tollgate %s", subcommand)
	}
	name := d.GetName()
	w := workload{namespace: d.GetNamespace()}
	w.serviceAccount, _, _ = unstructured.NestedString(d.Object, "spec", "template", "spec", "serviceAccountName")
	if w.serviceAccount == "" {
		return workload{}, fmt.Errorf("Deployment %s names no serviceAccountName", name)
	}
	containers, _, _ := unstructured.NestedSlice(d.Object, "spec", "template", "spec", "containers")
	if len(containers) == 0 {
		return workload{}, fmt.Errorf("Deployment %s has no containers", name)
	}
	c, ok := containers[0].(map[string]any)
	if !ok {
		return workload{}, fmt.Errorf("Deployment %s: container 0 is not an object", name)
	}
	args, _, _ := unstructured.NestedStringSlice(c, "args")
	for _, a := range args {
		w.args = append(w.args, strings.ReplaceAll(a, "$(POD_NAMESPACE)", w.namespace))
	}
	return w, nil
}

// newComponent prepares a process running the arguments of the Deployment that runs `tollgate
// <subcommand>` followed by extra (later flags win), with a kubeconfig impersonating the
// Deployment's ServiceAccount.
//
// The process runs as pod tollgate-<name>-e2e (POD_NAME, POD_NAMESPACE), and its impersonated user
// carries that pod name as a pod-bound ServiceAccount token does (the decider's DeciderReport is
// named after its pod, and an admission policy checks the writer's pod name).
func newComponent(name, subcommand string, extra ...string) component {
	GinkgoHelper()
	w, err := deploymentWorkload(suite.objects, subcommand)
	Expect(err).NotTo(HaveOccurred())
	Expect(w.namespace).To(Equal(operatorNamespace))
	pod := "tollgate-" + name + "-e2e"
	kubeconfig := filepath.Join(suite.dir, name+".kubeconfig")
	Expect(impersonatingKubeconfig(kubeconfig, suite.admin, serviceAccountUser(w.namespace, w.serviceAccount),
		map[string][]string{"authentication.kubernetes.io/pod-name": {pod}})).To(Succeed())
	return component{
		name:           name,
		serviceAccount: w.serviceAccount,
		kubeconfig:     kubeconfig,
		args:           append(append(w.args, "--kubeconfig="+kubeconfig), extra...),
		env:            []string{"POD_NAMESPACE=" + operatorNamespace, "POD_NAME=" + pod},
	}
}

// deciderComponent is `tollgate decider` as config/decider runs it, on a loopback port.
func deciderComponent(name string) component {
	GinkgoHelper()
	addr, err := freeAddr()
	Expect(err).NotTo(HaveOccurred())
	c := newComponent(name, "decider", "--bind-address="+addr, "--shutdown-timeout=1s")
	c.addr = addr
	c.probe = "http://" + addr + "/healthz"
	return c
}

// managerComponent is `tollgate manager` as config/manager runs it (leader election included,
// secure metrics authorized through the API server), with the controllers only.
func managerComponent() component {
	GinkgoHelper()
	probe, err := freeAddr()
	Expect(err).NotTo(HaveOccurred())
	metrics, err := freeAddr()
	Expect(err).NotTo(HaveOccurred())
	c := newComponent("manager", "manager", "--enable-webhooks=false",
		"--health-probe-bind-address="+probe, "--metrics-bind-address="+metrics)
	Expect(c.args).To(ContainElement("--leader-elect"))
	c.probe = "http://" + probe + "/readyz"
	c.metrics = "https://" + metrics + "/metrics"
	return c
}

// webhooksComponent is the same `tollgate manager` with the webhooks only, serving the generated
// certificate on the port the webhook configurations call.
func webhooksComponent() component {
	GinkgoHelper()
	probe, err := freeAddr()
	Expect(err).NotTo(HaveOccurred())
	port := suite.webhook[strings.LastIndex(suite.webhook, ":")+1:]
	c := newComponent("webhooks", "manager", "--enable-controllers=false", "--leader-elect=false",
		"--webhook-port="+port, "--webhook-cert-path="+suite.certDir,
		"--decider-url=http://"+suite.decider.addr,
		"--health-probe-bind-address="+probe, "--metrics-bind-address=0")
	c.probe = "http://" + probe + "/readyz"
	return c
}

// startComponent starts comp's process and waits for its probe.
func startComponent(ctx context.Context, comp *component) {
	GinkgoHelper()
	logFile, err := os.OpenFile(filepath.Join(suite.dir, comp.name+".log"), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
	Expect(err).NotTo(HaveOccurred())
	suite.files = append(suite.files, logFile)
	comp.proc, err = startProcess(comp.name, suite.bin, logFile, comp.env, comp.args...)
	Expect(err).NotTo(HaveOccurred())
	suite.procs = append(suite.procs, comp.proc)
	Expect(comp.proc.waitHTTP(ctx, comp.probe, 60*time.Second)).To(Succeed())
}
