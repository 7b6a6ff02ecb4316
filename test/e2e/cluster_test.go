package e2e

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/tollgate-dev/tollgate/internal/testenv"
)

// Namespaces and names the suite uses. The install objects' own names (ServiceAccounts, Roles) are
// read from the objects, so that they may come from kustomize or from the chart.
const (
	operatorNamespace = "tollgate-system"
	agentsNamespace   = "agents"
	agentSA           = "coding-agent"
)

// serviceAccountUser is the user name of ServiceAccount ns/name.
func serviceAccountUser(ns, name string) string { return "system:serviceaccount:" + ns + ":" + name }

// startControlPlane starts envtest's kube-apiserver and etcd with RBAC authorization and no CRDs:
// the CRDs come with the install objects.
func startControlPlane() (*envtest.Environment, *rest.Config, error) {
	assets, err := testenv.AssetsDir()
	if err != nil {
		return nil, nil, err
	}
	scheme, err := testenv.Scheme()
	if err != nil {
		return nil, nil, err
	}
	if err := apiextensionsv1.AddToScheme(scheme); err != nil {
		return nil, nil, fmt.Errorf("adding apiextensions to the scheme: %w", err)
	}
	env := &envtest.Environment{BinaryAssetsDirectory: assets, Scheme: scheme}
	// envtest's admin user is in system:masters, so setting up works with RBAC on.
	env.ControlPlane.GetAPIServer().Configure().Set("authorization-mode", "RBAC")
	cfg, err := env.Start()
	if err != nil {
		return nil, nil, fmt.Errorf("starting kube-apiserver and etcd: %w", err)
	}
	return env, cfg, nil
}

// applyObjects creates objs in order, waiting for CRDs to be established before what follows them.
func applyObjects(ctx context.Context, c client.Client, objs []*unstructured.Unstructured) error {
	var crds []string
	for _, o := range objs {
		if o.GetKind() != "CustomResourceDefinition" && len(crds) > 0 {
			if err := waitEstablished(ctx, c, crds); err != nil {
				return err
			}
			crds = nil
		}
		if err := c.Create(ctx, o.DeepCopy()); err != nil {
			return fmt.Errorf("creating %s %s/%s: %w", o.GetKind(), o.GetNamespace(), o.GetName(), err)
		}
		if o.GetKind() == "CustomResourceDefinition" {
			crds = append(crds, o.GetName())
		}
	}
	return nil
}

// waitEstablished waits until every named CRD is Established.
func waitEstablished(ctx context.Context, c client.Client, names []string) error {
	for _, name := range names {
		err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
			var crd apiextensionsv1.CustomResourceDefinition
			if err := c.Get(ctx, client.ObjectKey{Name: name}, &crd); err != nil {
				return false, fmt.Errorf("reading CRD %s: %w", name, err)
			}
			for _, cond := range crd.Status.Conditions {
				if cond.Type == apiextensionsv1.Established && cond.Status == apiextensionsv1.ConditionTrue {
					return true, nil
				}
			}
			return false, nil
		})
		if err != nil {
			return fmt.Errorf("CRD %s not established: %w", name, err)
		}
	}
	return nil
}

// callWebhooksByURL rewrites a webhook configuration's clientConfigs from the in-cluster Service to
// https://addr/<path>, trusting caPEM: the API server calls the webhook process on loopback.
func callWebhooksByURL(obj *unstructured.Unstructured, addr string, caPEM []byte) error {
	hooks, ok, err := unstructured.NestedSlice(obj.Object, "webhooks")
	if err != nil || !ok {
		return fmt.Errorf("%s %s has no webhooks: %v", obj.GetKind(), obj.GetName(), err)
	}
	for i, h := range hooks {
		hook, ok := h.(map[string]any)
		if !ok {
			return fmt.Errorf("%s %s: webhook %d is not an object", obj.GetKind(), obj.GetName(), i)
		}
		path, _, _ := unstructured.NestedString(hook, "clientConfig", "service", "path")
		if path == "" {
			return fmt.Errorf("%s %s: webhook %d calls no service path", obj.GetKind(), obj.GetName(), i)
		}
		hook["clientConfig"] = map[string]any{
			"url":      "https://" + addr + path,
			"caBundle": caBundle(caPEM),
		}
		hooks[i] = hook
	}
	if err := unstructured.SetNestedSlice(obj.Object, hooks, "webhooks"); err != nil {
		return fmt.Errorf("%s %s: %w", obj.GetKind(), obj.GetName(), err)
	}
	return nil
}

