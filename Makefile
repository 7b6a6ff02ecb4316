# Tollgate Makefile (kubebuilder layout). Every tool is pinned and installed into bin/ from the Go
# module proxy; the envtest control plane is built from Go module sources when it is missing.

IMG ?= ghcr.io/tollgate-dev/tollgate:latest
CONTAINER_TOOL ?= docker

# Pinned tool versions (each asks for Go <= 1.26).
CONTROLLER_TOOLS_VERSION ?= v0.23.0
KUSTOMIZE_VERSION ?= v5.8.2
GOLANGCI_LINT_VERSION ?= v2.15.0

LOCALBIN ?= $(shell pwd)/bin
CONTROLLER_GEN ?= $(LOCALBIN)/controller-gen
KUSTOMIZE ?= $(LOCALBIN)/kustomize
GOLANGCI_LINT ?= $(LOCALBIN)/golangci-lint

# KUBEBUILDER_ASSETS: the envtest kube-apiserver and etcd. When unset, hack/envtest.sh builds them
# from module sources into bin/k8s/ (cached).
ENVTEST_DIR ?= $(LOCALBIN)/k8s

SHELL = /usr/bin/env bash -o pipefail
.SHELLFLAGS = -ec

.PHONY: all
all: build

##@ General

.PHONY: help
help: ## Display this help.
	@awk 'BEGIN {FS = ":.*##"; printf "\nUsage:\n  make \033[36m<target>\033[0m\n"} /^[a-zA-Z_0-9-]+:.*?##/ { printf "  \033[36m%-18s\033[0m %s\n", $$1, $$2 } /^##@/ { printf "\n\033[1m%s\033[0m\n", substr($$0, 5) } ' $(MAKEFILE_LIST)

##@ Development

.PHONY: manifests
manifests: controller-gen ## Generate CRDs, RBAC and webhook manifests from the markers.
	$(CONTROLLER_GEN) rbac:roleName=manager-role crd webhook paths="./..." output:crd:artifacts:config=config/crd/bases

.PHONY: generate
generate: controller-gen ## Generate DeepCopy methods.
	$(CONTROLLER_GEN) object:headerFile="hack/boilerplate.go.txt" paths="./..."

.PHONY: fmt
fmt: ## Run go fmt.
	go fmt ./...

.PHONY: vet
vet: ## Run go vet.
	go vet ./...

.PHONY: lint
lint: golangci-lint ## Run golangci-lint.
	$(GOLANGCI_LINT) run ./...

.PHONY: envtest
envtest: ## Build (once) the envtest kube-apiserver and etcd into bin/k8s.
	@hack/envtest.sh "$(ENVTEST_DIR)" >/dev/null

.PHONY: promtool
promtool: ## Build (once) promtool, the alert rules' test engine, into bin/ (hack/promtool.sh; TestAlertRules builds it when missing).
	@hack/promtool.sh >/dev/null

.PHONY: test
test: test-go test-python test-typescript ## Every test: Go (envtest suites included), then the Python and TypeScript SDKs.

.PHONY: test-go
test-go: ## Build the control plane if needed, then run every Go test (envtest suites included).
	@assets="$${KUBEBUILDER_ASSETS:-$$(hack/envtest.sh "$(ENVTEST_DIR)")}"; \
	echo "KUBEBUILDER_ASSETS=$$assets"; \
	KUBEBUILDER_ASSETS="$$assets" hack/test.sh

.PHONY: test-python
test-python: ## The Python SDK and its adapters against a real tollgate serve (pinned venv in bin/).
	hack/test-python.sh

.PHONY: test-typescript
test-typescript: ## The TypeScript SDK and its adapters against a real tollgate serve (npm ci from the lock).
	hack/test-typescript.sh

.PHONY: verify
verify: manifests generate ## Fail when generated files drift from the types.
	@if [ -n "$$(git status --porcelain -- api config)" ]; then \
		echo "generated files are out of date; run 'make manifests generate' and commit:"; \
		git status --porcelain -- api config; git --no-pager diff -- api config | head -50; exit 1; fi

# BENCH_FLAGS are passed to the benchmark, e.g. BENCH_FLAGS="-readme README.md" to rewrite the README's
# performance section, or "-runs 3 -only engine,http" (go run ./bench/cmd/bench -h lists them).
BENCH_FLAGS ?=

