# mgr-webhook: admission webhook + bootstrap controller for Ceph mgr Deployments.
SHELL := /usr/bin/env bash -o pipefail
.SHELLFLAGS := -ec

BIN        ?= $(CURDIR)/bin
GO         ?= go
# The real Kubernetes binaries, built once into a cache outside the repo.
ASSETS      = $(shell ./hack/build-binaries.sh | tail -n1)
TEST_FLAGS ?= -count=1 -timeout=20m

# The version every binary and image reports (--version, the first log line,
# mgr_webhook_build_info): git describe, e.g. v0.1.0-12-g1a2b3c4.
VERSION  ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo devel)
REVISION ?= $(shell git rev-parse HEAD 2>/dev/null)
LDFLAGS  := -X github.com/rook-mgr/mgr-webhook/version.Version=$(VERSION) -X github.com/rook-mgr/mgr-webhook/version.Revision=$(REVISION)

# REGISTRY: where the images are pushed and pulled from (make docker-build,
# make release).
REGISTRY      ?= ghcr.io/rook-mgr
IMG_WEBHOOK   ?= $(REGISTRY)/mgr-webhook:$(VERSION)
IMG_BOOTSTRAP ?= $(REGISTRY)/mgr-bootstrap:$(VERSION)

.PHONY: all build test compat unit fuzz mutation chaos e2e e2e-kind e2e-kind-lane e2e-node bench demo run manifests verify-manifests verify lint fmt vet binaries docker-build release clean help

all: build ## the same as build

help: ## list targets
	@grep -E '^[a-z0-9-]+:.*## ' $(MAKEFILE_LIST) | sed 's/:.*## /\t/'

build: ## build the binaries into bin/
	$(GO) build -ldflags '$(LDFLAGS)' -o $(BIN)/ ./cmd/...

binaries: ## build kube-apiserver, etcd, kube-controller-manager, kube-scheduler, kubectl, kwok into the cache
	./hack/build-binaries.sh

# The Ceph runs besides the host's own (Debian bookworm: Pacific 16.2, the
# oldest the policy admits), each from its root file system
# (hack/ceph-release.sh; hack/ceph-matrix.sh says what a run is). make test
# runs the oldest and the newest: Tentacle 20.2 (sid) for daemons and CLI, and
# Tentacle's CLI (the controller image's) against Pacific's daemons. make
# compat runs the releases between: Reef 18.2 (trixie).
CEPH_MATRIX   ?= sid host:sid
COMPAT_MATRIX ?= trixie

test: verify ## lint, manifest drift, then every test (unit, golden, real API server, real Ceph), and the Ceph-facing ones again on each run of CEPH_MATRIX; fails on any skip
	@./hack/install-deps.sh
	@assets="$$(./hack/build-binaries.sh | tail -n1)"; \
	echo "KUBEBUILDER_ASSETS=$$assets"; \
	{ echo "== run: Ceph $$(ceph --version | cut -d' ' -f3,5) (host): every package"; \
	  KUBEBUILDER_ASSETS="$$assets" $(GO) test $(TEST_FLAGS) -json ./... || true; \
	  KUBEBUILDER_ASSETS="$$assets" $(GO) -C test test $(TEST_FLAGS) -json ./... || true; \
	  KUBEBUILDER_ASSETS="$$assets" GO_TEST_FLAGS="$(TEST_FLAGS)" ./hack/ceph-matrix.sh $(CEPH_MATRIX); \
	} | $(GO) run ./hack/testsummary

# The oldest Kubernetes the project claims: make compat runs the suites that
# meet the API server (admission, installs, the chart, the webhook's outage)
# on its control plane, built from the Go module proxy like v1.37's.
COMPAT_K8S       ?= v1.30.14
# Packages of the test module (test/go.mod).
COMPAT_K8S_TESTS  = ./integration/admission/ ./integration/manifests/ ./ceph/helm/ ./integration/outage/ ./integration/policyapi/ ./integration/policycheck/

