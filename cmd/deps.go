package main

import (
	_ "github.com/fluxcd/cli-utils/pkg/kstatus/status"
	_ "github.com/fsnotify/fsnotify"
	_ "github.com/google/cel-go/cel"
	_ "github.com/gowebpki/jcs"
	_ "github.com/onsi/ginkgo/v2"
	_ "github.com/onsi/gomega"
	_ "github.com/open-policy-agent/cert-controller/pkg/rotator"
	_ "github.com/prometheus/client_golang/prometheus"
	_ "k8s.io/client-go/kubernetes"
	_ "sigs.k8s.io/controller-runtime"
	_ "sigs.k8s.io/controller-runtime/pkg/envtest"
	_ "sigs.k8s.io/yaml"
)

func main() {}