.PHONY: bench
bench: ## Measure Tollgate end to end and print the table (bench/results.json).
	@assets="$${KUBEBUILDER_ASSETS:-$$(hack/envtest.sh "$(ENVTEST_DIR)")}"; \
	KUBEBUILDER_ASSETS="$$assets" go run ./bench/cmd/bench $(BENCH_FLAGS)

.PHONY: demo
demo: ## Run the local demo on an embedded control plane.
	@assets="$${KUBEBUILDER_ASSETS:-$$(hack/envtest.sh "$(ENVTEST_DIR)")}"; \
	KUBEBUILDER_ASSETS="$$assets" go run ./cmd/tollgate demo

##@ Build

.PHONY: build
build: ## Build the tollgate binary.
	go build -o bin/tollgate ./cmd/tollgate

.PHONY: run
run: manifests generate ## Run the manager against the cluster in the current kubeconfig.
	go run ./cmd/tollgate manager

.PHONY: docker-build
docker-build: ## Build the container image.
	$(CONTAINER_TOOL) build -t $(IMG) .

.PHONY: docker-push
docker-push: ## Push the container image.
	$(CONTAINER_TOOL) push $(IMG)

.PHONY: build-installer
build-installer: manifests generate kustomize ## Write dist/install.yaml with every resource.
	mkdir -p dist
	cd config/manager && $(KUSTOMIZE) edit set image controller=$(IMG)
	$(KUSTOMIZE) build config/default > dist/install.yaml

##@ Deployment

ifndef ignore-not-found
  ignore-not-found = false
endif

.PHONY: install
install: manifests kustomize ## Install the CRDs into the cluster in the current kubeconfig.
	$(KUSTOMIZE) build config/crd | kubectl apply -f -

.PHONY: uninstall
uninstall: manifests kustomize ## Remove the CRDs.
	$(KUSTOMIZE) build config/crd | kubectl delete --ignore-not-found=$(ignore-not-found) -f -

.PHONY: deploy
deploy: manifests kustomize ## Deploy Tollgate to the cluster in the current kubeconfig.
	cd config/manager && $(KUSTOMIZE) edit set image controller=$(IMG)
	$(KUSTOMIZE) build config/default | kubectl apply -f -

.PHONY: undeploy
undeploy: kustomize ## Remove Tollgate from the cluster.
	$(KUSTOMIZE) build config/default | kubectl delete --ignore-not-found=$(ignore-not-found) -f -

##@ Tools

.PHONY: controller-gen
controller-gen: $(CONTROLLER_GEN)
$(CONTROLLER_GEN): | $(LOCALBIN)
	$(call go-install-tool,$(CONTROLLER_GEN),sigs.k8s.io/controller-tools/cmd/controller-gen,$(CONTROLLER_TOOLS_VERSION))

.PHONY: kustomize
kustomize: $(KUSTOMIZE)
$(KUSTOMIZE): | $(LOCALBIN)
	$(call go-install-tool,$(KUSTOMIZE),sigs.k8s.io/kustomize/kustomize/v5,$(KUSTOMIZE_VERSION))

.PHONY: golangci-lint
golangci-lint: $(GOLANGCI_LINT)
$(GOLANGCI_LINT): | $(LOCALBIN)
	$(call go-install-tool,$(GOLANGCI_LINT),github.com/golangci/golangci-lint/v2/cmd/golangci-lint,$(GOLANGCI_LINT_VERSION))

$(LOCALBIN):
	mkdir -p $(LOCALBIN)

# go-install-tool installs a pinned Go tool into bin/ as name-version with a stable symlink.
define go-install-tool
@[ -f "$(1)-$(3)" ] && [ "$$(readlink -- "$(1)" 2>/dev/null)" = "$$(basename "$(1)-$(3)")" ] || { \
set -e; \
echo "Installing $(2)@$(3)"; \
rm -f "$(1)"; \
GOBIN="$(LOCALBIN)" go install $(2)@$(3); \
mv "$(LOCALBIN)/$$(basename "$(1)")" "$(1)-$(3)"; \
ln -sf "$$(basename "$(1)-$(3)")" "$(1)"; \
}
endef