compat: ## the API-facing tests on Kubernetes COMPAT_K8S, and the Ceph-facing ones on each run of COMPAT_MATRIX, beside make test's
	@./hack/install-deps.sh
	@assets="$$(./hack/build-binaries.sh | tail -n1)"; \
	old="$$(K8S_VERSION=$(COMPAT_K8S) ./hack/build-binaries.sh | tail -n1)"; \
	{ KUBEBUILDER_ASSETS="$$assets" GO_TEST_FLAGS="$(TEST_FLAGS)" ./hack/ceph-matrix.sh $(COMPAT_MATRIX); \
	  echo "== run: Kubernetes $(COMPAT_K8S)"; \
	  KUBEBUILDER_ASSETS="$$old" $(GO) -C test test $(TEST_FLAGS) -json $(COMPAT_K8S_TESTS) || true; \
	} | $(GO) run ./hack/testsummary

# The product's packages whose tests need neither a control plane nor Ceph:
# the harness that starts them is left out, and the tests that talk to a
# live Ceph daemon are built out (-tags unit).
UNIT_PACKAGES ?= $(shell $(GO) list ./... | grep -v -e /internal/harness/cephtest -e /internal/harness/testenv -e /internal/harness/localcluster)

unit: ## the product's tests that need no control plane and no Ceph (-tags unit): a minute on a fresh checkout, no Debian packages
	$(GO) test $(TEST_FLAGS) -tags unit $(UNIT_PACKAGES)

FUZZTIME ?= 60s
fuzz: ## each fuzz target for FUZZTIME (60s); a crasher lands in testdata/fuzz and from then on runs in make test
	$(GO) test -run '^$$' -fuzz '^FuzzComplete$$' -fuzztime $(FUZZTIME) ./mutate/
	$(GO) test -run '^$$' -fuzz '^FuzzDecodeDeployment$$' -fuzztime $(FUZZTIME) ./webhook/
	$(GO) test -run '^$$' -fuzz '^FuzzHandlers$$' -fuzztime $(FUZZTIME) ./webhook/

chaos: ## the long fault runs: the Ceph mon stopped for CEPH_OUTAGE (60s) under the controller
	@./hack/install-deps.sh
	@assets="$$(./hack/build-binaries.sh | tail -n1)"; \
	CEPH_OUTAGE=$${CEPH_OUTAGE:-60s} KUBEBUILDER_ASSETS="$$assets" $(GO) -C test test -count=1 -v -run 'TestCephMonOutage' ./ceph/bootstrap/

mutation: ## mutation testing of mutate/, webhook/, certs/, inject/, bootstrap/, bootstrap/audit/, bootstrap/cluster/, bootstrap/roles/, bootstrap/mgrstatus/, bootstrap/ceph/ (gremlins' mutants as schemata, test/cmd/go-mutants; unit tests; fails under MUTATION_THRESHOLD (90) percent killed) and of the shipped YAML (test/cmd/manifest-mutants; fails on an unexplained survivor); MUTATION_PACKAGES picks
	./hack/mutation.sh

e2e: ## the e2e suite on a local control plane of real binaries + real Ceph (E2E_KUBECONFIG=... for another cluster)
	@assets="$$(./hack/build-binaries.sh | tail -n1)"; \
	KUBEBUILDER_ASSETS="$$assets" $(GO) -C test test $(TEST_FLAGS) -v ./e2e/

e2e-node: ## as root: a real kubelet + containerd node on this machine (hack/node.sh) joined to a local control plane, pods from images made without a registry, cleanup checked
	@./hack/install-deps.sh
	@assets="$$(WITH_NODE=1 ./hack/build-binaries.sh | tail -n1)"; \
	KUBEBUILDER_ASSETS="$$assets" $(GO) -C test test -count=1 -timeout=80m -tags node -v ./e2e/node/

e2e-kind: ## the e2e suite on a kind cluster of 1 control plane + 3 workers (needs Docker; made offline where nothing can be pulled: hack/e2e-kind.sh)
	./hack/e2e-kind.sh

# The tests of the e2e suite that need several real nodes: .ci/run's kind lane.
KIND_LANE_TESTS ?= TestNodeLoss|TestComponentNodeLoss|TestDrain|TestReleaseGuard|TestStandbyFirstRollout|TestKeyRotation

