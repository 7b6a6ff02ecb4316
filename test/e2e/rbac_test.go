package e2e

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net/http"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	authorizationv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// authorizationAttributes is what a SelfSubjectAccessReview asks about.
type authorizationAttributes = authorizationv1.ResourceAttributes

// attrs is verb on group/resource in namespace ns ("" for cluster-wide).
func attrs(verb, group, resource, ns string) authorizationAttributes {
	return authorizationAttributes{Verb: verb, Group: group, Resource: resource, Namespace: ns}
}

// sub is a with subresource s.
func sub(a authorizationAttributes, s string) authorizationAttributes {
	a.Subresource = s
	return a
}

// canI asks the API server, as user, whether user may do a (SelfSubjectAccessReview).
func canI(ctx context.Context, user string, a authorizationAttributes) (bool, error) {
	cs, err := kubernetes.NewForConfig(impersonating(suite.admin, user))
	if err != nil {
		return false, fmt.Errorf("client for %s: %w", user, err)
	}
	r, err := cs.AuthorizationV1().SelfSubjectAccessReviews().Create(ctx, &authorizationv1.SelfSubjectAccessReview{
		Spec: authorizationv1.SelfSubjectAccessReviewSpec{ResourceAttributes: &a},
	}, metav1.CreateOptions{})
	if err != nil {
		return false, fmt.Errorf("SelfSubjectAccessReview as %s: %w", user, err)
	}
	return r.Status.Allowed, nil
}

// clientAs is a client acting as user.
func clientAs(user string) client.Client {
	GinkgoHelper()
	c, err := client.New(impersonating(suite.admin, user), client.Options{Scheme: suite.env.Scheme})
	Expect(err).NotTo(HaveOccurred())
	return c
}

// applyRole sets the rules of the Role role names to role's.
func applyRole(ctx context.Context, role *unstructured.Unstructured) {
	GinkgoHelper()
	cur := &unstructured.Unstructured{}
	cur.SetGroupVersionKind(role.GroupVersionKind())
	Expect(suite.c.Get(ctx, client.ObjectKeyFromObject(role), cur)).To(Succeed())
	cur.Object["rules"] = role.DeepCopy().Object["rules"]
	Expect(suite.c.Update(ctx, cur)).To(Succeed())
}

// httpStatus is the status of GET url, or 0 when it cannot be reached.
func httpStatus(ctx context.Context, url string) int {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return 0
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0
	}
	_ = resp.Body.Close()
	return resp.StatusCode
}

// getWithToken GETs url over HTTPS (the manager's self-signed metrics certificate is not verified)
// with bearer token and returns the status and body; 0 when it cannot be reached.
func getWithToken(ctx context.Context, url, token string) (int, string) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return 0, err.Error()
	}
	req.Header.Set("Authorization", "Bearer "+token)
	c := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{
		TLSClientConfig: &tls.Config{InsecureSkipVerify: true}, //nolint:gosec // the manager's metrics certificate is self-signed
	}}
	resp, err := c.Do(req)
	if err != nil {
		return 0, err.Error()
	}
	defer func() { _ = resp.Body.Close() }()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}
