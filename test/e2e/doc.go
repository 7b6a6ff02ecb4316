// Package e2e holds Tollgate's end-to-end suite (make e2e): the install objects applied to a real
// kube-apiserver and etcd with RBAC authorization on, and the manager, the webhooks and the decider
// run as separate tollgate processes, each impersonating its own ServiceAccount. The suite is in the
// package's tests; see e2e_suite_test.go.
package e2e