e2e-kind-lane: ## CI's kind lane: the kind cluster as make e2e-kind makes it, the release installed, a minimal mgr pair bootstrapped on real pods, the nodes of the active mgr, the controller's leader and a webhook replica lost, the active mgr's node drained, the release guard judging by what the controller read of the real cluster, standby-first rollouts of two and three mgrs, the rotation of a cluster's mgr keys (KIND_LANE_TESTS)
	E2E_GO_TEST_FLAGS="-run=$(KIND_LANE_TESTS)" ./hack/e2e-kind.sh

bench: ## micro-benchmarks, TLS load vs a no-op webhook, writes through the API server vs MutatingAdmissionPolicy, controller at scale, a fleet of clusters (BENCH=micro,load,apiserver,controller,fleet)
	./hack/bench.sh

demo: build ## the whole story on a local cluster (control plane, kwok, Ceph, webhook, controller); DEMO_FLAGS=--one-shot to exit
	@./hack/install-deps.sh
	$(GO) build -o $(BIN)/ ./internal/harness/cmd/mgr-demo
	@assets="$$(./hack/build-binaries.sh | tail -n1)"; \
	KUBEBUILDER_ASSETS="$$assets" $(BIN)/mgr-demo --bin-dir $(BIN) $(DEMO_FLAGS)

run: build ## run the webhook against the current kubeconfig (certs in ./tmp/certs)
	$(BIN)/mgr-webhook --cert-dir $(CURDIR)/tmp/certs $(RUN_FLAGS)

manifests: ## regenerate RBAC and webhook configurations from the code's markers (controller-gen)
	./hack/gen-manifests.sh

verify-manifests: ## fail when the generated manifests drift from the markers
	./hack/gen-manifests.sh verify

verify: lint verify-manifests ## everything checked before the tests

release: ## render dist/install-self-signed.yaml and dist/install-cert-manager.yaml with the images of VERSION in REGISTRY, the kubectl plugin's archives (linux, darwin; amd64, arm64) and its krew manifest, and dist/SHA256SUMS over all
	VERSION=$(VERSION) REGISTRY=$(REGISTRY) ./hack/release.sh
	VERSION=$(VERSION) ./hack/dist-plugin.sh
	cd dist && sha256sum install-self-signed.yaml install-cert-manager.yaml kubectl-mgr_$(VERSION)_*.tar.gz mgr.krew.yaml > SHA256SUMS

docker-build: ## build both images, tagged IMG_WEBHOOK and IMG_BOOTSTRAP (REGISTRY/mgr-webhook:VERSION, ...; needs a Docker engine that can pull the Dockerfile's base images)
	docker build --build-arg VERSION=$(VERSION) --build-arg REVISION=$(REVISION) --target webhook -t $(IMG_WEBHOOK) .
	docker build --build-arg VERSION=$(VERSION) --build-arg REVISION=$(REVISION) --target bootstrap -t $(IMG_BOOTSTRAP) .

fmt: ## gofmt the tree
	gofmt -w $$(git ls-files '*.go')

vet: ## go vet both modules (the product's and test/'s)
	$(GO) vet ./...
	$(GO) -C test vet ./...
	$(GO) -C test vet -tags "node kind" ./...

lint: vet ## gofmt check, go vet, go.mod and test/go.mod tidy, the license header on every Go file, actionlint on the workflows, shellcheck on the scripts
	@./hack/install-deps.sh lint
	@out="$$(gofmt -l $$(git ls-files '*.go'))"; if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	@out="$$(git ls-files '*.go' | grep -v /testdata/ | xargs grep -L 'SPDX-License-Identifier: Apache-2.0')"; \
	if [ -n "$$out" ]; then echo "license header missing (// Copyright 2026 The mgr-webhook Authors. / // SPDX-License-Identifier: Apache-2.0):"; echo "$$out"; exit 1; fi
	$(GO) mod tidy -diff
	$(GO) -C test mod tidy -diff
	$(GO) -C test tool actionlint $(CURDIR)/.github/workflows/*.yaml
	shellcheck hack/*.sh hack/kind/docker test/ceph/kind/*.sh .ci/run

clean: ## remove bin/, tmp/ and dist/
	rm -rf $(BIN) tmp dist