// webhookCerts writes a fresh CA and a serving certificate for 127.0.0.1 and localhost into dir as
// tls.crt and tls.key (the webhook server's defaults) and returns the CA certificate (PEM).
func webhookCerts(dir string) ([]byte, error) {
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("generating the CA key: %w", err)
	}
	now := time.Now()
	caTmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "tollgate-e2e-webhook-ca"},
		NotBefore:             now.Add(-time.Minute),
		NotAfter:              now.Add(24 * time.Hour),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		return nil, fmt.Errorf("signing the CA certificate: %w", err)
	}
	ca, err := x509.ParseCertificate(caDER)
	if err != nil {
		return nil, fmt.Errorf("parsing the CA certificate: %w", err)
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("generating the serving key: %w", err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(2),
		Subject:      pkix.Name{CommonName: "tollgate-webhook-service.tollgate-system.svc"},
		NotBefore:    now.Add(-time.Minute),
		NotAfter:     now.Add(24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		DNSNames:     []string{"localhost"},
		IPAddresses:  []net.IP{net.IPv4(127, 0, 0, 1)},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		return nil, fmt.Errorf("signing the serving certificate: %w", err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return nil, fmt.Errorf("encoding the serving key: %w", err)
	}
	if err := os.WriteFile(filepath.Join(dir, "tls.crt"), pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		return nil, fmt.Errorf("writing the serving certificate: %w", err)
	}
	if err := os.WriteFile(filepath.Join(dir, "tls.key"), pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}), 0o600); err != nil {
		return nil, fmt.Errorf("writing the serving key: %w", err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER}), nil
}

// caBundle is caPEM as a webhook clientConfig.caBundle holds it in unstructured form (base64).
func caBundle(caPEM []byte) string {
	return base64.StdEncoding.EncodeToString(caPEM)
}

// impersonatingKubeconfig writes a kubeconfig that reaches the API server of admin with admin's
// client certificate and impersonates user (with the user extra fields extra, as a pod-bound token
// carries authentication.kubernetes.io/pod-name): the component then has exactly the rights RBAC
// grants user.
func impersonatingKubeconfig(path string, admin *rest.Config, user string, extra map[string][]string) error {
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["e2e"] = &clientcmdapi.Cluster{Server: admin.Host, CertificateAuthorityData: admin.CAData}
	cfg.AuthInfos["as"] = &clientcmdapi.AuthInfo{
		ClientCertificateData: admin.CertData,
		ClientKeyData:         admin.KeyData,
		Impersonate:           user,
		ImpersonateUserExtra:  extra,
	}
	cfg.Contexts["e2e"] = &clientcmdapi.Context{Cluster: "e2e", AuthInfo: "as"}
	cfg.CurrentContext = "e2e"
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		return fmt.Errorf("writing kubeconfig %s: %w", path, err)
	}
	return nil
}

// impersonating returns a copy of admin that acts as user.
func impersonating(admin *rest.Config, user string) *rest.Config {
	cfg := rest.CopyConfig(admin)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: user}
	return cfg
}

// freeAddr returns a loopback address with a port free at the time of the call.
func freeAddr() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", fmt.Errorf("finding a free port: %w", err)
	}
	addr := l.Addr().String()
	if err := l.Close(); err != nil {
		return "", fmt.Errorf("finding a free port: %w", err)
	}
	return addr, nil
}
